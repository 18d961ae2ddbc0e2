"""Clipped n-gram matches of a whole corpus at once, vectorised with NumPy.

BLEU needs, for every order n, the number of hypothesis n-grams and how many of them a
reference "covers" (each count clipped at the largest count in any one reference). A
dictionary of n-gram tuples per sentence, as in the textbook definition, costs a Python
object per n-gram. Here every token becomes an integer id, every n-gram an integer
code (built order by order from the (n-1)-gram code and the next id, renumbered to stay
small), and counting and clipping become sorts over one array for the whole corpus.

Shape letters: ``L`` tokens of the whole corpus (hypotheses and references together).
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from itertools import chain

import numpy as np

__all__ = ["corpus_ngram_statistics"]


def _unique_counts(keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct keys and how often each occurs."""
    if keys.size == 0:
        return keys, keys
    keys = np.sort(keys)
    starts = np.flatnonzero(np.r_[True, keys[1:] != keys[:-1]])
    counts = np.diff(np.r_[starts, keys.size])
    return keys[starts], counts


def _unhashable_message(
    hypotheses: Sequence[Sequence[Hashable]], references: Sequence[Sequence[Sequence[Hashable]]]
) -> str:
    """Which token of the corpus cannot be counted (a list, a dict, ...)."""
    named = [(f"hypotheses[{i}]", h) for i, h in enumerate(hypotheses)]
    named += [(f"references[{i}][{j}]", r) for i, refs in enumerate(references)
              for j, r in enumerate(refs)]
    for name, sentence in named:
        for token in sentence:
            try:
                hash(token)
            except TypeError:
                return (
                    f"{name} must hold hashable tokens (str, int, tuple, ...), got "
                    f"{token!r} ({type(token).__name__})"
                )
    return "every token must be hashable"


def corpus_ngram_statistics(
    hypotheses: Sequence[Sequence[Hashable]],
    references: Sequence[Sequence[Sequence[Hashable]]],
    max_order: int,
) -> tuple[list[int], list[int], int, int]:
    """BLEU's sufficient statistics; the inputs must already be validated.

    Args:
        hypotheses: ``N`` token lists.
        references: ``N`` non-empty lists of token lists.
        max_order: the longest n-gram order.

    Returns:
        ``(correct, total, hyp_len, ref_len)``: per order, the clipped matches and the
        number of hypothesis n-grams; the summed hypothesis length and the summed
        length of the reference closest in length to each hypothesis (shorter on ties).
    """
    N = len(hypotheses)
    flat_refs = list(chain.from_iterable(references))
    ref_sentence = np.repeat(np.arange(N), [len(refs) for refs in references])  # (R,)
    sentences = [*hypotheses, *flat_refs]  # one corpus: hypotheses first, then references
    lengths = np.fromiter(map(len, sentences), dtype=np.int64, count=len(sentences))
    tokens = list(chain.from_iterable(sentences))
    try:
        vocab = {token: i for i, token in enumerate(dict.fromkeys(tokens))}
    except TypeError:
        raise TypeError(_unhashable_message(hypotheses, references)) from None
    ids = np.fromiter(map(vocab.__getitem__, tokens), dtype=np.int64, count=len(tokens))  # (L,)

    hyp_lengths, ref_lengths = lengths[:N], lengths[N:]
    # closest reference length: sort by (sentence, |difference|, length), take the first
    diff = np.abs(ref_lengths - hyp_lengths[ref_sentence])
    order = np.lexsort((ref_lengths, diff, ref_sentence))
    first = np.r_[True, ref_sentence[order][1:] != ref_sentence[order][:-1]]
    ref_len = int(ref_lengths[order][first].sum())
    hyp_len = int(hyp_lengths.sum())

    # for each token position: its sentence, and how many tokens follow in it
    sentence_of = np.repeat(np.arange(len(sentences)), lengths)  # (L,)
    ends = np.cumsum(lengths)
    remaining = ends[sentence_of] - np.arange(ids.size)  # (L,), >= 1
    is_hyp = sentence_of < N  # hypothesis i is sentence i; reference j is N + j

    correct, total = [], []
    codes = ids
    for n in range(1, max_order + 1):
        if n > 1:  # extend each (n-1)-gram by the token n-1 positions later
            valid = remaining >= n
            last_token = ids[np.flatnonzero(valid) + n - 1]
            pairs = codes[valid] * (len(vocab) + 1) + last_token
            _, codes_valid = np.unique(pairs, return_inverse=True)  # renumber: stay small
            codes = np.full(ids.size, -1, dtype=np.int64)
            codes[valid] = codes_valid
        valid = remaining >= n
        G = int(codes.max()) + 2 if codes.size else 1
        hyp_positions = valid & is_hyp
        total.append(int(hyp_positions.sum()))
        if total[-1] == 0:
            correct.append(0)
            continue
        hyp_keys, hyp_counts = _unique_counts(sentence_of[hyp_positions] * G + codes[hyp_positions])
        # counts per single reference, then the maximum over a sentence's references
        ref_positions = valid & ~is_hyp
        per_ref, per_ref_counts = _unique_counts(
            sentence_of[ref_positions] * G + codes[ref_positions]
        )
        if per_ref.size == 0:
            correct.append(0)
            continue
        ref_keys = ref_sentence[per_ref // G - N] * G + per_ref % G
        by_key = np.lexsort((per_ref_counts, ref_keys))  # max count last in each group
        ref_keys, ref_counts = ref_keys[by_key], per_ref_counts[by_key]
        last = np.r_[ref_keys[1:] != ref_keys[:-1], True]
        ref_keys, ref_counts = ref_keys[last], ref_counts[last]
        # clip: min(hypothesis count, max reference count) for n-grams in both
        where = np.searchsorted(ref_keys, hyp_keys)
        where = np.minimum(where, ref_keys.size - 1)
        found = ref_keys[where] == hyp_keys
        correct.append(int(np.minimum(hyp_counts[found], ref_counts[where[found]]).sum()))
    return correct, total, hyp_len, ref_len
