r"""How far back does a gradient reach? Per-time-step gradient diagnostics.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units
(of the state component being measured).

The functions work with any one-layer, one-direction recurrent module of the package
(:class:`~seqbook.recurrent.RNN`, :class:`~seqbook.recurrent.LSTM`,
:class:`~seqbook.recurrent.GRU`) and with ``torch.nn.RNN``, ``nn.LSTM`` and ``nn.GRU``
(one layer, ``batch_first=True``), because they rely on nothing but this
**protocol**:

1. ``module(x, state)`` takes ``x`` of shape ``(B, T, D)`` and a state (``None``
   for the zero state) and returns ``(outputs, final_state)``, ``outputs`` of shape
   ``(B, T, H)``;
2. the state is a tensor or a tuple of tensors (``(h, c)`` for an LSTM), each of
   shape ``(1, B, H)`` as torch's one-layer modules return it (or ``(B, H)``), and
   its first tensor is the hidden state that the module also outputs:
   ``outputs[:, -1]`` equals it;
3. running a sequence in pieces, passing each piece's final state on to the next,
   gives the same result as running it whole.

Rule 3 is what makes a recurrent network a state-space model, and it lets the
diagnostics step any such module one time step at a time: ``module(x[:, t:t+1],
state)``. At every step they add a zero "probe" tensor :math:`p_t` to the new state
as the module passes it on: to the input of the next step, to the final state and,
for the hidden state, to the output of step :math:`t`. Then
:math:`\partial L / \partial p_t` is the partial derivative of the loss with respect
to that state tensor along every path that leaves step :math:`t` through it, whatever
the module's autograd graph looks like inside. Whatever else step :math:`t` computed
from it is held fixed: for the hidden state :math:`h_t` nothing is, so the probe
gives the full derivative :math:`\partial L / \partial h_t`; for an LSTM's cell state
:math:`c_t` (``component=1``) the block output :math:`y_t = o_t \odot \tanh(c_t)` of
the same step is held fixed, so the path :math:`c_t \to y_t` is not counted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import (
    check_choice,
    check_int,
    check_same_dtype,
    check_tensor,
    parameter_dtype,
)
from seqbook.recurrent._sequence import check_one_layer

__all__ = ["unroll_with_probes", "state_gradient_norms", "state_jacobians", "jacobian_norms"]

State: TypeAlias = Any  # a tensor or a tuple of tensors (None: the zero state)
# the inputs: (B, T, D), T >= 1, in the dtype of the module's parameters
Inputs: TypeAlias = Float[Tensor, "B T D"]
# the orders torch.linalg.matrix_norm accepts
_MATRIX_NORM_ORDERS = (2, -2, 1, -1, float("inf"), float("-inf"), "fro", "nuc")


def _as_tuple(state: State) -> tuple[torch.Tensor, ...]:
    return tuple(state) if isinstance(state, (tuple, list)) else (state,)


def _like(template: State, parts: tuple[torch.Tensor, ...]) -> State:
    return parts if isinstance(template, (tuple, list)) else parts[0]


def _check_probe_inputs(module: nn.Module, x: Tensor, state: State) -> None:
    """Checks, with one dry step, the module's protocol (rules 1 and 2 of the module
    docstring), and the module, ``x`` and the state against each other."""
    check_one_layer("module", module, classes=(nn.Module,), what="a torch.nn.Module",
                    batch_first=True, why="one layer and one direction: a backward "
                    "direction cannot be stepped forward in time")
    if x.shape[1] < 1:
        raise ValueError(f"x must have shape (B, T, D) with T >= 1, got {tuple(x.shape)}")
    dtype = parameter_dtype(module)
    if dtype is not None:
        check_same_dtype("x", x, dtype, of="the module's parameters")
    for i, part in enumerate(() if state is None else _as_tuple(state)):
        _check_state_part(f"state[{i}]", part, x, f" with B={x.shape[0]} (the batch of x)")
        check_same_dtype(f"state[{i}]", part, x.dtype, of="x")
    with torch.no_grad():
        out, new_state = module(x[:, :1], state)  # (B, 1, H), the state after one step
    parts = _as_tuple(new_state)
    for i, part in enumerate(parts):
        _check_state_part(f"the module's state[{i}]", part, x, "")
    hidden = parts[0].reshape(out.shape[0], -1)  # (B, H)
    same = out.shape == (x.shape[0], 1, hidden.shape[1]) and torch.allclose(
        out[:, 0], hidden, atol=1e-6, rtol=1e-5)
    if not same:
        raise ValueError("the module's outputs must be its hidden states: outputs[:, -1] must "
                         "equal the first tensor of the final state")


def _check_component(component: int, probes: list[tuple[Tensor, ...]]) -> None:
    """``component`` indexes the tensors of the state (``probes[t]`` has one each)."""
    check_int("component", component, min_value=0)
    if component >= len(probes[0]):
        raise ValueError(f"component must be < {len(probes[0])}, the number of tensors in "
                         f"the state; got {component}")


def _check_state_part(name: str, value: object, x: torch.Tensor, batch: str) -> None:
    part = check_tensor(name, value, ndim=(2, 3), floating=True)
    if part.shape[-2] != x.shape[0] or (part.dim() == 3 and part.shape[0] != 1):
        raise ValueError(f"{name} must have shape (1, B, H) or (B, H){batch}, got "
                         f"{tuple(part.shape)}")


def unroll_with_probes(
    module: nn.Module, x: Inputs, state: State = None
) -> tuple[Float[Tensor, "B T H"], State, list[tuple[Tensor, ...]]]:
    r"""Run ``module`` one step at a time, adding a zero probe to every new state.

    After step :math:`t` the state :math:`s_t` is replaced by :math:`s_t + p_t` with
    :math:`p_t = 0` (one probe per state tensor, requiring gradients). The hidden
    probe is also added to the output of that step, so the gradient of any function
    of ``(outputs, final_state)`` with respect to :math:`p_t` is its partial
    derivative with respect to :math:`s_t` as passed on to later steps, with what
    step :math:`t` computed from :math:`s_t` held fixed (see the module docstring:
    the full derivative for the hidden state; for an LSTM's cell state, the block
    output of the same step held fixed).

    Args:
        module: a recurrent module following the protocol of this module's docstring.
        x: inputs ``(B, T, D)``, ``T >= 1``.
        state: the initial state (``None``: the module's zero state).

    Shapes:
        ``outputs``: ``(B, T, H)``; each probe: the shape of its state tensor.

    Returns:
        ``(outputs, final_state, probes)`` where ``probes[t - 1]`` is the tuple of
        probes of :math:`s_t`, one per state tensor, for ``t = 1, ..., T``.

    Example:
        >>> from seqbook.recurrent import RNN
        >>> outputs, h_T, probes = unroll_with_probes(RNN(2, 3), torch.randn(4, 5, 2))
        >>> len(probes), tuple(probes[0][0].shape), tuple(outputs.shape)
        (5, (1, 4, 3), (4, 5, 3))
    """
    _check_probe_inputs(module, x, state)  # one dry step
    outputs, probes = [], []
    for t in range(x.shape[1]):
        # (B, 1, H), the new state s_t
        out, s_t = module(x[:, t : t + 1], state)
        p_t = tuple(torch.zeros_like(part, requires_grad=True)
                    for part in _as_tuple(s_t))
        # s_t + p_t
        state = _like(s_t, tuple(part + p
                                 for part, p in zip(_as_tuple(s_t), p_t)))
        # h_t + p_t, (B, 1, H)
        outputs.append(out + p_t[0].reshape(out.shape[0], 1, -1))
        probes.append(p_t)
    return torch.cat(outputs, dim=1), state, probes  # (B, T, H)


def _batch_first(gradient: torch.Tensor, batch_size: int) -> torch.Tensor:
    """A (B, H) or (1, B, H) gradient as (B, H)."""
    return gradient.reshape(batch_size, -1) if gradient.dim() == 2 else gradient[0]


def state_gradient_norms(
    module: nn.Module,
    x: Inputs,
    loss_fn: Callable[..., Tensor],
    state: State = None,
    component: int = 0,
) -> Float[Tensor, "B T"]:
    r"""The norm of :math:`\partial L / \partial h_t` for every time step and sequence.

    .. math::
        g_t = \left\lVert \frac{\partial L}{\partial h_t} \right\rVert_2,
        \qquad t = 1, \dots, T,

    through all later steps (see :func:`unroll_with_probes`): the full derivative for
    the hidden state; for an LSTM's cell state (``component=1``), the partial
    derivative with the same step's block output :math:`y_t` held fixed. The
    module's parameter gradients are left untouched.

    Args:
        module: a recurrent module following the protocol of this module's docstring.
        x: inputs ``(B, T, D)``.
        loss_fn: ``loss_fn(outputs, final_state)`` returns the scalar loss.
        state: the initial state (``None`` for zeros).
        component: which tensor of a tuple state to measure (``1`` is an LSTM's
            cell state ``c``).

    Shapes:
        returns ``(B, T)``; column ``t - 1`` belongs to :math:`h_t`.

    Example:
        >>> from seqbook.recurrent import RNN
        >>> x = torch.randn(2, 6, 3)
        >>> norms = state_gradient_norms(RNN(3, 4), x, lambda out, h: h.sum())
        >>> tuple(norms.shape), bool(norms[0, -1] == 2.0)  # dL/dh_T = ones(4)
        ((2, 6), True)
    """
    with torch.enable_grad():
        outputs, final_state, probes = unroll_with_probes(module, x, state)
        _check_component(component, probes)
        loss = loss_fn(outputs, final_state)
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise TypeError("loss_fn must return a scalar tensor")
        chosen = [p[component] for p in probes]
        grads = torch.autograd.grad(loss, chosen, allow_unused=True, materialize_grads=True)
    B = x.shape[0]
    return torch.stack(
        [_batch_first(g, B).norm(dim=-1) for g in grads], dim=1
    )  # (B, T)


def state_jacobians(
    module: nn.Module, x: Inputs, state: State = None, component: int = 0
) -> Float[Tensor, "B T H H"]:
    r"""The Jacobians :math:`\partial h_T / \partial h_t` for every time step.

    .. math::
        J_t = \frac{\partial h_T}{\partial h_t}
            = \prod_{k=t+1}^{T} \frac{\partial h_k}{\partial h_{k-1}},

    computed by back-propagating each of the ``H`` units of :math:`h_T` (so the cost
    is ``H`` backward passes). For an LSTM, ``component=1`` gives
    :math:`\partial c_T / \partial c_t` along the cell states and the later steps,
    with :math:`y_t` held fixed (see :func:`unroll_with_probes`).

    Args:
        module: a recurrent module following the protocol of this module's docstring.
        x: inputs ``(B, T, D)``.
        state: the initial state (``None`` for zeros).
        component: which tensor of a tuple state to measure.

    Shapes:
        returns ``(B, T, H, H)``; ``[:, t - 1]`` is :math:`J_t`, so ``[:, T - 1]`` is
        the identity.

    Example:
        >>> from seqbook.recurrent import RNN
        >>> J = state_jacobians(RNN(2, 3), torch.randn(1, 4, 2))
        >>> tuple(J.shape), torch.allclose(J[0, -1], torch.eye(3))
        ((1, 4, 3, 3), True)
    """
    with torch.enable_grad():
        _, final_state, probes = unroll_with_probes(module, x, state)
        _check_component(component, probes)
        B = x.shape[0]
        h_T = _batch_first(_as_tuple(final_state)[component], B)  # (B, H)
        p = [p_t[component] for p_t in probes]  # p_1, ..., p_T
        rows = []
        for i in range(h_T.shape[1]):
            # The sequences of a batch are independent, so one backward pass of
            # the sum over the batch gives row i of every sequence's Jacobian.
            # (eq-vanish-jacobian), row i
            grads = torch.autograd.grad(h_T[:, i].sum(), p, retain_graph=True,
                allow_unused=True, materialize_grads=True)
            rows.append(torch.stack([_batch_first(g, B) for g in grads], 1))
    return torch.stack(rows, dim=2)  # (B, T, H, H): dh_T[i] / dh_t[j]


def jacobian_norms(
    module: nn.Module,
    x: Inputs,
    state: State = None,
    component: int = 0,
    ord: int | float | str = 2,
) -> Float[Tensor, "B T"]:
    r"""The matrix norm of :math:`\partial h_T / \partial h_t` for every time step.

    .. math::
        \left\lVert \frac{\partial h_T}{\partial h_t} \right\rVert, \qquad t = 1, \dots, T,

    the spectral norm by default (the largest factor by which a perturbation of
    :math:`h_t` can be amplified at time :math:`T`).

    Args:
        module, x, state, component: as for :func:`state_jacobians`.
        ord: any matrix norm order of ``torch.linalg.matrix_norm`` (``2``, ``"fro"``, ...).

    Shapes:
        returns ``(B, T)``.

    Example:
        >>> from seqbook.recurrent import RNN
        >>> norms = jacobian_norms(RNN(2, 3), torch.randn(2, 5, 2))
        >>> tuple(norms.shape), torch.allclose(norms[:, -1], torch.ones(2))
        ((2, 5), True)
    """
    check_choice("ord", ord, _MATRIX_NORM_ORDERS)
    jacobians = state_jacobians(module, x, state, component)  # (B, T, H, H)
    return torch.linalg.matrix_norm(jacobians, ord=ord)  # (B, T)
