import math
import random
from collections import Counter

import pytest
import sacrebleu
from sacrebleu.metrics import BLEU

from seqbook.metrics import (
    BLEUStatistics,
    bleu_d2l,
    bleu_statistics,
    corpus_bleu,
    ngram_counts,
    sentence_bleu,
)

SMOOTHINGS = [
    ("none", None), ("exp", None), ("floor", None), ("floor", 0.3), ("add-k", None), ("add-k", 2)
]


def sacre(
    hypotheses, references, max_order=4, smooth="none", smooth_value=None, effective_order=False
):
    """sacrebleu's score for token lists (references[i] = the references of sentence i)."""
    streams = max(len(refs) for refs in references)
    ref_streams = [
        [" ".join(refs[r]) if r < len(refs) else None for refs in references]
        for r in range(streams)
    ]
    metric = BLEU(
        tokenize="none",
        smooth_method=smooth,
        smooth_value=smooth_value,
        max_ngram_order=max_order,
        effective_order=effective_order,
    )
    return metric.corpus_score([" ".join(h) for h in hypotheses], ref_streams).score


def random_corpus(rng, n_sentences, vocab_size, max_len, max_refs, p_empty=0.1):
    words = [f"w{i}" for i in range(vocab_size)]

    def sentence(base=None):
        if rng.random() < p_empty:
            return []
        if base is None or rng.random() < 0.3:
            return [rng.choice(words) for _ in range(rng.randint(1, max_len))]
        # a noisy copy, so that there are matches of every order
        out = [t if rng.random() < 0.7 else rng.choice(words) for t in base]
        return out[: max(0, len(out) + rng.randint(-3, 2))]

    references = []
    hypotheses = []
    for _ in range(n_sentences):
        first = sentence()
        refs = [first] + [sentence(first) for _ in range(rng.randint(0, max_refs - 1))]
        references.append(refs)
        hypotheses.append(sentence(first))
    return hypotheses, references


@pytest.mark.parametrize("seed", range(12))
def test_corpus_bleu_equals_sacrebleu_on_random_corpora(seed):
    rng = random.Random(seed)
    hypotheses, references = random_corpus(
        rng, n_sentences=rng.choice([1, 2, 5, 40]), vocab_size=rng.choice([3, 8, 30]),
        max_len=rng.choice([3, 8, 20]), max_refs=rng.choice([1, 2, 4]),
    )
    for max_order in (1, 2, 4, 6):
        for smooth, value in SMOOTHINGS:
            for effective in (False, True):
                ours = corpus_bleu(hypotheses, references, max_order, smooth, value, effective)
                theirs = sacre(hypotheses, references, max_order, smooth, value, effective)
                assert 0.0 <= ours <= 1.0
                assert abs(100 * ours - theirs) < 1e-9, (max_order, smooth, value, effective)


def test_edge_cases_match_sacrebleu():
    cases = [
        ([[]], [[["a", "b"]]]),  # empty hypothesis
        ([[], []], [[["a"]], [["b"]]]),  # all hypotheses empty
        ([["a", "b"]], [[[]]]),  # empty reference
        ([["a", "b"]], [[[], ["a", "b", "c"]]]),  # an empty and a real reference
        ([["a"]], [[["a"]]]),  # too short for 2-grams: BLEU-4 without smoothing is 0
        ([["x", "y", "z"]], [[["a", "b", "c"]]]),  # no match at all
        ([["a", "b", "c", "d"]], [[["a", "b", "c", "d"]]]),  # perfect
        ([["a", "a", "a", "a"]], [[["a", "b"], ["a", "a", "c"]]]),  # clipping by max over refs
        ([["a", "b", "c"]], [[["a", "b", "c", "d", "e"], ["a", "b"]]]),  # closest length tie
    ]
    for hypotheses, references in cases:
        for smooth, value in SMOOTHINGS:
            for effective in (False, True):
                ours = corpus_bleu(hypotheses, references, 4, smooth, value, effective)
                theirs = sacre(hypotheses, references, 4, smooth, value, effective)
                assert abs(100 * ours - theirs) < 1e-9, (hypotheses, references, smooth, effective)


