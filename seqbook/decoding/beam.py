r"""Beam search, batched: ``k`` prefixes per sentence, many sentences at once.

Shape letters: ``N`` sentences, ``K`` beams (the beam size ``k``), ``t`` prefix length,
``V`` vocabulary.
"""

from __future__ import annotations

from typing import Any, Protocol

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from seqbook._checks import check_positive_int, check_real
from seqbook.decoding.common import (
    Hypotheses,
    StepFn,
    _check_search,
    call_step,
    length_normalized,
    reorder_state,
    strip,
)

__all__ = ["beam_search", "beam_step"]


def beam_search(
    step_fn: StepFn,
    bos: int,
    eos: int,
    beam_size: int,
    max_len: int,
    length_penalty: float = 0.0,
    batch_size: int = 1,
    device: torch.device | str | None = None,
    trace: bool = False,
) -> Hypotheses:
    r"""Keep the ``beam_size`` best prefixes of every sentence at every step.

    At each step every beam is extended by every token (:math:`k |\mathcal{Y}|`
    candidates per sentence) and the :math:`k` best candidates survive, ranked by

    .. math::
        \frac{1}{L^{\alpha}} \log P(y_1, \dots, y_L \mid \mathbf{c})
        = \frac{1}{L^{\alpha}} \sum_{t'=1}^{L} \log P(y_{t'} \mid y_{<t'}, \mathbf{c})

    with :math:`\alpha` = ``length_penalty`` and :math:`L` the number of generated
    tokens (``<eos>`` included). A beam that has produced ``<eos>`` is finished: it
    keeps its score and competes, unchanged, with the longer prefixes of later steps
    (at one step, all live candidates have the same length, so :math:`\alpha` only
    matters between finished and live ones and at the end). The search stops when
    every beam of every sentence is finished or after ``max_len`` tokens, and returns
    each sentence's best beam. Ties are broken towards the lower beam, then token,
    index (a stable sort), so the result does not depend on the device. The cost is
    :math:`O(k |\mathcal{Y}| T')` scored candidates per sentence; ``beam_size=1`` is
    greedy search.

    Args:
        step_fn: ``(prefixes (N, K, t), state) -> (log_probs (N, K, V), state)``; see
            :mod:`seqbook.decoding.common`.
        bos, eos: the ids of ``<bos>`` and ``<eos>``.
        beam_size: :math:`k` >= 1.
        max_len: the most tokens to generate (>= 1), ``<eos>`` included.
        length_penalty: :math:`\alpha` >= 0; 0 ranks by probability alone, larger
            values favour longer outputs.
        batch_size: ``N``, the number of sentences ``step_fn`` decodes.
        device: where to create the prefixes (default CPU).
        trace: record the beams (prefixes and log-probabilities) after every step in
            ``Hypotheses.trace``.

    Returns:
        :class:`~seqbook.decoding.Hypotheses`.

    Example:
        >>> table = torch.tensor([[0.5, 0.2, 0.2, 0.1],      # step 1: A B C <eos>
        ...                       [0.1, 0.4, 0.3, 0.2]]).log()
        >>> def step(prefixes, state):                         # ids: A=0 ... <eos>=3
        ...     t = prefixes.shape[-1] - 1
        ...     return table[min(t, 1)].expand(*prefixes.shape[:2], 4), None
        >>> result = beam_search(step, bos=4, eos=3, beam_size=2, max_len=2)
        >>> result.tokens, round(result.probability.item(), 2)
        ([[0, 1]], 0.2)
    """
    device = _check_search(step_fn, bos, eos, max_len, batch_size, device)
    check_positive_int("beam_size", beam_size)
    check_real("length_penalty", length_penalty, min_value=0.0)
    N, K, alpha = batch_size, beam_size, length_penalty
    prefixes = torch.full((N, K, 1), bos, dtype=torch.long, device=device)  # (N, K, 1)
    # all beams start as the same prefix; only the first is alive, or the k best
    # candidates of step 1 would be k copies of the best one
    log_prob = torch.full((N, K), float("-inf"), device=device)  # (N, K)
    log_prob[:, 0] = 0.0
    finished = torch.zeros(N, K, dtype=torch.bool, device=device)
    length = torch.zeros(N, K, dtype=torch.long, device=device)
    state, V, candidates, steps = None, None, 0, []
    for t in range(1, max_len + 1):
        log_probs, state = call_step(step_fn, prefixes, state, eos, V)  # (N, K, V)
        V = log_probs.shape[-1]
        # the log-probabilities in the dtype of their sum (float32 at least)
        dtype = torch.promote_types(log_prob.dtype, log_probs.dtype)
        log_prob, log_probs = log_prob.to(dtype), log_probs.to(log_prob.device, dtype)
        candidates += int((~finished & (log_prob > float("-inf"))).sum()) * V
        # a finished beam has one continuation, itself: <eos> again at no cost
        stay = torch.full((V,), float("-inf"), device=log_prob.device, dtype=dtype)
        stay[eos] = 0.0
        log_probs = torch.where(finished.unsqueeze(-1), stay, log_probs)  # (N, K, V)
        parent, token, log_prob, length = beam_step(log_prob, length, finished, log_probs, t,
                                                    alpha)
        finished = finished.gather(1, parent) | (token == eos)
        prefixes = prefixes.gather(1, parent.unsqueeze(-1).expand(-1, -1, t))  # (N, K, t)
        prefixes = torch.cat([prefixes, token.unsqueeze(-1)], dim=-1)  # (N, K, t + 1)
        state = reorder_state(state, parent)
        if trace:
            steps.append((prefixes.clone(), log_prob.clone()))
        if bool(finished.all()):
            break
    score = length_normalized(log_prob, length, alpha)  # (N, K)
    best = score.argmax(dim=1)  # (N,)
    rows = torch.arange(N, device=best.device)
    tokens = [strip(row[1:], eos) for row in prefixes[rows, best].tolist()]
    return Hypotheses(
        tokens, log_prob[rows, best], score[rows, best], finished[rows, best], candidates, steps
    )


