"""Number words as a translation task: tokens, vocabularies and padded id batches.

Shape letters: ``B`` batch, ``T_x`` source length, ``T_y`` target length (the
longest in the batch, ``<eos>`` included).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import torch
from jaxtyping import Bool, Int
from torch import Tensor

from seqbook._checks import check_choice, check_int, check_positive_int, check_sequence
from seqbook.data import (
    NumberPair,
    Splits,
    Vocab,
    number_translation,
    pad_batch,
    spell_number,
    tokenize,
)
from seqbook.data.numbers import LANGUAGES, _check_counts, _check_split_sizes
from seqbook.seq2seq.pieces import PieceTokenizer, join_words
from seqbook.utils import seeded_generator

__all__ = ["TranslationBatch", "TranslationTask", "number_translation_task"]


def _check_pairs(name: str, pairs: Any) -> Sequence[NumberPair]:
    """``pairs`` if it is a non-empty sequence of :class:`~seqbook.data.NumberPair`
    (the message of an empty one is the experiments' too)."""
    check_sequence(name, pairs, what="a list of NumberPair", of=NumberPair)
    if not pairs:
        raise ValueError(f"{name} must contain at least one pair, got none")
    return pairs


#: The kinds of target tokens of a :class:`TranslationTask`.
TARGET_TOKENS = ("pieces", "word", "char")


class TranslationBatch(NamedTuple):
    """Padded ids of a batch of pairs, ready for teacher forcing.

    ``tgt_in`` is the target shifted right behind ``<bos>`` (the decoder's inputs),
    ``tgt_out`` the target followed by ``<eos>`` (what it must predict).
    """

    src: Int[Tensor, "B T_x"]  # source ids, <pad> = 0
    src_lengths: Int[Tensor, " B"]
    tgt_in: Int[Tensor, "B T_y"]  # <bos> y_1 ... y_n
    tgt_out: Int[Tensor, "B T_y"]  # y_1 ... y_n <eos>
    tgt_mask: Bool[Tensor, "B T_y"]  # True at real target positions


@dataclass
class TranslationTask:
    """Data, tokenizers and vocabularies of one language pair.

    Build it with :func:`number_translation_task`. The source is cut into words
    (hyphens and commas are tokens); the target into ``target_tokens``: learned
    ``"pieces"`` (:class:`PieceTokenizer`), ``"word"`` or ``"char"``. The pieces start
    from the target-language words for the numbers English writes as one word
    (zero to nineteen and the tens) and grow with :meth:`PieceTokenizer.learn` on the
    training targets alone.
    """

    splits: Splits[NumberPair]
    tgt: str  # the target language, a num2words code
    target_tokens: str  # one of TARGET_TOKENS
    src_vocab: Vocab = field(init=False)
    tgt_vocab: Vocab = field(init=False)
    pieces: PieceTokenizer | None = None

    def __post_init__(self) -> None:
        check_choice("tgt", self.tgt, LANGUAGES)
        check_choice("target_tokens", self.target_tokens, TARGET_TOKENS)
        train = self.splits.train
        if self.target_tokens == "pieces" and self.pieces is None:
            # seed with the words for the numbers that English writes as one word
            # (zero ... nineteen, twenty, thirty, ..., ninety); learn the rest from
            # the training targets
            atoms = [n for n in range(100) if len(self.source_tokens(spell_number(n, "en"))) == 1]
            seeds = [spell_number(n, self.tgt) for n in atoms]
            self.pieces = PieceTokenizer.learn([p.target for p in train], seeds)
        self.src_vocab = Vocab(self.source_tokens(p.source) for p in train)
        self.tgt_vocab = Vocab(self.target_tokens_of(p.target) for p in train)
        self._cache: dict[tuple[str, str], tuple[list[int], list[int]]] = {}

    @staticmethod
    def source_tokens(text: str) -> list[str]:
        """English words, e.g. ``['thirty', '-', 'four']``."""
        return tokenize(text, "word")

    def target_tokens_of(self, text: str) -> list[str]:
        """The target text cut into the task's target tokens."""
        if self.target_tokens == "pieces":
            assert self.pieces is not None
            return self.pieces.tokenize(text)
        return tokenize(text, self.target_tokens)

    def join_target(self, tokens: Sequence[str]) -> str:
        """Target tokens back to text (the exact inverse of :meth:`target_tokens_of`)."""
        if self.target_tokens == "word":
            return join_words(tokens)
        return "".join(tokens)

    def encode(self, pair: NumberPair) -> tuple[list[int], list[int]]:
        """Source ids (ending in ``<eos>``) and target ids (without specials)."""
        key = (pair.source, pair.target)
        if key not in self._cache:
            src = self.src_vocab.encode(self.source_tokens(pair.source), add_eos=True)
            tgt = self.tgt_vocab.encode(self.target_tokens_of(pair.target))
            self._cache[key] = (src, tgt)
        return self._cache[key]

    def batch(self, pairs: Sequence[NumberPair]) -> TranslationBatch:
        """Pad the ids of ``pairs`` into one :class:`TranslationBatch`.

        Example:
            >>> task = number_translation_task("de", max_number=99, num_valid=5,
            ...                                num_test=5)
            >>> batch = task.batch(task.splits.train[:4])
            >>> tuple(batch.src.shape[:1]), bool((batch.tgt_in[:, 0] == 1).all())
            ((4,), True)
        """
        _check_pairs("pairs", pairs)
        encoded = [self.encode(p) for p in pairs]
        src, src_lengths, _ = pad_batch([s for s, _ in encoded])
        bos, eos = self.tgt_vocab.bos_id, self.tgt_vocab.eos_id
        tgt_in, _, _ = pad_batch([[bos, *t] for _, t in encoded])
        tgt_out, _, tgt_mask = pad_batch([[*t, eos] for _, t in encoded])
        return TranslationBatch(src, src_lengths, tgt_in, tgt_out, tgt_mask)

    def batches(
        self,
        pairs: Sequence[NumberPair],
        batch_size: int,
        shuffle: bool = False,
        seed: int = 0,
    ) -> list[TranslationBatch]:
        """Cut ``pairs`` into batches, optionally shuffled with ``seed``.

        All pairs are padded once; a batch is a selection of rows, cut to its own
        longest source and target.
        """
        check_positive_int("batch_size", batch_size), check_int("seed", seed, min_value=0)
        whole = self.batch(pairs)
        tgt_lengths = whole.tgt_mask.sum(1)  # (B,)
        if shuffle:
            order = torch.randperm(len(pairs), generator=seeded_generator(seed))
        else:
            order = torch.arange(len(pairs))
        batches = []
        for idx in order.split(batch_size):
            T_x, T_y = int(whole.src_lengths[idx].max()), int(tgt_lengths[idx].max())
            batches.append(
                TranslationBatch(
                    whole.src[idx, :T_x],
                    whole.src_lengths[idx],
                    whole.tgt_in[idx, :T_y],
                    whole.tgt_out[idx, :T_y],
                    whole.tgt_mask[idx, :T_y],
                )
            )
        return batches

    def epochs(
        self, pairs: Sequence[NumberPair], batch_size: int, seed: int = 0
    ) -> Callable[[], list[TranslationBatch]]:
        """A function that returns freshly shuffled batches at each call (one epoch),
        as :func:`seqbook.train.fit` accepts; the shuffles are seeded."""
        calls = iter(range(seed, seed + 10**9))
        return lambda: self.batches(pairs, batch_size, shuffle=True, seed=next(calls))


def _balanced_numbers(max_number: int, count: int, seed: int) -> list[int]:
    """``count`` distinct numbers in [0, max_number] whose digit counts are equally
    common (as far as there are numbers with that many digits), in seeded order."""
    rng = random.Random(seed)
    ranges = {
        d: (0 if d == 1 else 10 ** (d - 1), min(10**d - 1, max_number))
        for d in range(1, len(str(max_number)) + 1)
    }
    taken = dict.fromkeys(ranges, 0)
    chosen: set[int] = set()
    numbers: list[int] = []
    while len(numbers) < count:
        d = rng.choice([d for d, (lo, hi) in ranges.items() if taken[d] < hi - lo + 1])
        n = rng.randint(*ranges[d])
        if n not in chosen:
            chosen.add(n)
            numbers.append(n)
            taken[d] += 1
    return numbers


def number_translation_task(
    tgt: str = "de",
    target_tokens: str | None = None,
    max_number: int = 9999,
    num_valid: int = 500,
    num_test: int = 500,
    num_train: int | None = None,
    seed: int = 0,
    balanced: bool = False,
) -> TranslationTask:
    """English number words to ``tgt`` number words, split disjointly by number.

    Args:
        tgt: the target language (a num2words code: ``"de"``, ``"fr"``, ...).
        target_tokens: ``"pieces"``, ``"word"`` or ``"char"``; by default pieces for
            German (one compound word per number) and words for other languages.
        max_number, num_valid, num_test, num_train, seed: as in
            :func:`seqbook.data.number_translation`.
        balanced: draw the numbers so that every digit count (1 to that of
            ``max_number``) is about equally common, instead of uniformly (where
            almost all numbers have as many digits as ``max_number``); short and long
            sentences are then both well represented. Needs ``num_train``.

    Returns:
        A :class:`TranslationTask`.

    Example:
        >>> task = number_translation_task("de", max_number=999, num_valid=50,
        ...                                num_test=50)
        >>> task.target_tokens_of("vierunddreißig")
        ['vier', 'und', 'dreißig']
    """
    check_choice("tgt", tgt, LANGUAGES)
    if target_tokens is None:
        target_tokens = "pieces" if tgt == "de" else "word"
    check_choice("target_tokens", target_tokens, TARGET_TOKENS)
    if not balanced:
        splits = number_translation("en", tgt, max_number, num_valid, num_test, num_train, seed)
        return TranslationTask(splits, tgt, target_tokens)
    if num_train is None:
        raise ValueError("balanced=True needs num_train (the numbers are drawn, not all used)")
    _check_counts(max_number, num_valid, num_test, seed)
    _check_split_sizes(max_number, num_valid, num_test, num_train)
    numbers = _balanced_numbers(max_number, num_valid + num_test + num_train, seed)

    def pairs(chosen: list[int]) -> list[NumberPair]:
        return [NumberPair(n, spell_number(n, "en"), spell_number(n, tgt)) for n in chosen]

    valid, test = numbers[:num_valid], numbers[num_valid : num_valid + num_test]
    train = numbers[num_valid + num_test :]
    return TranslationTask(Splits(pairs(train), pairs(valid), pairs(test)), tgt, target_tokens)
