import pytest
import torch

from seqbook.data import spell_number, tokenize
from seqbook.seq2seq import PieceTokenizer, join_words, number_translation_task


@pytest.fixture(scope="module")
def task_de():
    return number_translation_task("de")


def test_pieces_are_learned_from_the_training_targets(task_de):
    pieces = set(task_de.pieces.pieces)
    # the joins of German compounds, learned (not given)
    assert {"und", "hundert", "tausend", "ein"} <= pieces
    assert task_de.target_tokens_of("vierunddreißig") == ["vier", "und", "dreißig"]
    assert task_de.target_tokens_of("eintausendzweihundertvierunddreißig") == [
        "ein", "tausend", "zwei", "hundert", "vier", "und", "dreißig",
    ]


def test_german_pieces_round_trip_on_every_number(task_de):
    for n in range(10_000):
        text = spell_number(n, "de")
        tokens = task_de.target_tokens_of(text)
        assert task_de.join_target(tokens) == text
        assert all(t in task_de.pieces.pieces for t in tokens), (n, tokens)  # no fallback


def test_french_words_round_trip_on_every_number():
    for n in range(10_000):
        text = spell_number(n, "fr")
        assert join_words(tokenize(text, "word")) == text


def test_piece_tokenizer_falls_back_to_characters_and_learns():
    tok = PieceTokenizer(["ab", "abc", "c"])
    assert tok.tokenize("abcxab") == ["abc", "x", "ab"]
    assert tok.unexplained("xyabz") == ["xy", "z"]
    learned = PieceTokenizer.learn(["xyab", "xyc", "zz"], ["ab", "c"])
    assert "xy" in learned.pieces and "zz" not in learned.pieces  # zz occurs once
    with pytest.raises(ValueError, match="non-empty"):
        PieceTokenizer(["a", ""])
    with pytest.raises(TypeError, match="text"):
        tok.tokenize(["a"])
    with pytest.raises(TypeError, match="pieces must be an iterable of str"):
        PieceTokenizer("abc")


def test_batches_shift_the_target_and_cover_every_pair_once():
    task = number_translation_task("fr", max_number=199, num_valid=10, num_test=10)
    assert task.target_tokens == "word"
    pairs = task.splits.train
    batches = task.batches(pairs, 32, shuffle=True, seed=3)
    assert sum(len(b.src) for b in batches) == len(pairs)
    for b in batches:
        assert (b.tgt_in[:, 0] == task.tgt_vocab.bos_id).all()
        lengths = b.tgt_mask.sum(1)
        # tgt_out ends with <eos>; tgt_in is tgt_out shifted right behind <bos>
        last = b.tgt_out[torch.arange(len(lengths)), lengths - 1]
        assert (last == task.tgt_vocab.eos_id).all()
        assert torch.equal(b.tgt_in[:, 1:][b.tgt_mask[:, 1:]], b.tgt_out[b.tgt_mask][
            (b.tgt_out[b.tgt_mask] != task.tgt_vocab.eos_id)
        ])
        assert b.src.shape[1] == int(b.src_lengths.max())
    again = task.batches(pairs, 32, shuffle=True, seed=3)
    assert all(torch.equal(x.src, y.src) for x, y in zip(batches, again))
    one_epoch, next_epoch = task.epochs(pairs, 32)(), None
    assert len(one_epoch) == len(batches)
    with pytest.raises(ValueError, match="batch_size"):
        task.batches(pairs, 0)
    with pytest.raises(ValueError, match="at least one"):
        task.batch([])
    with pytest.raises(ValueError, match="target_tokens"):
        number_translation_task("de", target_tokens="bpe", max_number=20, num_valid=2, num_test=2)
    assert next_epoch is None


def test_balanced_numbers_are_disjoint_and_spread_over_digit_counts():
    task = number_translation_task("de", max_number=999_999, num_train=600, num_valid=60,
                                   num_test=60, balanced=True)
    numbers = [{p.number for p in split} for split in task.splits]
    assert [len(n) for n in numbers] == [600, 60, 60]
    assert not (numbers[0] & numbers[1] or numbers[0] & numbers[2] or numbers[1] & numbers[2])
    digits = [len(str(n)) for n in numbers[0]]
    for d in (3, 4, 5, 6):
        assert 0.1 < digits.count(d) / len(digits) < 0.3
    assert all(p.target == spell_number(p.number, "de") for p in task.splits.test)
    again = number_translation_task("de", max_number=999_999, num_train=600, num_valid=60,
                                    num_test=60, balanced=True)
    assert again.splits == task.splits
    with pytest.raises(ValueError, match="num_train"):
        number_translation_task("de", balanced=True)
    with pytest.raises(
        ValueError, match=r"num_train \+ num_valid \+ num_test must be <= max_number \+ 1 = 51"
    ):
        number_translation_task("de", max_number=50, num_train=100, balanced=True)
