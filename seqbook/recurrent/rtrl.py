r"""Real-time recurrent learning (Williams & Zipser, 1989) for the Elman RNN.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units.

Instead of storing the past and back-propagating through it, RTRL carries forward
the **sensitivity** of the state to every weight,
:math:`S_t = \partial h_t / \partial \theta`, one ``H``-vector per weight. With
:math:`a_t = W_{xh} x_t + W_{hh} h_{t-1} + b_h` and :math:`h_t = f(a_t)`,

.. math::
    S_t = \operatorname{diag}(f'(a_t))
          \left( \frac{\partial a_t}{\partial \theta}\bigg|_{h_{t-1}}
                 + W_{hh} S_{t-1} \right), \qquad S_0 = 0,

and the gradient of the losses :math:`\ell_t(h_t)` is accumulated as they occur,
:math:`\nabla_\theta L = \sum_t (\partial \ell_t / \partial h_t) S_t`. For
:math:`W_{hh}` alone, :math:`S_t` has :math:`H^3` entries and the product
:math:`W_{hh} S_{t-1}` costs :math:`H^4` multiplications per step, whatever ``T`` is:
memory independent of the sequence length, time :math:`O(H^4)` per step.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import check_same_dtype
from seqbook.recurrent._sequence import check_one_layer
from seqbook.recurrent.rnn import RNN

__all__ = ["RTRLResult", "rtrl", "rtrl_sensitivity"]

# what multiplies the Kronecker delta in (eq-rnn-rtrl): x_t (B, D) for W_xh, h_{t-1}
# (B, H) for W_hh, a zero-dimensional 1 for b_h
Direct: TypeAlias = Float[Tensor, "B *J"] | Float[Tensor, ""]  # noqa: F821


@dataclass
class RTRLResult:
    """The outcome of :func:`rtrl`."""

    loss: torch.Tensor  # the summed step losses (detached scalar)
    grads: dict[str, torch.Tensor]  # dL/dW_xh, dL/dW_hh, dL/db_h (no b_h without bias)
    h_T: torch.Tensor  # (1, B, H), the last state, shaped like RNN's h_n
    state_bytes: int  # bytes of h and the sensitivity tensors carried between steps


def rtrl(
    rnn: RNN,
    x: Float[Tensor, "B T {rnn.input_size}"],
    step_loss: Callable[[int, Tensor], Tensor | None],
    h0: Float[Tensor, "1 B {rnn.hidden_size}"] | None = None,
) -> RTRLResult:
    r"""Gradients of an Elman RNN's losses, computed forward in time by RTRL.

    .. math::
        S^{W_{hh}}_{t,kij} = f'(a_{t,k}) \Big( \delta_{ki} h_{t-1,j}
            + \sum_m W_{hh,km} S^{W_{hh}}_{t-1,mij} \Big),
        \qquad
        \frac{\partial L}{\partial W_{hh,ij}} = \sum_t \sum_k
            \frac{\partial \ell_t}{\partial h_{t,k}} S^{W_{hh}}_{t,kij},

    and likewise for :math:`W_{xh}` (with :math:`x_{t,j}` in place of
    :math:`h_{t-1,j}`) and :math:`b_h` (with 1). Nothing of the past is stored.

    Args:
        rnn: the one-layer, one-direction :class:`~seqbook.recurrent.RNN` whose
            gradients are computed (its ``.grad`` fields are not touched);
            ``batch_first`` is ignored, ``x`` is always batch-first.
        x: inputs ``(B, T, D)``, ``T >= 1``.
        step_loss: ``step_loss(t, h_t)`` returns the scalar loss incurred at step
            ``t`` (0-based) as a function of ``h_t`` ``(B, H)``, or ``None`` for no
            loss at that step. It is back-propagated through ``h_t`` only, so a
            readout layer inside it receives ordinary ``.grad`` gradients.
        h0: initial state ``(1, B, H)`` as for the RNN (held constant), zeros if None.

    Shapes:
        sensitivities: ``(B, H, H, D)``, ``(B, H, H, H)``, ``(B, H, H)`` for
        ``W_xh``, ``W_hh``, ``b_h``; entry ``[b, k, i, j]`` is
        :math:`\partial h_{t,k} / \partial W_{ij}`.

    Returns:
        An :class:`RTRLResult` with the loss, the gradients (same shapes as the
        parameters; no ``b_h`` for an RNN without bias), the final state and the
        memory the method carries.

    Example:
        >>> rnn = RNN(2, 3)
        >>> x = torch.randn(4, 5, 2)
        >>> result = rtrl(rnn, x, lambda t, h: h.sum() if t == 4 else None)
        >>> rnn(x)[1].sum().backward()
        >>> torch.allclose(result.grads["W_hh"], rnn.W_hh.grad, atol=1e-5)
        True
    """
    W_xh, W_hh, b_h, x, h = _detached_inputs(rnn, x, h0)  # no autograd graph
    S, grads = _zero_sensitivities(rnn, x)  # S[name]: dh_t / d name, S_0 = 0
    total = x.new_zeros(())
    for t in range(x.shape[1]):
        a_t = x[:, t] @ W_xh.T + h @ W_hh.T + b_h  # (B, H)  (eq-rnn-elman)
        direct = {"W_xh": x[:, t], "W_hh": h, "b_h": x.new_ones(())}
        h, f_prime = _f_and_slope(a_t, rnn.nonlinearity)  # f(a_t), f'(a_t)
        S = {n: rtrl_sensitivity(S[n], W_hh, direct[n], f_prime) for n in S}
        loss, g = _step_gradient(step_loss, t, h)  # g = d l_t / d h_t, (B, H)
        if loss is not None and g is not None:  # (eq-rnn-rtrl-grad):
            grads = {n: grads[n] + _gradient_term(g, S[n]) for n in S}
            total = total + loss.detach()
    state_bytes = sum(s.numel() * s.element_size() for s in (h, *S.values()))
    return RTRLResult(loss=total, grads=grads, h_T=h[None],
                      state_bytes=state_bytes)


def _detached_inputs(
    rnn: RNN, x: Tensor, h0: Tensor | None
) -> tuple[Tensor, Tensor, Tensor, Tensor, Tensor]:
    """The checks of :func:`rtrl` that its types cannot make; then ``W_xh``, ``W_hh``,
    ``b_h`` (0 without bias), ``x`` and the initial state ``(B, H)``, detached."""
    check_one_layer("rnn", rnn, classes=(RNN,), what="a seqbook.recurrent.RNN",
                    why="RTRL here is for one layer")
    check_same_dtype("x", x, rnn.W_xh.dtype, of="the parameters of rnn")
    if x.shape[1] < 1:
        raise ValueError(f"x must have shape (B, T, rnn.input_size) with T >= 1, got "
                         f"{tuple(x.shape)}")
    b_h = rnn.b_h if rnn.b_h is not None else x.new_zeros(rnn.hidden_size)  # (H,)
    h = x.new_zeros(x.shape[0], rnn.hidden_size) if h0 is None else h0[0]  # (B, H)
    return rnn.W_xh.detach(), rnn.W_hh.detach(), b_h.detach(), x.detach(), h.detach()


def _zero_sensitivities(
    rnn: RNN, x: torch.Tensor
) -> tuple[dict[str, torch.Tensor], dict[str, torch.Tensor]]:
    """``S_0 = 0`` for every parameter, ``(B, H, *parameter.shape)``, and zero
    gradients, shaped like the parameters."""
    B, H = x.shape[0], rnn.hidden_size
    S = {"W_xh": x.new_zeros(B, H, H, rnn.input_size), "W_hh": x.new_zeros(B, H, H, H)}
    if rnn.bias:
        S["b_h"] = x.new_zeros(B, H, H)
    return S, {name: torch.zeros_like(getattr(rnn, name)) for name in S}


def _f_and_slope(a_t: torch.Tensor, nonlinearity: str) -> tuple[torch.Tensor, torch.Tensor]:
    """:math:`f(a_t)` and :math:`f'(a_t)` for ``tanh`` or ``relu``, ``(B, H)`` each."""
    if nonlinearity == "tanh":
        h_t = torch.tanh(a_t)
        return h_t, 1 - h_t**2
    return torch.relu(a_t), (a_t > 0).to(a_t.dtype)  # as autograd's relu


def rtrl_sensitivity(
    S: Float[Tensor, "B H H *J"],
    W_hh: Float[Tensor, "H H"],
    direct: Direct,
    f_prime: Float[Tensor, "B H"],
) -> Float[Tensor, "B H H *J"]:
    r"""One step of the RTRL sensitivity of one parameter, (eq-rnn-rtrl) in place.

    .. math::
        S_{t,kij} = f'(a_{t,k}) \Big( \delta_{ki}\, d_{j}
            + \sum_m W_{hh,km} S_{t-1,mij} \Big),

    with :math:`d = x_t` for :math:`W_{xh}`, :math:`h_{t-1}` for :math:`W_{hh}` and 1
    for the bias (no index :math:`j`).

    Args:
        S: :math:`S_{t-1}`, ``(B, H, H, J)`` for a weight matrix, ``(B, H, H)`` for
            the bias; overwritten.
        W_hh: the recurrent weights ``(H, H)``.
        direct: :math:`d`, ``(B, J)``, or a zero-dimensional 1 for the bias.
        f_prime: :math:`f'(a_t)`, ``(B, H)``.

    Returns:
        :math:`S_t`, shaped like ``S``.

    Example:
        >>> S = torch.zeros(1, 2, 2)               # the bias of an RNN with H = 2
        >>> rtrl_sensitivity(S, torch.eye(2), torch.tensor(1.0), torch.ones(1, 2))[0]
        tensor([[1., 0.],
                [0., 1.]])
    """
    four = S.dim() == 4  # a weight matrix (B, H, H, J), else the bias (B, H, H)
    # W_hh S_{t-1}
    S = torch.einsum("km,bmij->bkij" if four else "km,bmi->bki", W_hh, S)
    direct = direct.unsqueeze(-1) if four else direct  # delta_ki * direct_j:
    # the k = i diagonal, a view (B, J, H_k)
    S.diagonal(dim1=1, dim2=2).add_(direct)
    # (eq-rnn-rtrl)
    return S.mul_(f_prime[:, :, None, None] if four else f_prime[:, :, None])


def _step_gradient(
    step_loss: Callable, t: int, h: torch.Tensor
) -> tuple[torch.Tensor | None, torch.Tensor | None]:
    """The loss ``step_loss(t, h_t)`` and its gradient with respect to ``h_t``."""
    with torch.enable_grad():
        h_leaf = h.clone().requires_grad_(True)
        loss = step_loss(t, h_leaf)
        if loss is None:
            return None, None
        if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
            raise TypeError("step_loss must return a scalar tensor or None")
        loss.backward()
    return loss, h_leaf.grad


def _gradient_term(g: torch.Tensor, S: torch.Tensor) -> torch.Tensor:
    """One step's term of (eq-rnn-rtrl-grad): ``sum_k g_k S_{kij}``."""
    return torch.einsum("bk,bkij->ij" if S.dim() == 4 else "bk,bki->i", g, S)