def test_sentence_bleu_equals_sacrebleu_sentence_bleu():
    rng = random.Random(1)
    hypotheses, references = random_corpus(rng, 30, 10, 12, 3, p_empty=0.0)
    for hyp, refs in zip(hypotheses, references):
        theirs = sacrebleu.sentence_bleu(
            " ".join(hyp), [" ".join(r) for r in refs], tokenize="none"
        ).score  # sacrebleu's defaults: exp smoothing, effective order
        ours = sentence_bleu(hyp, refs, smooth="exp", effective_order=True)
        assert abs(100 * ours - theirs) < 1e-9
        assert sentence_bleu(hyp, refs) == corpus_bleu([hyp], [refs])


def naive_statistics(hypotheses, references, max_order):
    """The textbook definition with Counters, one sentence at a time."""
    correct, total = [0] * max_order, [0] * max_order
    hyp_len = ref_len = 0
    for hyp, refs in zip(hypotheses, references):
        hyp_len += len(hyp)
        ref_len += min((abs(len(r) - len(hyp)), len(r)) for r in refs)[1]
        for n in range(1, max_order + 1):
            counts = Counter(tuple(hyp[i : i + n]) for i in range(len(hyp) - n + 1))
            best = Counter()
            for r in refs:
                best |= Counter(tuple(r[i : i + n]) for i in range(len(r) - n + 1))
            total[n - 1] += sum(counts.values())
            correct[n - 1] += sum(min(c, best[g]) for g, c in counts.items())
    return BLEUStatistics(tuple(correct), tuple(total), hyp_len, ref_len)


@pytest.mark.parametrize("seed", range(5))
def test_vectorised_statistics_equal_the_definition(seed):
    rng = random.Random(100 + seed)
    hypotheses, references = random_corpus(rng, 50, 6, 15, 3)
    for max_order in (1, 3, 5):
        assert bleu_statistics(hypotheses, references, max_order) == naive_statistics(
            hypotheses, references, max_order
        )


def test_tokens_may_be_any_hashable_and_tuples_do_not_collide_with_ngrams():
    hyp = [("a", "b"), "a", "b"]
    refs = [["a", "b", ("a", "b")]]
    stats = bleu_statistics([hyp], [refs], 2)
    assert stats == naive_statistics([hyp], [refs], 2)
    ids = bleu_statistics([[1, 2, 3]], [[[1, 2, 4]]], 2)
    assert ids.correct == (2, 1)


def test_statistics_add_up_and_corpus_is_not_the_mean_of_sentences():
    hypotheses = [["a", "b", "c", "d"], ["x"]]
    references = [[["a", "b", "c", "d"]], [["y", "z"]]]
    whole = bleu_statistics(hypotheses, references)
    parts = bleu_statistics(hypotheses[:1], references[:1]) + bleu_statistics(
        hypotheses[1:], references[1:]
    )
    assert whole == parts
    mean_of_sentences = sum(sentence_bleu(h, r) for h, r in zip(hypotheses, references)) / 2
    assert mean_of_sentences == 0.5
    assert corpus_bleu(hypotheses, references) != mean_of_sentences


def test_brevity_penalty_and_precisions():
    stats = bleu_statistics([["a", "b", "b", "c", "d"]], [[list("abcdef")]], 3)
    assert stats.precisions == [4 / 5, 3 / 4, 1 / 3]
    assert math.isclose(stats.brevity_penalty, math.exp(1 - 6 / 5))
    assert bleu_statistics([[]], [[["a"]]]).brevity_penalty == 0.0
    assert bleu_statistics([["a", "b"]], [[["a"]]]).brevity_penalty == 1.0


