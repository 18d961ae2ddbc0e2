r"""Back-propagation through time, full and truncated, made visible.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units.

Full BPTT is what autograd does with an unrolled network: keep every step's
activations, then run back-propagation backwards through all ``T`` steps. Its
memory grows with ``T`` (see :func:`~seqbook.recurrent.activation_bytes`).

Truncated BPTT follows Williams & Peng (1990) in the ``(k1, k2)`` form of Sutskever
(2013): **every** ``k1`` **steps, back-propagate the losses of those** ``k1`` **steps
through the last** ``k2`` **steps**, then update the weights. The common "detach the
state every ``k`` steps" loop is the special case ``k1 = k2 = k``: the sequence is
cut into chunks of ``k`` steps and the gradient never crosses a chunk boundary.
With ``k1 < k2`` the windows overlap, so the loss at the end of a window still
reaches ``k2`` steps back while the weights are updated every ``k1`` steps.

The functions use only the recurrent-module protocol of
:mod:`seqbook.recurrent.diagnostics` (``module(x, state) -> (outputs, final_state)``,
runnable piece by piece), so they work for every recurrent module of the package.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import torch
from jaxtyping import Float, Shaped
from torch import Tensor, nn

from seqbook._checks import check_int, check_real, check_same_dtype, parameter_dtype

__all__ = ["TruncatedBPTTResult", "truncated_bptt", "activation_bytes"]

State: TypeAlias = Any  # a tensor or a tuple of tensors


def _detach(state: State) -> State:
    if state is None:
        return None
    if isinstance(state, (tuple, list)):
        return tuple(s.detach() for s in state)
    return state.detach()


@dataclass
class TruncatedBPTTResult:
    """What one :func:`truncated_bptt` pass over a batch of sequences did."""

    losses: list[float] = field(default_factory=list)  # one per weight update
    grad_norms: list[float] = field(default_factory=list)  # before clipping, per update
    update_steps: list[int] = field(default_factory=list)  # time t of each update
    final_state: State = None  # detached: pass it on to continue a longer stream


def truncated_bptt(
    module: nn.Module,
    x: Float[Tensor, "B T D"],
    targets: Shaped[Tensor, "B T ..."],
    loss_fn: Callable[..., Tensor],
    optimizer: torch.optim.Optimizer,
    k1: int,
    k2: int | None = None,
    state: State = None,
    clip: float | None = None,
) -> TruncatedBPTTResult:
    r"""Train on one batch of long sequences with truncated BPTT(``k1``, ``k2``).

    At every update time :math:`t \in \{k_1, 2k_1, \dots\}` (and at :math:`T`, after
    a last, shorter chunk), with the weights :math:`\theta` of that moment,

    .. math::
        \Delta\theta \propto -\sum_{s=t-k_1+1}^{t}
            \frac{\partial \ell_s}{\partial \theta}\bigg|_{\text{unrolled from }
            h_{t-k_2}\text{ (held constant)}},

    i.e. the losses of the last ``k1`` steps are back-propagated through at most
    ``k2`` steps (a last, shorter chunk keeps the same ``k2 - k1`` steps of extra
    history, so ``k1 = k2`` is exactly "detach every ``k1`` steps"). The window is recomputed
    from the stored state :math:`h_{t-k_2}` with the current weights; for ``k1 = k2`` this is
    exactly the forward pass, for ``k1 < k2`` the first ``k2 - k1`` states of the window are
    recomputed with weights that have since been updated (Williams & Peng keep the
    old activations instead; the two coincide as the learning rate goes to 0).
    The state carried forward is each step's state computed once, online.

    Args:
        module: a recurrent module (``module(x, state) -> (outputs, final_state)``).
        x: inputs ``(B, T, D)``, ``T >= 1``.
        targets: ``(B, T, ...)``, sliced along time together with the outputs.
        loss_fn: ``loss_fn(outputs, targets)`` for a window's last steps,
            ``(B, k, H)`` and ``(B, k, ...)``; returns a scalar. A readout layer
            used inside it is trained too if its parameters are in ``optimizer``.
        optimizer: optimizes the module's (and the readout's) parameters.
        k1: steps between updates (>= 1).
        k2: steps back-propagated through (>= ``k1``); defaults to ``k1``.
        state: the initial state (``None`` for zeros), e.g. the ``final_state`` of
            the previous piece of a long stream.
        clip: maximal gradient norm, or ``None``.

    Shapes:
        ``x``: ``(B, T, D)``; ``targets``: ``(B, T, ...)``.

    Returns:
        A :class:`TruncatedBPTTResult`.

    Example:
        >>> from seqbook.recurrent import RNN
        >>> rnn, readout = RNN(1, 8), nn.Linear(8, 1)
        >>> opt = torch.optim.SGD([*rnn.parameters(), *readout.parameters()], lr=0.1)
        >>> x = torch.randn(4, 10, 1)
        >>> mse = lambda out, y: ((readout(out) - y) ** 2).mean()
        >>> result = truncated_bptt(rnn, x, x, mse, opt, k1=2, k2=4)
        >>> result.update_steps
        [2, 4, 6, 8, 10]
    """
    k2 = _check_windows(module, x, k1, k2, clip)  # k2 >= k1 (default: k1)
    states: list[State] = [_detach(state)]  # states[t]: after t steps, detached
    result, done, T = TruncatedBPTTResult(), 0, x.shape[1]  # done: steps used
    while done < T:
        end, start = min(done + k1, T), max(0, done - (k2 - k1))  # k1 losses
        outputs = _window(module, x, states, start, end)  # k2 steps from start
        loss = loss_fn(torch.cat(outputs[done - start :], dim=1),
                       targets[:, done:end])
        norm = _update(loss, optimizer, clip)  # the last k1 losses
        result.losses.append(loss.item())
        result.grad_norms.append(float(norm))
        result.update_steps.append(end)
        done = end
    result.final_state = states[T]
    return result


def _check_windows(
    module: nn.Module, x: Tensor, k1: int, k2: int | None, clip: float | None
) -> int:
    """The checks of :func:`truncated_bptt` that its types cannot make; returns k2."""
    dtype = parameter_dtype(module)
    if dtype is not None:
        check_same_dtype("x", x, dtype, of="the module's parameters")
    if x.shape[1] < 1:
        raise ValueError(f"x must have shape (B, T, D) with T >= 1, got {tuple(x.shape)}")
    check_int("k1", k1, min_value=1)
    if k2 is not None and k2 < k1:
        raise ValueError(f"k2 must be >= k1 = {k1} (the argument k1), got {k2}")
    if clip is not None:
        check_real("clip", clip, min_value=0.0, strict_min=True)
    return k1 if k2 is None else k2


def _window(
    module: nn.Module, x: torch.Tensor, states: list[State], start: int, end: int
) -> list[torch.Tensor]:
    """The outputs ``(B, 1, H)`` of steps ``start + 1 .. end``, unrolled from
    ``states[start]``; the states not stored yet are appended to ``states``."""
    state, outputs = states[start], []
    for t in range(start, end):
        # one step at a time, so that each new state can be stored for later windows
        out, state = module(x[:, t : t + 1], state)  # (B, 1, H)
        outputs.append(out)
        if t + 1 == len(states):
            states.append(_detach(state))
    return outputs


def _update(
    loss: torch.Tensor, optimizer: torch.optim.Optimizer, clip: float | None
) -> torch.Tensor:
    """Back-propagate ``loss``, clip the gradient norm of the optimizer's parameters,
    step; returns the norm."""
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        raise TypeError("loss_fn must return a scalar tensor")
    parameters = [p for group in optimizer.param_groups for p in group["params"]]
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    norm = nn.utils.clip_grad_norm_(parameters, clip if clip else float("inf"))
    optimizer.step()
    return norm


def activation_bytes(fn: Callable[[], Any], exclude: nn.Module | None = None) -> int:
    """Bytes of the tensors autograd keeps for the backward pass of ``fn()``.

    Every tensor the forward pass saves for back-propagation passes through a
    ``torch.autograd.graph.saved_tensors_hooks`` hook; the distinct storages are
    counted once each. Storages of ``exclude``'s parameters are left out, so what
    remains is the activation memory that BPTT needs on top of the weights.

    Args:
        fn: runs a forward pass (with gradients enabled) and returns its output.
        exclude: a module whose parameters are not counted.

    Returns:
        The number of bytes.

    Example:
        >>> from seqbook.recurrent import RNN
        >>> rnn = RNN(4, 16)
        >>> short = activation_bytes(lambda: rnn(torch.randn(1, 10, 4))[0], rnn)
        >>> long = activation_bytes(lambda: rnn(torch.randn(1, 20, 4))[0], rnn)
        >>> long > 1.8 * short
        True
    """
    skip = set()
    if exclude is not None:
        skip = {p.untyped_storage().data_ptr() for p in exclude.parameters()}
    seen: dict[int, int] = {}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage.data_ptr() not in skip:
            seen[storage.data_ptr()] = storage.nbytes()
        return tensor

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        output = fn()
    del output
    return sum(seen.values())
