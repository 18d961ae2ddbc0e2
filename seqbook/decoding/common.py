r"""What every search shares: the step-function protocol, the result, bookkeeping.

A search never sees a model. It sees a **step function**

.. code-block:: python

    log_probs, state = step_fn(prefixes, state)

that maps a batch of prefixes, ``(N, K, t)`` token ids (``N`` sentences, ``K``
prefixes each, all starting with ``<bos>``), to the log-probabilities of the next
token, ``(N, K, V)``. ``state`` is ``None`` at the first call; a step function may
return any tensor (or tuple, list or dict of tensors) with leading dimensions
``(N, K)`` as its state, and the search hands it back at the next call reordered
like the prefixes (row ``k`` of the next call continues the prefix it extends).
A recurrent model keeps its hidden state there and reads only the last token; a
fixed probability table returns ``None`` and looks at the whole prefix.

Shape letters: ``N`` sentences, ``K`` prefixes (beams) per sentence, ``t`` prefix
length, ``V`` vocabulary.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor

from seqbook._checks import (
    check_callable,
    check_device,
    check_int,
    check_positive_int,
    check_real,
)

__all__ = ["Hypotheses", "StepFn", "call_step", "length_normalized", "reorder_state"]

#: A step function: prefixes ``(N, K, t)`` and the search's state (``None`` at the first
#: call) to the next token's log-probabilities ``(N, K, V)`` and the new state.
StepFn: TypeAlias = Callable[
    [Int[Tensor, "N K t"], Any], tuple[Float[Tensor, "N K V"], Any]
]


@dataclass
class Hypotheses:
    """The output of a search, one best sequence per sentence.

    ``tokens`` exclude ``<bos>`` and ``<eos>``; ``log_prob`` is the sum of the
    log-probabilities of all generated tokens, ``<eos>`` included; ``score`` is
    ``log_prob / length ** length_penalty`` with ``length`` the number of generated
    tokens (``<eos>`` included); ``finished`` says whether ``<eos>`` was produced
    (otherwise the search stopped at ``max_len``). ``candidates`` counts the
    (prefix, next token) pairs the search scored, its cost; ``trace`` (beam search
    with ``trace=True``) holds the beams after every step.
    """

    tokens: list[list[int]]
    log_prob: Float[Tensor, " N"]
    score: Float[Tensor, " N"]
    finished: Bool[Tensor, " N"]
    candidates: int = 0
    trace: list[tuple[Tensor, Tensor]] = field(default_factory=list)

    @property
    def probability(self) -> Float[Tensor, " N"]:
        """:math:`\\exp` of ``log_prob``, shape ``(N,)``."""
        return self.log_prob.exp()


def _check_search(
    step_fn: object, bos: int, eos: int, max_len: int, batch_size: int, device: object
) -> torch.device | None:
    """The arguments every search shares (see :func:`~seqbook.decoding.greedy_search`);
    returns the device.

    ``bos`` need not be an id the step function can *predict* (a probability table may
    have no row for ``<bos>``, as in the decoding chapter), only one it can read;
    ``eos`` must be a column of its output, which :func:`call_step` checks at the first
    step, when the vocabulary size is known.
    """
    check_callable("step_fn", step_fn, signature="step_fn(prefixes, state)", nargs=2)
    check_int("bos", bos, min_value=0), check_int("eos", eos, min_value=0)
    if eos == bos:
        raise ValueError(f"eos must be different from bos, got eos = bos = {eos}")
    check_positive_int("max_len", max_len), check_positive_int("batch_size", batch_size)
    return check_device("device", device)


def call_step(
    step_fn: StepFn, prefixes: Int[Tensor, "N K t"], state: Any, eos: int,
    vocab_size: int | None,
) -> tuple[Float[Tensor, "N K V"], Any]:
    """Call ``step_fn`` and check that it kept its side of the protocol.

    Its output must be ``(N, K, V)`` log-probabilities: finite or :math:`-\\infty`,
    never NaN and never above 0 (probabilities or logits are refused), with ``eos``
    one of the ``V`` columns and ``V`` the same at every step.
    """
    result = step_fn(prefixes, state)
    if not (isinstance(result, tuple) and len(result) == 2):
        raise TypeError("step_fn must return a pair (log_probs, state); a stateless step "
                        f"function returns (log_probs, None); got {type(result).__name__}")
    log_probs, state = result
    N, K, t = prefixes.shape
    if not isinstance(log_probs, torch.Tensor) or not log_probs.is_floating_point():
        raise TypeError(f"step_fn must return floating-point log-probabilities, got "
                        f"{log_probs!r:.80}")
    if log_probs.dim() != 3 or log_probs.shape[:2] != (N, K):
        raise ValueError(f"step_fn must return log-probabilities of shape (N, K, V) = ({N}, "
                         f"{K}, V) for prefixes of shape {tuple(prefixes.shape)}, got "
                         f"{tuple(log_probs.shape)}")
    V = log_probs.shape[2]
    if vocab_size is not None and V != vocab_size:
        raise ValueError(f"step_fn changed the vocabulary size from {vocab_size} to {V}")
    if vocab_size is None and eos >= V:
        raise ValueError(f"eos must be one of the step function's token ids [0, {V}) (the "
                         f"vocabulary size V of its log-probabilities), got eos={eos}")
    tolerance = 8 * torch.finfo(log_probs.dtype).eps  # rounding in a log-softmax
    if bool((~(log_probs <= tolerance)).any()):  # one pass: NaN and values above 0
        if bool(torch.isnan(log_probs).any()):
            raise ValueError(f"step_fn returned NaN log-probabilities at step {t}")
        raise ValueError(f"step_fn must return log-probabilities (<= 0), got values up to "
                         f"{log_probs.max().item():.4g} at step {t}; did it return "
                         "probabilities or logits? Pass them through torch.log_softmax (or "
                         ".log())")
    return log_probs, state


def reorder_state(state: Any, parent: Int[Tensor, "N K_new"]) -> Any:
    """Select, for each sentence ``n``, the rows ``parent[n]`` along dimension 1.

    Args:
        state: ``None``, a tensor ``(N, K, ...)`` or a tuple/list/dict of them.
        parent: ``(N, K_new)`` indices into the ``K`` rows.

    Example:
        >>> state = torch.arange(6).view(1, 3, 2)            # (N, K, H)
        >>> reorder_state(state, torch.tensor([[2, 2, 0]]))[0].tolist()
        [[4, 5], [4, 5], [0, 1]]
    """
    if state is None:
        return None
    if isinstance(state, Tensor):
        _check_parent(state, parent)
        rows = torch.arange(parent.shape[0], device=parent.device).unsqueeze(1)  # (N, 1)
        return state[rows, parent.to(state.device)]  # (N, K_new, ...)
    if isinstance(state, tuple) and hasattr(state, "_fields"):
        return type(state)(*(reorder_state(s, parent) for s in state))
    if isinstance(state, (tuple, list)):
        return type(state)(reorder_state(s, parent) for s in state)
    if isinstance(state, dict):
        return {key: reorder_state(value, parent) for key, value in state.items()}
    return state


def _check_parent(state: Tensor, parent: Tensor) -> None:
    """``state`` has ``N`` rows, as ``parent``, and ``parent`` indexes its ``K`` columns."""
    if state.dim() < 2 or state.shape[0] != parent.shape[0]:
        raise ValueError(f"a state tensor must have shape (N, K, ...) with N = "
                         f"{parent.shape[0]} (the rows of parent), got shape {tuple(state.shape)}")
    K = state.shape[1]
    if parent.numel() and not torch.compiler.is_compiling():
        low, high = int(parent.min()), int(parent.max())
        if low < 0 or high >= K:
            raise ValueError(f"parent must hold row indices in [0, {K}) (K, the rows of the "
                             f"state), got indices from {low} to {high}")


def length_normalized(
    log_prob: Float[Tensor, "*#shape"],
    length: Int[Tensor, "*#shape"],
    length_penalty: float,
) -> Float[Tensor, "..."]:
    r"""The score :math:`\frac{1}{L^\alpha} \log P` that ranks finished sequences.

    Args:
        log_prob: :math:`\log P`, floating point.
        length: :math:`L`, the number of generated tokens (broadcastable to
            ``log_prob``; lengths below 1 count as 1).
        length_penalty: :math:`\alpha` >= 0.

    Example:
        >>> length_normalized(torch.tensor([-2.0]), torch.tensor([4]), 0.5).item()
        -1.0
    """
    alpha = check_real("length_penalty", length_penalty, min_value=0.0)
    if alpha == 0:
        return log_prob
    L = length.to(log_prob.dtype).clamp(min=1)
    return log_prob / L**alpha  # (eq-dec-length-penalty)


def strip(sequence: list[int], eos: int) -> list[int]:
    """Tokens up to (not including) the first ``eos``."""
    return sequence[: sequence.index(eos)] if eos in sequence else sequence
