r"""Greedy search: take the most probable next token, every step.

Shape letters: ``N`` sentences, ``t`` prefix length, ``V`` vocabulary.
"""

from __future__ import annotations

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from seqbook._checks import check_int
from seqbook.decoding.common import (
    Hypotheses,
    StepFn,
    _check_search,
    call_step,
    length_normalized,
    strip,
)

__all__ = ["greedy_search", "greedy_step"]


def greedy_search(
    step_fn: StepFn,
    bos: int,
    eos: int,
    max_len: int,
    batch_size: int = 1,
    device: torch.device | str | None = None,
) -> Hypotheses:
    r"""Decode ``batch_size`` sentences at once by always taking the argmax.

    .. math::
        y_{t'} = \operatorname*{argmax}_{y \in \mathcal{Y}}
        P(y \mid y_1, \dots, y_{t'-1}, \mathbf{c})

    A sentence stops at ``<eos>`` or after ``max_len`` tokens. Cheap (:math:`|\mathcal{Y}|`
    candidates per step) but short-sighted: the best first token need not start the
    best sequence.

    Args:
        step_fn: ``(prefixes (N, 1, t), state) -> (log_probs (N, 1, V), state)``; see
            :mod:`seqbook.decoding.common`.
        bos, eos: the ids of ``<bos>`` and ``<eos>``.
        max_len: the most tokens to generate per sentence (>= 1), ``<eos>`` included.
        batch_size: ``N``, the number of sentences ``step_fn`` decodes.
        device: where to create the prefixes (default CPU).

    Returns:
        The :class:`~seqbook.decoding.Hypotheses`; their ``score`` is their
        ``log_prob`` (greedy search has no length penalty).

    Example:
        >>> table = torch.tensor([[0.5, 0.2, 0.2, 0.1],      # step 1: A B C <eos>
        ...                       [0.1, 0.4, 0.3, 0.2]]).log()
        >>> def step(prefixes, state):                         # ids: A=0 ... <eos>=3
        ...     t = prefixes.shape[-1] - 1
        ...     return table[min(t, 1)].expand(*prefixes.shape[:2], 4), None
        >>> result = greedy_search(step, bos=4, eos=3, max_len=2)
        >>> result.tokens, round(result.probability.item(), 2)
        ([[0, 1]], 0.2)
    """
    device = _check_search(step_fn, bos, eos, max_len, batch_size, device)
    N = batch_size
    prefixes = torch.full((N, 1, 1), bos, dtype=torch.long, device=device)  # (N, 1, 1)
    log_prob = torch.zeros(N, device=device)
    finished = torch.zeros(N, dtype=torch.bool, device=device)
    length = torch.zeros(N, dtype=torch.long, device=device)
    state, V, candidates = None, None, 0
    for _ in range(max_len):
        log_probs, state = call_step(step_fn, prefixes, state, eos, V)  # (N, 1, V)
        V = log_probs.shape[-1]
        # the log-probabilities in the dtype of their sum (float32 at least)
        dtype = torch.promote_types(log_prob.dtype, log_probs.dtype)
        log_probs = log_probs[:, 0].to(log_prob.device, dtype)  # (N, V)
        log_prob = log_prob.to(dtype)
        candidates += int((~finished).sum()) * V
        best, log_prob, length, finished = greedy_step(log_probs, log_prob, length, finished, eos)
        prefixes = torch.cat([prefixes, best.view(N, 1, 1)], dim=-1)  # (N, 1, t + 1)
        if bool(finished.all()):
            break
    tokens = [strip(row[1:], eos) for row in prefixes[:, 0].tolist()]
    score = length_normalized(log_prob, length, 0.0)
    return Hypotheses(tokens, log_prob, score, finished, candidates)


def greedy_step(
    log_probs: Float[Tensor, "N V"],
    log_prob: Float[Tensor, " N"],
    length: Int[Tensor, " N"],
    finished: Bool[Tensor, " N"],
    eos: int,
) -> tuple[
    Int[Tensor, " N"], Float[Tensor, " N"],
    Int[Tensor, " N"], Bool[Tensor, " N"],
]:
    """One step of :func:`~seqbook.decoding.greedy_search`: the next token of every sentence.

    ``log_probs`` ``(N, V)`` are the next token's log-probabilities; ``log_prob``,
    ``length``, ``finished`` ``(N,)`` describe the sentences so far. A finished
    sentence gets ``eos`` again, at no cost and no length. Returns the tokens ``(N,)``
    and the updated ``log_prob``, ``length``, ``finished``.

    Example:
        >>> log_probs = torch.tensor([[-0.5, -2.5, -1.5], [-2.0, -0.25, -3.0]])
        >>> best, log_prob, length, finished = greedy_step(
        ...     log_probs, torch.zeros(2), torch.zeros(2, dtype=torch.long),
        ...     torch.tensor([False, True]), eos=2)
        >>> best.tolist(), log_prob.tolist(), length.tolist()
        ([0, 2], [-0.5, 0.0], [1, 0])
    """
    check_int("eos", eos, min_value=0, max_value=log_probs.shape[-1] - 1)
    best = log_probs.argmax(-1)  # (N,)  (eq-dec-greedy)
    best = torch.where(finished, torch.full_like(best, eos), best)
    gained = log_probs.gather(1, best.unsqueeze(1)).squeeze(1)  # (N,)
    log_prob = log_prob + torch.where(
        finished, torch.zeros_like(gained), gained
    )
    length = length + (~finished).long()
    return best, log_prob, length, finished | (best == eos)
