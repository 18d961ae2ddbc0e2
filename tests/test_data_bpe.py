"""Byte-pair encoding: merges by hand (Sennrich et al.'s example), a brute-force
re-count of every merge, segmentations that join back to the word, bad input."""

from collections import Counter

import pytest

from seqbook.data import apply_bpe, learn_bpe

WORDS = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3


def test_merges_by_hand():
    # pairs: e s 9, s t 9 -> ('e', 's') (tie: smaller pair); es t 9; then l o 7 and
    # o w 7 -> ('l', 'o'); lo w 7; then e w 6, n e 6, w est 6 -> ('e', 'w')
    assert learn_bpe(WORDS, 5) == [("e", "s"), ("es", "t"), ("l", "o"), ("lo", "w"), ("e", "w")]


def test_every_merge_is_the_most_frequent_pair_brute_force():
    words = ["abracadabra", "banana", "bandana", "cabana", "abba"] * 3 + ["nab"]
    merges = learn_bpe(words, 12)
    segmented = [list(w) for w in words]
    for merge in merges:
        counts = Counter(p for s in segmented for p in zip(s, s[1:]))
        top = max(counts.values())
        assert counts[merge] == top and merge == min(p for p, c in counts.items() if c == top)
        segmented = [apply_bpe("".join(s), [*_done(merges, merge)]) for s in segmented]
    # applying all merges to a training word gives the learner's segmentation
    assert [apply_bpe(w, merges) for w in words] == segmented


def _done(merges, upto):
    return merges[: merges.index(upto) + 1]


def test_stops_when_nothing_is_left_to_merge():
    assert learn_bpe(["ab", "ab"], 10) == [("a", "b")]
    assert learn_bpe(["a"], 3) == []
    assert learn_bpe(WORDS, 0) == []


@pytest.mark.parametrize("word", ["lowest", "newer", "x", "widest", "zzz"])
def test_segmentation_joins_back_to_the_word(word):
    tokens = apply_bpe(word, learn_bpe(WORDS, 8))
    assert "".join(tokens) == word and all(tokens)


def test_overlapping_pairs_merge_left_to_right():
    assert apply_bpe("aaa", [("a", "a")]) == ["aa", "a"]
    assert learn_bpe(["aaa"], 1) == [("a", "a")]


@pytest.mark.parametrize(
    ("call", "error", "words"),
    [
        (lambda: learn_bpe("low", 2), TypeError, "words"),
        (lambda: learn_bpe(["low", ""], 2), TypeError, r"words\[1\]"),
        # the type check (which samples one item of a list) or the body names it
        (lambda: learn_bpe(["low", 3], 2), TypeError, r"\bwords\b"),
        (lambda: learn_bpe(["low"], -1), ValueError, "num_merges"),
        (lambda: learn_bpe(["low"], 1.5), TypeError, "num_merges"),
        (lambda: apply_bpe("", []), TypeError, "word"),
        (lambda: apply_bpe(["l", "o"], []), TypeError, "word"),
        (lambda: apply_bpe("low", "lo"), TypeError, "merges"),
        (lambda: apply_bpe("low", [("l", "o", "w")]), TypeError, r"^merges must .*index 0 item"),
    ],
)
def test_bad_input_names_the_argument(call, error, words):
    with pytest.raises(error, match=words):
        call()
