r"""An LSTM layer whose backward pass is written by hand, for the benchmark table only.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` LSTM blocks,
``G`` gates (4 with a forget gate, 3 without).

Autograd records a dozen small operations per time step of
:class:`seqbook.recurrent.LSTM` and replays them one by one backwards. Here the
forward pass records only the activations; the backward pass first computes, for all
steps at once, the local derivative of every gate's pre-activation, and then runs the
recursion of BPTT with five small operations and one matrix product per step; the
gradient of ``W_h`` is one product at the end. It computes the same function and the
same gradients as the gate-by-gate layer (``tests/test_benchmarks_fused_lstm.py``)
and is measured against it and ``nn.LSTM`` in ``benchmarks/rows.py``; no chapter
uses it.
"""

from __future__ import annotations

import torch

from seqbook.recurrent import LSTM

__all__ = ["fused_lstm"]


class _LSTMRecurrence(torch.autograd.Function):
    r"""The LSTM's loop over time with its backward pass written by hand (BPTT).

    Inputs: ``pre_x`` ``(T, B, G H)`` (the input part ``W_x x_t + b`` of all gates, in
    the module's gate order ``g, i, (f,) o``), ``h0``, ``c0`` ``(B, H)``, ``W_h``
    ``(G H, H)`` and whether there is a forget gate. Outputs: all block outputs
    ``(T, B, H)`` and the last cell state ``(B, H)``.
    """

    @staticmethod
    def forward(ctx, pre_x, h0, c0, W_h, forget_gate: bool):
        H = W_h.shape[1]
        W_h_T = W_h.T
        h, c = h0, c0
        hs, cs, gs, sigmoids, tanh_cs = [], [c0], [], [], []
        for pre_x_t in pre_x.unbind(0):
            pre = torch.addmm(pre_x_t, h, W_h_T)  # (B, G H)
            g = torch.tanh(pre[:, :H])
            s = torch.sigmoid(pre[:, H:])  # i, (f,) o
            if forget_gate:
                c = torch.addcmul(s[:, H : 2 * H] * c, s[:, :H], g)
            else:
                c = torch.addcmul(c, s[:, :H], g)
            tanh_c = torch.tanh(c)
            h = s[:, -H:] * tanh_c
            hs.append(h)
            cs.append(c)
            gs.append(g)
            sigmoids.append(s)
            tanh_cs.append(tanh_c)
        hs = torch.stack(hs)  # (T, B, H)
        c_T = cs[-1]
        tensors = [torch.stack(v) for v in (cs[:-1], gs, sigmoids, tanh_cs)]
        ctx.forget_gate = forget_gate
        ctx.save_for_backward(h0, W_h, hs, *tensors)
        return hs, c_T

    @staticmethod
    def backward(ctx, d_hs, d_cT):
        h0, W_h, hs, c_prev, g, s, tanh_c = ctx.saved_tensors  # (T, B, .)
        H = W_h.shape[1]
        # local derivatives, all steps at once: d pre / d(what multiplies dL/dc or dL/dy)
        o = s[..., -H:]
        through_h = o * (1 - tanh_c**2)  # dc_t/dy_t route: dL/dc += dL/dy o tanh'(c)
        partners = [g, c_prev, tanh_c] if ctx.forget_gate else [g, tanh_c]
        slope = torch.cat(
            [s[..., :H] * (1 - g**2), torch.cat(partners, -1) * s * (1 - s)], -1
        )  # (T, B, G H): i tanh'(.) for g; g, c_{t-1}, tanh(c_t) times sigmoid'(.)
        forget = s[..., H : 2 * H] if ctx.forget_gate else None
        if d_hs is None:
            d_hs = torch.zeros_like(hs)
        d_pre = torch.empty_like(slope)
        d_c = torch.zeros_like(h0) if d_cT is None else d_cT
        d_h_rec = torch.zeros_like(h0)  # the part of dL/dh_t that comes through h_{t+1}
        n_cell = 3 if ctx.forget_gate else 2  # gates whose gradient starts from dL/dc
        for t in reversed(range(hs.shape[0])):
            d_h = d_hs[t] + d_h_rec
            d_c = torch.addcmul(d_c, d_h, through_h[t])
            torch.mul(torch.cat([d_c] * n_cell + [d_h], 1), slope[t], out=d_pre[t])
            if forget is not None:
                d_c = d_c * forget[t]  # to c_{t-1}
            d_h_rec = d_pre[t] @ W_h  # (B, H)
        h_prev = torch.cat([h0[None], hs[:-1]])  # (T, B, H)
        d_W_h = d_pre.flatten(0, 1).T @ h_prev.flatten(0, 1)  # (G H, H)
        return d_pre, d_h_rec, d_c, d_W_h, None


def fused_lstm(
    lstm: LSTM,
    x: torch.Tensor,
    state: tuple[torch.Tensor, torch.Tensor] | None = None,
) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
    """The same function as ``lstm(x, state)``, with the backward pass written by hand.

    For a one-layer, one-direction :class:`~seqbook.recurrent.LSTM` without
    projection (with or without forget gate and bias) and padding-free batches.

    Args:
        lstm: the layer whose parameters are used (and receive the gradients).
        x: inputs ``(B, T, D)`` (``(T, B, D)`` if not ``lstm.batch_first``).
        state: ``(h_0, c_0)``, ``(1, B, H)`` each, or None for zeros.

    Returns:
        ``(outputs, (h_n, c_n))`` as :meth:`seqbook.recurrent.LSTM.forward` returns them.

    Example:
        >>> lstm = LSTM(3, 4)
        >>> x = torch.randn(2, 5, 3)
        >>> torch.allclose(fused_lstm(lstm, x)[0], lstm(x)[0], atol=1e-6)
        True
    """
    if not isinstance(lstm, LSTM):
        raise TypeError(f"lstm must be a seqbook.recurrent.LSTM, got {type(lstm).__name__}")
    if lstm.num_layers != 1 or lstm.bidirectional or lstm.proj_size:
        raise ValueError(
            "fused_lstm needs a one-layer, one-direction LSTM without projection, got "
            f"num_layers={lstm.num_layers}, bidirectional={lstm.bidirectional}, "
            f"proj_size={lstm.proj_size}"
        )
    # the layer's own checks of x (in its layout) and state, and its zero state
    lstm._check_x(x, "B, T" if lstm.batch_first else "T, B")
    x = x if lstm.batch_first else x.transpose(0, 1)  # (B, T, D)
    B, T, D = x.shape
    ((h0, c0),) = lstm._initial_states(state, B)  # (B, H) each
    kinds = ("W_x", "W_h", "b_")
    W_x, W_h, b = (lstm._stack_gates(lstm._layer_parameters(0, 0), kind) for kind in kinds)
    x_steps = x.transpose(0, 1).reshape(T * B, D)  # time-major rows
    pre_x = torch.addmm(b, x_steps, W_x.T)  # (T B, G H)
    pre_x = pre_x.view(T, B, -1)  # (T, B, G H)
    hs, c_T = _LSTMRecurrence.apply(pre_x, h0, c0, W_h, lstm.forget_gate)
    out = hs.transpose(0, 1) if lstm.batch_first else hs  # (B, T, H) or (T, B, H)
    return out, (hs[-1][None], c_T[None])  # (1, B, H) each
