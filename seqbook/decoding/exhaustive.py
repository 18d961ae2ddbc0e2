r"""Exhaustive search: score every possible output sequence, keep the best.

Shape letters: ``N`` sentences, ``M`` live prefixes (the same for every sentence),
``t`` prefix length, ``V`` vocabulary.
"""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor

from seqbook._checks import check_int, check_positive_int, check_real
from seqbook.decoding.common import (
    Hypotheses,
    StepFn,
    _check_search,
    call_step,
    length_normalized,
    reorder_state,
    strip,
)

__all__ = ["exhaustive_search", "exhaustive_step"]


def exhaustive_search(
    step_fn: StepFn,
    bos: int,
    eos: int,
    max_len: int,
    length_penalty: float = 0.0,
    batch_size: int = 1,
    device: torch.device | str | None = None,
    max_prefixes: int = 1_000_000,
) -> Hypotheses:
    r"""Enumerate every sequence of at most ``max_len`` tokens and return the best.

    Every prefix that has not produced ``<eos>`` is extended by every token, so after
    :math:`t` steps there are up to :math:`(|\mathcal{Y}| - 1)^t` live prefixes and the
    search scores :math:`O(|\mathcal{Y}|^{T'})` candidates: the exact optimum of

    .. math::
        \frac{1}{L^{\alpha}} \log P(y_1, \dots, y_L \mid \mathbf{c})

    over all sequences that end with ``<eos>`` within ``max_len`` tokens (and the
    unfinished ones of exactly ``max_len`` tokens), at a cost that only tiny
    vocabularies and lengths allow. Tokens whose log-probability is :math:`-\infty`
    for every sentence are not extended.

    Args:
        step_fn: ``(prefixes (N, M, t), state) -> (log_probs (N, M, V), state)``; see
            :mod:`seqbook.decoding.common`.
        bos, eos: the ids of ``<bos>`` and ``<eos>``.
        max_len: the most tokens per sequence (>= 1), ``<eos>`` included.
        length_penalty: :math:`\alpha` >= 0, as in
            :func:`~seqbook.decoding.beam_search`.
        batch_size: ``N``, the number of sentences ``step_fn`` decodes.
        device: where to create the prefixes (default CPU).
        max_prefixes: refuse to go on when a step would hold more live prefixes than
            this (>= 1), rather than run out of memory.

    Returns:
        :class:`~seqbook.decoding.Hypotheses`.

    Raises:
        ValueError: when the enumeration would exceed ``max_prefixes``.

    Example:
        >>> table = torch.tensor([[0.5, 0.2, 0.2, 0.1],      # step 1: A B C <eos>
        ...                       [0.1, 0.4, 0.3, 0.2]]).log()
        >>> def step(prefixes, state):                         # ids: A=0 ... <eos>=3
        ...     t = prefixes.shape[-1] - 1
        ...     return table[min(t, 1)].expand(*prefixes.shape[:2], 4), None
        >>> result = exhaustive_search(step, bos=4, eos=3, max_len=2)
        >>> result.tokens, round(result.probability.item(), 2), result.candidates
        ([[0, 1]], 0.2, 16)
    """
    device = _check_search(step_fn, bos, eos, max_len, batch_size, device)
    check_real("length_penalty", length_penalty, min_value=0.0)
    check_positive_int("max_prefixes", max_prefixes)
    N, alpha = batch_size, length_penalty
    prefixes = torch.full((N, 1, 1), bos, dtype=torch.long, device=device)  # (N, M, t)
    log_prob = torch.zeros(N, 1, device=device)  # (N, M)
    best_score = torch.full((N,), float("-inf"), device=device)  # (N,)
    best_log_prob = torch.full((N,), float("-inf"), device=device)  # (N,)
    best_prefix: list[list[int]] = [[] for _ in range(N)]
    state, V, candidates = None, None, 0
    for t in range(1, max_len + 1):
        log_probs, state = call_step(step_fn, prefixes, state, eos, V)  # (N, M, V)
        V, M = log_probs.shape[-1], prefixes.shape[1]
        candidates += N * M * V
        # the log-probabilities in the dtype of their sum (float32 at least)
        dtype = torch.promote_types(log_prob.dtype, log_probs.dtype)
        log_prob, log_probs = log_prob.to(dtype), log_probs.to(log_prob.device, dtype)
        total, parent, token = exhaustive_step(log_prob, log_probs, eos)
        # sequences that end here: with <eos>, or any token at the last step
        ending = total if t == max_len else total[:, :, eos : eos + 1]  # (N, M, V')
        scores = length_normalized(ending, torch.tensor(t), alpha).reshape(N, -1)  # (N, M*V')
        top, where = scores.max(dim=1)  # (N,)
        better = top > best_score  # (N,)
        best_score = torch.where(better, top, best_score)
        best_log_prob = torch.where(better, ending.reshape(N, -1).gather(1, where[:, None])[:, 0],
                                    best_log_prob)
        for n in better.nonzero().flatten().tolist():
            m, v = divmod(int(where[n]), ending.shape[2])
            best_prefix[n] = prefixes[n, m, 1:].tolist() + [v if t == max_len else eos]
        if t == max_len or parent.numel() == 0:
            break
        if parent.numel() > max_prefixes:
            raise ValueError(
                f"exhaustive search would hold {parent.numel()} prefixes after {t} steps, "
                f"more than max_prefixes={max_prefixes}; use beam_search or a smaller max_len"
            )
        parent_nm = parent.unsqueeze(0).expand(N, -1)  # (N, M_next)
        log_prob = total[:, parent, token]  # (N, M_next)
        prefixes = prefixes.gather(1, parent_nm.unsqueeze(-1).expand(-1, -1, t))  # (N, M_next, t)
        prefixes = torch.cat([prefixes, token.view(1, -1, 1).expand(N, -1, 1)], dim=-1)
        state = reorder_state(state, parent_nm)
    tokens = [strip(p, eos) for p in best_prefix]
    finished = torch.tensor([eos in p for p in best_prefix], device=best_score.device)
    return Hypotheses(tokens, best_log_prob, best_score, finished, candidates)


def exhaustive_step(
    log_prob: Float[Tensor, "N M"], log_probs: Float[Tensor, "N M V"], eos: int
) -> tuple[
    Float[Tensor, "N M V"], Int[Tensor, " M_next"], Int[Tensor, " M_next"]
]:
    """Extend every live prefix by every token: one step of
    :func:`~seqbook.decoding.exhaustive_search`.

    ``log_prob`` ``(N, M)`` holds the prefixes' log-probabilities, ``log_probs``
    ``(N, M, V)`` their next tokens'. Returns the log-probabilities of all ``M V``
    extensions, ``(N, M, V)``, and the ``(parent, token)`` pairs ``(M_next,)`` that
    stay live: not ``<eos>``, and possible for at least one sentence.

    Example:
        >>> log_probs = torch.tensor([[[-0.5, float("-inf"), -1.0]]])   # (N, M, V)
        >>> total, parent, token = exhaustive_step(torch.zeros(1, 1), log_probs, eos=2)
        >>> parent.tolist(), token.tolist()         # <eos> ends, token 1 is impossible
        ([0], [0])
    """
    check_int("eos", eos, min_value=0, max_value=log_probs.shape[-1] - 1)
    # (N, M, V)  (eq-dec-sequence-probability)
    total = log_prob.unsqueeze(-1) + log_probs
    alive = torch.isfinite(total).any(dim=0)  # (M, V)
    alive[:, eos] = False  # a prefix that ends with <eos> is finished
    parent, token = alive.nonzero(as_tuple=True)  # (M_next,), (M_next,)
    return total, parent, token