def test_d2l_variant_reproduces_the_slides():
    pred, label = "A B B C D".split(), "A B C D E F".split()
    expected = math.exp(-0.2) * (4 / 5) ** 0.5 * (3 / 4) ** 0.25 * (1 / 3) ** 0.125
    assert math.isclose(bleu_d2l(pred, label, 3), expected)
    assert abs(bleu_d2l(pred, label, 3) - 0.5941) < 1e-4
    assert bleu_d2l(label, label, 4) == 1.0
    assert bleu_d2l([], label, 2) == 0.0
    # orders longer than the prediction are skipped, as in D2L's code
    assert bleu_d2l(["A"], ["A"], 4) == 1.0
    # longer predictions are not penalised
    assert math.isclose(bleu_d2l(label + ["G"], label, 1), (6 / 7) ** 0.5)


def test_ngram_counts():
    assert ngram_counts(["a", "b", "a", "b"], 2) == Counter({("a", "b"): 2, ("b", "a"): 1})
    assert ngram_counts(["a"], 2) == Counter()


def test_bad_input_gives_clear_errors():
    with pytest.raises(ValueError, match=r"references must hold N = 2 items \(as in hypotheses\)"):
        corpus_bleu([["a"], ["b"]], [[["a"]]])
    with pytest.raises(ValueError, match=r"references\[0\] must hold at least one item"):
        corpus_bleu([["a"]], [[]])
    with pytest.raises(ValueError, match="hypotheses must hold at least one item"):
        corpus_bleu([], [])
    with pytest.raises(TypeError, match="tokenize it first"):
        corpus_bleu(["a b c"], [[["a", "b"]]])
    with pytest.raises(TypeError, match="wrap"):
        corpus_bleu([["a", "b"]], [["a", "b"]])
    with pytest.raises(ValueError, match="smooth"):
        corpus_bleu([["a"]], [[["a"]]], smooth="laplace")
    with pytest.raises(ValueError, match="max_order"):
        corpus_bleu([["a"]], [[["a"]]], max_order=0)
    with pytest.raises(ValueError, match="smooth_value"):
        corpus_bleu([["a"]], [[["a"]]], smooth="floor", smooth_value=-1.0)
    with pytest.raises(TypeError, match="pred_tokens"):
        bleu_d2l("A B", ["A"], 2)
    with pytest.raises(ValueError, match="k must be"):
        bleu_d2l(["A"], ["A"], 0)
    with pytest.raises(TypeError, match="references"):
        sentence_bleu(["a"], "a")


def test_unhashable_tokens_are_named():
    # a token that is a tuple holding a list passes the type (a tuple is Hashable) and
    # fails when counted: the body names it
    bad = ("b", ["c"])
    with pytest.raises(
        TypeError, match=r"hypotheses\[1\] must hold hashable tokens .* \('b', \['c'\]\) \(tuple\)"
    ):
        corpus_bleu([["a"], ["a", bad]], [[["a"]], [["a", "b"]]])
    with pytest.raises(TypeError, match=r"references\[0\]\[1\] must hold hashable tokens"):
        corpus_bleu([["a", "b"]], [[["a", "b"], ["a", bad]]])
    with pytest.raises(TypeError, match="label_tokens must hold hashable tokens"):
        bleu_d2l(["a"], ["a", bad], 2)
    # a list token: the type check (which samples the items of a list) or the body names
    # the argument
    with pytest.raises(TypeError, match=r"\bhypotheses\b"):
        corpus_bleu([["a"], ["a", ["b"]]], [[["a"]], [["a", "b"]]])
    with pytest.raises(TypeError, match=r"\breferences\b"):
        corpus_bleu([["a", "b"]], [[["a", "b"], ["a", {}]]])
    with pytest.raises(TypeError, match=r"\blabel_tokens\b"):
        bleu_d2l(["a"], ["a", ["b"]], 2)
    with pytest.raises(TypeError, match=r"^effective_order must be bool, got 'yes'"):
        corpus_bleu([["a"]], [[["a"]]], effective_order="yes")
