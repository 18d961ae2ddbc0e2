r"""Count-based n-gram language models with add-k smoothing, and their perplexity.

The probability of a sequence factorises by the chain rule into next-token
probabilities, :math:`P(x_1, \dots, x_T) = \prod_t P(x_t \mid x_{<t})`. An n-gram model
keeps only the last :math:`n - 1` tokens of the history (a Markov assumption of order
:math:`n - 1`) and estimates each conditional from counts. It is the baseline that
neural language models are measured against.

Shape letters: ``T`` the length of one sequence, ``V`` the vocabulary.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

import torch
from jaxtyping import Float64, Int
from torch import Tensor

from seqbook._checks import check_int, check_positive_int, check_real, check_sequence
from seqbook.data.vocab import _check_id

__all__ = ["NgramLM"]


#: One sequence of ids: a sequence (any iterable) of ints or a 1-D integer tensor (of
#: any length: ``_T`` binds no size across the sequences).
Ids = Iterable[int] | Int[Tensor, " _T"]
#: Training or evaluation sequences: a list (any iterable but a str or a tensor) of them;
#: each is checked by :func:`_check_ids`, whose messages name the one that is wrong.
Sequences = Iterable[Iterable[object]]


_ONLY_INT = frozenset({int})


def _check_ids(name: str, ids: object, vocab_size: int) -> list[int]:
    """``ids`` (a sequence of ints or a 1-D integer tensor) as a list of valid ids."""
    if ids.__class__ is list and _ONLY_INT.issuperset(map(type, ids)) and (
            not ids or (min(ids) >= 0 and max(ids) < vocab_size)):
        return ids  # the common case (a context inside log_probs), in C loops
    if isinstance(ids, torch.Tensor):
        if ids.dim() != 1 or ids.is_floating_point() or ids.is_complex():
            raise TypeError(f"{name} must be a 1-D integer tensor or a sequence of ints, got "
                            f"a tensor of shape {tuple(ids.shape)} and dtype {ids.dtype}")
        ids = ids.tolist()
    items = check_sequence(name, ids, what="a sequence of int token ids (encode the tokens "
                           "first)", iterable=True)
    return [_check_id(name, i, vocab_size) for i in items]


def _check_sequences(sequences: Iterable[object], vocab_size: int) -> list[list[int]]:
    """``sequences`` (a list, or any iterable but a str or a tensor, of id sequences,
    at least one token in all) as id lists."""
    check_sequence("sequences", sequences, what="a list of sequences of int ids",
                   iterable=True)
    out = [_check_ids(f"sequences[{i}]", ids, vocab_size) for i, ids in enumerate(sequences)]
    if not any(out):
        raise ValueError("sequences must hold at least one token in all, got none")
    return out


class NgramLM:
    r"""An n-gram language model, counted from sequences with add-k smoothing.

    Each sequence is read with :math:`n - 1` copies of ``bos_id`` in front, so that its
    first tokens have a context too; every token of the sequence (an ``<eos>`` at its
    end included, if the caller appends one) is predicted from the :math:`n - 1` tokens
    before it:

    .. math::
        P(x_t \mid x_{t-n+1}, \dots, x_{t-1}) =
        \frac{c(x_{t-n+1}, \dots, x_t) + k}{c(x_{t-n+1}, \dots, x_{t-1}) + k V},

    with :math:`c(\cdot)` the number of times a run of tokens occurs in the training
    sequences (a context counted once for each token that follows it) and
    :math:`k > 0` the smoothing count (:math:`k = 1`: Laplace's add-one). A context
    never seen gets the uniform distribution :math:`1 / V`. ``order=1`` is the unigram
    model (no context), ``order=2`` the bigram.

    Args:
        sequences: training sequences, each a sequence of int ids (or a 1-D integer
            tensor) in ``[0, vocab_size)``; at least one token in all.
        order: :math:`n \ge 1`.
        vocab_size: :math:`V`.
        smoothing: :math:`k > 0`.
        bos_id: the id that pads the context before a sequence's first token.

    Attributes:
        ngram_counts: :math:`c(x_{t-n+1}, \dots, x_t)`, a ``Counter`` keyed by tuples of
            :math:`n` ids.
        context_counts: :math:`c(x_{t-n+1}, \dots, x_{t-1})`, keyed by tuples of
            :math:`n - 1` ids (the empty tuple for the unigram).
        num_tokens: the number of training tokens predicted.

    Example:
        >>> lm = NgramLM([[1, 2, 1, 2, 3]], order=2, vocab_size=4, smoothing=1.0)
        >>> lm.prob([1], 2)           # 1 -> 2 twice of twice: (2 + 1) / (2 + 4)
        0.5
        >>> round(lm.perplexity([[1, 2, 3]]), 4)  # P: 2/5, 3/6, 2/6 -> (1/15) ** (-1/3)
        2.4662
    """

    def __init__(
        self,
        sequences: Sequences,
        order: int,
        vocab_size: int,
        smoothing: float = 1.0,
        bos_id: int = 0,
    ) -> None:
        check_positive_int("order", order), check_positive_int("vocab_size", vocab_size)
        check_real("smoothing", smoothing, min_value=0.0, strict_min=True, finite=True)
        check_int("bos_id", bos_id, min_value=0, max_value=vocab_size - 1)
        self.order = order
        self.vocab_size = vocab_size
        self.smoothing = smoothing
        self.bos_id = bos_id
        id_lists = _check_sequences(sequences, self.vocab_size)
        self.ngram_counts: Counter[tuple[int, ...]] = Counter()
        self.context_counts: Counter[tuple[int, ...]] = Counter()
        for ids in id_lists:
            padded = [self.bos_id] * (self.order - 1) + ids
            for t in range(self.order - 1, len(padded)):
                context = tuple(padded[t - self.order + 1 : t])
                self.ngram_counts[context + (padded[t],)] += 1
                self.context_counts[context] += 1
        self.num_tokens = sum(len(ids) for ids in id_lists)

    def _context(self, context: Ids) -> tuple[int, ...]:
        """The last n - 1 ids of ``context`` (padded with ``bos_id`` in front)."""
        ids = _check_ids("context", context, self.vocab_size)
        if len(ids) < self.order - 1:  # a sequence's start: pad with bos_id
            ids = [self.bos_id] * (self.order - 1 - len(ids)) + ids
        return tuple(ids[len(ids) - (self.order - 1) :]) if self.order > 1 else ()

    def prob(self, context: Ids, token: int) -> float:
        r"""The smoothed :math:`P(\text{token} \mid \text{context})`.

        Only the last :math:`n - 1` ids of ``context`` are used; a shorter context is
        the start of a sequence and is padded with ``bos_id`` in front.

        Example:
            >>> NgramLM([[0, 1, 1]], order=1, vocab_size=2, smoothing=1.0).prob([], 1)
            0.6
        """
        check_int("token", token, min_value=0, max_value=self.vocab_size - 1)
        key = self._context(context)  # the last n - 1 ids
        k, V = self.smoothing, self.vocab_size
        count = self.ngram_counts[key + (token,)]
        return (count + k) / (self.context_counts[key] + k * V)  # (eq-seq-ngram)

    def distribution(self, context: Ids) -> Float64[Tensor, " {self.vocab_size}"]:
        r"""The smoothed next-token distribution after ``context``, shape ``(V,)``.

        Example:
            >>> NgramLM([[0, 1, 1]], order=1, vocab_size=2).distribution([]).sum().item()
            1.0
        """
        key = self._context(context)
        counts = torch.tensor(
            [self.ngram_counts[key + (w,)] for w in range(self.vocab_size)],
            dtype=torch.float64,
        )
        k, V = self.smoothing, self.vocab_size
        return (counts + k) / (self.context_counts[key] + k * V)

    def log_probs(self, ids: Ids) -> Float64[Tensor, " T"]:
        r"""The natural log of :math:`P(x_t \mid x_{<t})` for every token of one sequence.

        Their sum is :math:`\log P(x_1, \dots, x_T)` by the chain rule.

        Shapes:
            ids: ``(T,)``; returns ``(T,)`` in float64.

        Example:
            >>> lm = NgramLM([[1, 2]], order=2, vocab_size=3, smoothing=1.0)
            >>> lm.log_probs([1, 2]).exp()       # (1 + 1) / (1 + 3) twice
            tensor([0.5000, 0.5000], dtype=torch.float64)
        """
        ids = _check_ids("ids", ids, self.vocab_size)
        n = self.order
        # x_t's context: the n - 1 ids before it
        padded = [self.bos_id] * (n - 1) + ids
        log_p = [
            # (eq-seq-markov)
            math.log(self.prob(padded[t - n + 1 : t], padded[t]))
            for t in range(n - 1, len(padded))
        ]
        # their sum: (eq-seq-chain-rule)
        return torch.tensor(log_p, dtype=torch.float64)

    def cross_entropy(self, sequences: Sequences) -> float:
        r"""The mean negative log-probability per token (nats) over ``sequences``.

        Example:
            >>> lm = NgramLM([[1, 2]], order=2, vocab_size=3, smoothing=1.0)
            >>> round(lm.cross_entropy([[1, 2]]), 4)          # -log 0.5
            0.6931
        """
        total, count = 0.0, 0
        for ids in _check_sequences(sequences, self.vocab_size):
            log_p = self.log_probs(ids)
            total -= log_p.sum().item()
            count += len(log_p)
        return total / count

    def perplexity(self, sequences: Sequences) -> float:
        r"""The perplexity on ``sequences``: the exponential of :meth:`cross_entropy`.

        .. math::
            \operatorname{PPL} = \exp\Big(-\frac{1}{N} \sum_{\text{tokens}}
            \log P(x_t \mid x_{<t})\Big)

        with :math:`N` the number of tokens predicted in all the sequences.

        Example:
            >>> lm = NgramLM([[1, 2]], order=2, vocab_size=3, smoothing=1.0)
            >>> lm.perplexity([[1, 2]])
            2.0
        """
        return math.exp(self.cross_entropy(sequences))  # (eq-seq-perplexity)
