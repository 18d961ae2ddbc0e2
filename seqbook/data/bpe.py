r"""Byte-pair encoding: subword tokens learned by merging frequent pairs of symbols.

Characters give a small vocabulary and long sequences, words a huge vocabulary and short
ones. Byte-pair encoding (Gage, 1994; Sennrich, Haddow and Birch, 2016, for translation)
lies between: it starts from characters and learns, one at a time, the merges of the
most frequent adjacent pair of symbols into a new symbol, so that frequent pieces of
words ("-nen", "-ová") become single tokens and rare words are still spelled out.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Any

from seqbook._checks import check_int, check_sequence

__all__ = ["learn_bpe", "apply_bpe"]


def _check_word(name: str, word: object) -> str:
    if not isinstance(word, str) or not word:
        raise TypeError(f"{name} must be a non-empty str, got {word!r}")
    return word


def _check_words(name: str, words: Any) -> list[str]:
    check_sequence(name, words, what="a list of str words", iterable=True)
    return [_check_word(f"{name}[{i}]", word) for i, word in enumerate(words)]


def _check_merges(name: str, merges: object) -> list[tuple[str, str]]:
    merges = list(check_sequence(name, merges, what="a list of (str, str) pairs", iterable=True))
    for i, pair in enumerate(merges):
        if not (
            isinstance(pair, tuple) and len(pair) == 2 and all(isinstance(p, str) for p in pair)
        ):
            raise TypeError(f"{name}[{i}] must be a (str, str) pair, got {pair!r}")
    return merges


def _merge(symbols: list[str], pair: tuple[str, str]) -> list[str]:
    """Replace every occurrence of ``pair``, left to right, by its concatenation."""
    merged, i = [], 0
    while i < len(symbols):
        if i + 1 < len(symbols) and (symbols[i], symbols[i + 1]) == pair:
            merged.append(symbols[i] + symbols[i + 1])
            i += 2
        else:
            merged.append(symbols[i])
            i += 1
    return merged


def learn_bpe(words: Iterable[str], num_merges: int) -> list[tuple[str, str]]:
    r"""Learn up to ``num_merges`` byte-pair merges from a list of words.

    Each word starts as its characters. At every step the adjacent pair of symbols that
    occurs most often, counted over all words with their repetitions,

    .. math::
        (a, b)^\star = \arg\max_{(a, b)} \sum_{w} c(w)\, n_{ab}(w),

    is merged into one symbol everywhere (ties go to the smallest pair in Python's
    order, so the result is deterministic). Learning stops early when no word has two
    symbols left.

    Args:
        words: the training words (non-empty strings; repeat a word to weight it).
        num_merges: the number of merges to learn (>= 0).

    Returns:
        The merges ``[(a, b), ...]`` in the order they were learned.

    Example:
        >>> words = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
        >>> learn_bpe(words, num_merges=3)       # e s: 9 times, es t: 9, l o: 7
        [('e', 's'), ('es', 't'), ('l', 'o')]
    """
    words = _check_words("words", words)  # non-empty str
    check_int("num_merges", num_merges, min_value=0)
    vocab = Counter(tuple(word) for word in words)  # symbols -> count
    merges: list[tuple[str, str]] = []
    for _ in range(num_merges):
        pairs: Counter[tuple[str, str]] = Counter()
        for symbols, count in vocab.items():
            for pair in zip(symbols, symbols[1:]):
                pairs[pair] += count
        if not pairs:
            break
        best = min(pairs, key=lambda pair: (-pairs[pair], pair))  # most frequent
        merges.append(best)
        merged: Counter[tuple[str, ...]] = Counter()
        for symbols, count in vocab.items():
            merged[tuple(_merge(list(symbols), best))] += count
        vocab = merged
    return merges


def apply_bpe(word: str, merges: Sequence[tuple[str, str]]) -> list[str]:
    """Split ``word`` into subword tokens by applying ``merges`` in their learned order.

    Args:
        word: a non-empty str.
        merges: pairs of str from :func:`learn_bpe`.

    Returns:
        The tokens; joined, they give ``word`` back.

    Example:
        >>> words = ["low"] * 5 + ["lower"] * 2 + ["newest"] * 6 + ["widest"] * 3
        >>> apply_bpe("lowest", learn_bpe(words, num_merges=3))
        ['lo', 'w', 'est']
    """
    _check_word("word", word), _check_merges("merges", merges)
    symbols = list(word)
    for pair in merges:
        symbols = _merge(symbols, pair)
    return symbols