def beam_step(
    log_prob: Float[Tensor, "N K"],
    length: Int[Tensor, "N K"],
    finished: Bool[Tensor, "N K"],
    log_probs: Float[Tensor, "N K V"],
    t: int,
    alpha: float,
) -> tuple[
    Int[Tensor, "N K"], Int[Tensor, "N K"],
    Float[Tensor, "N K"], Int[Tensor, "N K"],
]:
    """One step of :func:`~seqbook.decoding.beam_search`: the ``K`` best of the ``K V`` extensions.

    ``log_prob``, ``length``, ``finished`` ``(N, K)`` describe the beams, ``log_probs``
    ``(N, K, V)`` their next tokens (a finished beam's only finite one is ``<eos>``,
    at 0), ``t`` the step (>= 1) and ``alpha`` the length penalty (>= 0). Returns each
    survivor's ``parent`` beam, ``token``, ``log_prob`` and ``length``, all ``(N, K)``.

    Example:
        >>> log_prob = torch.tensor([[0.0, -1.0]])                   # (N, K)
        >>> log_probs = torch.tensor([[[-0.5, -3.0], [-0.25, -2.0]]])  # (N, K, V)
        >>> parent, token, new, _ = beam_step(
        ...     log_prob, torch.zeros(1, 2, dtype=torch.long),
        ...     torch.zeros(1, 2, dtype=torch.bool), log_probs, t=1, alpha=0.0)
        >>> parent.tolist(), token.tolist(), new.tolist()
        ([[0, 1]], [[0, 0]], [[-0.5, -1.25]])
    """
    check_positive_int("t", t), check_real("alpha", alpha, min_value=0.0)
    N, K, V = log_probs.shape
    # (N, K, V)  (eq-dec-sequence-probability)
    total = log_prob.unsqueeze(-1) + log_probs
    # (N, K)
    new_length = torch.where(finished, length, torch.full_like(length, t))
    # (N, K, V)
    ranking = length_normalized(total, new_length.unsqueeze(-1), alpha)
    order = torch.sort(
        ranking.view(N, K * V), dim=1, descending=True, stable=True
    ).indices
    chosen = order[:, :K]  # (N, K)  (eq-dec-beam)
    parent, token = chosen // V, chosen % V  # (N, K), (N, K)
    new_log_prob = total.view(N, K * V).gather(1, chosen)  # (N, K)
    return parent, token, new_log_prob, new_length.gather(1, parent)


class Translator(Protocol):
    """What :func:`search_in_eval_mode` needs of a translation model."""

    training: bool
    bos_id: int
    eos_id: int

    def step_function(self, src: Tensor, src_lengths: Tensor) -> StepFn: ...
    def eval(self) -> Any: ...
    def train(self, mode: bool = True) -> Any: ...


def search_in_eval_mode(
    model: Translator,
    src: Int[Tensor, "N S"],
    src_lengths: Int[Tensor, " N"],
    max_len: int,
    beam_size: int = 1,
    length_penalty: float = 0.0,
) -> Hypotheses:
    """Beam search with a translation model's ``step_function``, the model in eval mode.

    The shared body of the translators' ``generate`` methods
    (:class:`~seqbook.seq2seq.EncoderDecoder`, :class:`~seqbook.transformer.Transformer`):
    the model needs ``step_function(src, src_lengths)``, ``bos_id`` and ``eos_id``.
    Dropout is off during the search and the model's training mode is restored after.
    """
    was_training = model.training
    model.eval()
    try:
        return beam_search(
            model.step_function(src, src_lengths),
            model.bos_id,
            model.eos_id,
            beam_size,
            max_len,
            length_penalty,
            batch_size=src.shape[0],
            device=src.device,
        )
    finally:
        model.train(was_training)
