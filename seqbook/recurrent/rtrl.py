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

import torch

from seqbook._checks import check_tensor
from seqbook.recurrent._sequence import check_like, check_state
from seqbook.recurrent.rnn import RNN

__all__ = ["RTRLResult", "rtrl"]


@dataclass
class RTRLResult:
    """The outcome of :func:`rtrl`."""

    loss: torch.Tensor  # the summed step losses (detached scalar)
    grads: dict[str, torch.Tensor]  # dL/dW_xh, dL/dW_hh, dL/db_h (no b_h without bias)
    h_T: torch.Tensor  # (1, B, H), the last state, shaped like RNN's h_n
    state_bytes: int  # bytes of h and the sensitivity tensors carried between steps


def rtrl(
    rnn: RNN,
    x: torch.Tensor,
    step_loss: Callable[[int, torch.Tensor], torch.Tensor | None],
    h0: torch.Tensor | None = None,
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
    if not isinstance(rnn, RNN):
        raise TypeError(f"rnn must be a seqbook.recurrent.RNN, got {type(rnn).__name__}")
    if rnn.num_layers != 1 or rnn.bidirectional:
        raise ValueError(
            "rnn must have num_layers=1 and bidirectional=False (RTRL here is for one "
            f"layer), got num_layers={rnn.num_layers}, bidirectional={rnn.bidirectional}"
        )
    check_tensor("x", x, ndim=3, floating=True)
    B, T, D = x.shape
    H = rnn.hidden_size
    if T == 0:
        raise ValueError(f"x must have at least one time step, got shape {tuple(x.shape)}")
    if D != rnn.input_size:
        raise ValueError(
            f"x must have {rnn.input_size} features (input_size), got shape {tuple(x.shape)}"
        )
    check_like("x", x, rnn.W_hh)
    if not callable(step_loss):
        raise TypeError(f"step_loss must be callable as step_loss(t, h_t), got {step_loss!r}")
    if h0 is not None:
        check_state("h0", h0, (1, B, H), rnn.W_hh, "(num_layers * num_directions, B, H)")

    W_xh, W_hh = rnn.W_xh.detach(), rnn.W_hh.detach()
    b_h = rnn.b_h.detach() if rnn.bias else x.new_zeros(H)  # (H,)
    h = x.new_zeros(B, H) if h0 is None else h0[0].detach()  # (B, H)
    S_xh = x.new_zeros(B, H, H, D)  # dh_t/dW_xh
    S_hh = x.new_zeros(B, H, H, H)  # dh_t/dW_hh
    S_b = x.new_zeros(B, H, H) if rnn.bias else None  # dh_t/db_h
    names = ("W_xh", "W_hh", "b_h") if rnn.bias else ("W_xh", "W_hh")
    grads = {name: torch.zeros_like(getattr(rnn, name)) for name in names}
    total = x.new_zeros(())
    with torch.no_grad():
        for t in range(T):
            x_t = x[:, t].detach()  # (B, D)
            a_t = x_t @ W_xh.T + h @ W_hh.T + b_h  # (B, H)
            if rnn.nonlinearity == "tanh":
                h_t = torch.tanh(a_t)
                f_prime = 1 - h_t**2  # (B, H)
            else:
                h_t = torch.relu(a_t)
                f_prime = (a_t > 0).to(a_t.dtype)  # (B, H), as autograd's relu
            # W_hh S_{t-1}: the H^4 term, (H, H) times (B, H, H*H)
            S_hh = torch.einsum("km,bmij->bkij", W_hh, S_hh)  # (B, H, H, H)
            S_xh = torch.einsum("km,bmij->bkij", W_hh, S_xh)  # (B, H, H, D)
            if S_b is not None:
                S_b = torch.einsum("km,bmi->bki", W_hh, S_b)  # (B, H, H)
            # the direct terms delta_ki * (h_{t-1,j}, x_{t,j}, 1), on the k = i diagonal
            S_hh.diagonal(dim1=1, dim2=2).add_(h.unsqueeze(-1))  # view (B, H_j, H_k)
            S_xh.diagonal(dim1=1, dim2=2).add_(x_t.unsqueeze(-1))  # view (B, D_j, H_k)
            if S_b is not None:
                S_b.diagonal(dim1=1, dim2=2).add_(1.0)  # view (B, H_k)
            S_hh.mul_(f_prime[:, :, None, None])  # (eq-rnn-rtrl)
            S_xh.mul_(f_prime[:, :, None, None])
            if S_b is not None:
                S_b.mul_(f_prime[:, :, None])
            h = h_t
            with torch.enable_grad():
                h_leaf = h.clone().requires_grad_(True)
                loss = step_loss(t, h_leaf)
                if loss is not None:
                    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
                        raise TypeError("step_loss must return a scalar tensor or None")
                    loss.backward()
            if loss is not None and h_leaf.grad is not None:
                g = h_leaf.grad  # (B, H): d l_t / d h_t
                grads["W_hh"] += torch.einsum("bk,bkij->ij", g, S_hh)  # (eq-rnn-rtrl-grad)
                grads["W_xh"] += torch.einsum("bk,bkij->ij", g, S_xh)
                if S_b is not None:
                    grads["b_h"] += torch.einsum("bk,bki->i", g, S_b)
                total = total + loss.detach()
    carried = [s for s in (h, S_xh, S_hh, S_b) if s is not None]
    state_bytes = sum(s.numel() * s.element_size() for s in carried)
    return RTRLResult(loss=total, grads=grads, h_T=h[None], state_bytes=state_bytes)  # (1, B, H)
