r"""Long short-term memory, written gate by gate.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` LSTM blocks
(hidden units).

The module follows the formulas of Widrich's lecture (the book's chapter "Long
short-term memory"), with :math:`y_t` the block outputs (the hidden state) and
:math:`c_t` the cell states:

.. math::
    z_t &= g(W_z x_t + R_z y_{t-1} + b_z)      &\text{cell input} \\
    i_t &= \sigma(W_i x_t + R_i y_{t-1} + b_i) &\text{input gate} \\
    f_t &= \sigma(W_f x_t + R_f y_{t-1} + b_f) &\text{forget gate} \\
    c_t &= i_t \odot z_t + f_t \odot c_{t-1}   &\text{cell state} \\
    o_t &= \sigma(W_o x_t + R_o y_{t-1} + b_o) &\text{output gate} \\
    y_t &= o_t \odot h(c_t)                    &\text{block output}

with :math:`g = h = \tanh`. Without a forget gate (``forget_gate=False``) the cell is
the pure integrator of the original LSTM, :math:`c_t = i_t \odot z_t + c_{t-1}`.
``torch.nn.LSTM`` orders its gates ``i, f, g, o`` (its ``g`` is our :math:`z`) and
keeps two biases per gate that only appear as their sum;
:meth:`seqbook.recurrent.LSTM.from_torch` reorders and folds them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from seqbook._checks import check_positive_int, check_real
from seqbook.recurrent._sequence import (
    check_sequence_batch,
    check_state,
    check_step_input,
    padding_mask,
)

__all__ = ["LSTM", "LSTMTrace"]

State = tuple[torch.Tensor, torch.Tensor]

# sigmoid(50) rounds to exactly 1 in float32 and float64: a forget gate pinned open
_PINNED_FORGET_BIAS = 50.0


@dataclass
class LSTMTrace:
    """Everything an :class:`LSTM` computed at every time step, for plotting.

    All fields have shape ``(B, T, H)``; ``forget_gate`` is ``None`` for an LSTM
    without forget gate (its :math:`f_t` is 1). At padding positions (with
    ``lengths``) the states are carried over unchanged and the gates are recorded as
    computed.
    """

    cell_input: torch.Tensor  # z_t
    input_gate: torch.Tensor  # i_t
    forget_gate: torch.Tensor | None  # f_t
    cell_state: torch.Tensor  # c_t
    output_gate: torch.Tensor  # o_t
    outputs: torch.Tensor  # y_t


class _LSTMRecurrence(torch.autograd.Function):
    r"""The LSTM's loop over time with its backward pass written by hand (BPTT).

    Autograd records a dozen small operations per time step and replays them one by
    one backwards. Here the forward pass records only the activations; the backward
    pass first computes, for all steps at once, the local derivative of every gate's
    pre-activation, and then runs the recursion of BPTT with five small operations
    and one matrix product per step; the gradient of ``R`` is one product at the end.

    Inputs: ``pre_x`` ``(T, B, G H)`` (the input part ``W x_t + b`` of all gates, in
    the module's gate order ``z, i, (f,) o``), ``y0``, ``c0`` ``(B, H)``, ``R``
    ``(G H, H)`` and whether there is a forget gate. Outputs: all block outputs
    ``(T, B, H)`` and the last cell state ``(B, H)``.
    """

    @staticmethod
    def forward(ctx, pre_x, y0, c0, R, forget_gate: bool):
        H = R.shape[1]
        R_T = R.T
        y, c = y0, c0
        ys, cs, zs, sigmoids, tanh_cs = [], [c0], [], [], []
        for pre_x_t in pre_x.unbind(0):
            pre = torch.addmm(pre_x_t, y, R_T)  # (B, G H)
            z = torch.tanh(pre[:, :H])  # (eq-lstm-z)
            s = torch.sigmoid(pre[:, H:])  # i, (f,) o
            if forget_gate:
                c = torch.addcmul(s[:, H : 2 * H] * c, s[:, :H], z)  # (eq-lstm-c)
            else:
                c = torch.addcmul(c, s[:, :H], z)  # (eq-lstm-cec)
            tanh_c = torch.tanh(c)
            y = s[:, -H:] * tanh_c  # (eq-lstm-y)
            ys.append(y)
            cs.append(c)
            zs.append(z)
            sigmoids.append(s)
            tanh_cs.append(tanh_c)
        ys = torch.stack(ys)  # (T, B, H)
        c_T = cs[-1]
        tensors = [torch.stack(v) for v in (cs[:-1], zs, sigmoids, tanh_cs)]
        ctx.forget_gate = forget_gate
        ctx.save_for_backward(y0, R, ys, *tensors)
        return ys, c_T

    @staticmethod
    def backward(ctx, d_ys, d_cT):
        y0, R, ys, c_prev, z, s, tanh_c = ctx.saved_tensors  # (T, B, .)
        H = R.shape[1]
        # local derivatives, all steps at once: d pre / d(what multiplies dL/dc or dL/dy)
        o = s[..., -H:]
        through_y = o * (1 - tanh_c**2)  # dc_t/dy_t route: dL/dc += dL/dy o tanh'(c)
        partners = [z, c_prev, tanh_c] if ctx.forget_gate else [z, tanh_c]
        slope = torch.cat(
            [s[..., :H] * (1 - z**2), torch.cat(partners, -1) * s * (1 - s)], -1
        )  # (T, B, G H): i tanh'(.) for z; z, c_{t-1}, tanh(c_t) times sigmoid'(.)
        forget = s[..., H : 2 * H] if ctx.forget_gate else None
        if d_ys is None:
            d_ys = torch.zeros_like(ys)
        d_pre = torch.empty_like(slope)
        d_c = torch.zeros_like(y0) if d_cT is None else d_cT
        d_y_rec = torch.zeros_like(y0)  # the part of dL/dy_t that comes through y_{t+1}
        n_cell = 3 if ctx.forget_gate else 2  # gates whose gradient starts from dL/dc
        for t in reversed(range(ys.shape[0])):
            d_y = d_ys[t] + d_y_rec
            d_c = torch.addcmul(d_c, d_y, through_y[t])
            torch.mul(torch.cat([d_c] * n_cell + [d_y], 1), slope[t], out=d_pre[t])
            if forget is not None:
                d_c = d_c * forget[t]  # to c_{t-1}
            d_y_rec = d_pre[t] @ R  # (B, H)
        y_prev = torch.cat([y0[None], ys[:-1]])  # (T, B, H)
        d_R = d_pre.flatten(0, 1).T @ y_prev.flatten(0, 1)  # (G H, H)
        return d_pre, d_y_rec, d_c, d_R, None


class LSTM(nn.Module):
    r"""One LSTM layer of ``H`` blocks, each a cell (constant error carousel) and gates.

    .. math::
        c_t = i_t \odot z_t + f_t \odot c_{t-1}, \qquad y_t = o_t \odot \tanh(c_t),

    with cell input :math:`z_t`, input gate :math:`i_t`, forget gate :math:`f_t` and
    output gate :math:`o_t` computed from :math:`x_t` and :math:`y_{t-1}` (see the
    module docstring); :math:`y_0 = c_0 = 0` unless a state is given.

    Args:
        input_size: ``D``, features per time step (>= 1).
        hidden_size: ``H``, LSTM blocks (>= 1).
        forget_gate: with a forget gate (the modern LSTM, as ``nn.LSTM``) or
            without (the original LSTM of 1997: :math:`f_t = 1`, a pure integrator).
        input_gate_bias: added to the input gate's initial bias :math:`b_i`
            (whose initial values are uniform in :math:`\pm 1/\sqrt{H}` like all
            parameters); negative values start with the input gates mostly closed.
        batch_first: inputs and outputs are ``(B, T, .)`` if True (the book's
            convention), ``(T, B, .)`` if False.

    Shapes:
        x: ``(B, T, D)``.
        state: a pair ``(y_0, c_0)``, each ``(B, H)``.
        lengths: ``(B,)``.
        outputs: ``(B, T, H)``, the block outputs :math:`y_t` of every step.
        final_state: ``(y_T, c_T)``, each ``(B, H)``.

    Attributes:
        W_z, W_i, W_f, W_o: input weights, ``(H, D)`` each (``W_f``, ``R_f`` and
            ``b_f`` exist only with a forget gate).
        R_z, R_i, R_f, R_o: recurrent weights, ``(H, H)`` each.
        b_z, b_i, b_f, b_o: biases, ``(H,)`` each.

    Example:
        >>> lstm = LSTM(3, 5)
        >>> outputs, (y_T, c_T) = lstm(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), tuple(c_T.shape)
        ((2, 7, 5), (2, 5))
        >>> torch.equal(outputs[:, -1], y_T)
        True
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        forget_gate: bool = True,
        input_gate_bias: float = 0.0,
        batch_first: bool = True,
    ) -> None:
        super().__init__()
        self.input_size = check_positive_int("input_size", input_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        for name, flag in (("forget_gate", forget_gate), ("batch_first", batch_first)):
            if not isinstance(flag, bool):
                raise TypeError(f"{name} must be a bool, got {flag!r}")
        self.forget_gate = forget_gate
        self.input_gate_bias = check_real("input_gate_bias", input_gate_bias)
        if not math.isfinite(self.input_gate_bias):
            raise ValueError(f"input_gate_bias must be finite, got {input_gate_bias}")
        self.batch_first = batch_first
        H, D = hidden_size, input_size
        for gate in self.gate_names:
            setattr(self, f"W_{gate}", nn.Parameter(torch.empty(H, D)))
            setattr(self, f"R_{gate}", nn.Parameter(torch.empty(H, H)))
            setattr(self, f"b_{gate}", nn.Parameter(torch.empty(H)))
        self.reset_parameters()

    @property
    def gate_names(self) -> tuple[str, ...]:
        """Names of the gates in the book's order, ``("z", "i", "f", "o")`` or ``("z", "i", "o")``."""
        return ("z", "i", "f", "o") if self.forget_gate else ("z", "i", "o")

    def reset_parameters(self) -> None:
        r"""Uniform in :math:`\pm 1/\sqrt{H}` (as ``nn.LSTM``), then
        ``input_gate_bias`` added to :math:`b_i`."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)
        with torch.no_grad():
            self.b_i.add_(self.input_gate_bias)

    def extra_repr(self) -> str:
        return (
            f"{self.input_size}, {self.hidden_size}, forget_gate={self.forget_gate}, "
            f"input_gate_bias={self.input_gate_bias}, batch_first={self.batch_first}"
        )

    def _stacked(self, kind: str) -> torch.Tensor:
        """``W``, ``R`` or ``b`` of all gates stacked, so one matmul serves them all."""
        return torch.cat([getattr(self, f"{kind}_{gate}") for gate in self.gate_names])

    def _check_state(self, state: State | None, B: int, like: torch.Tensor) -> State:
        if state is None:
            zeros = like.new_zeros(B, self.hidden_size)  # (B, H)
            return zeros, zeros
        if not isinstance(state, (tuple, list)) or len(state) != 2:
            raise TypeError(f"state must be a pair (y_0, c_0) of tensors, got {type(state).__name__}")
        for name, tensor in zip(("state[0] (y_0)", "state[1] (c_0)"), state):
            check_state(name, tensor, B, self.hidden_size)
        return state[0], state[1]

    def _step(self, pre_x: torch.Tensor, y_prev: torch.Tensor, c_prev: torch.Tensor, R: torch.Tensor):
        """One step given the input part ``W x_t + b`` of all gates ``(B, G H)``."""
        pre = pre_x + y_prev @ R.T  # (B, G H)
        parts = dict(zip(self.gate_names, pre.chunk(len(self.gate_names), dim=1)))
        z = torch.tanh(parts["z"])  # (eq-lstm-z)
        i = torch.sigmoid(parts["i"])  # (eq-lstm-i)
        if self.forget_gate:
            f = torch.sigmoid(parts["f"])  # (eq-lstm-f)
            c = i * z + f * c_prev  # (eq-lstm-c)
        else:
            f = None
            c = i * z + c_prev  # (eq-lstm-cec)
        o = torch.sigmoid(parts["o"])  # (eq-lstm-o)
        y = o * torch.tanh(c)  # (eq-lstm-y)
        return y, c, (z, i, f, o)

    def cell(self, x_t: torch.Tensor, state: State) -> State:
        r"""One time step: :math:`(y_{t-1}, c_{t-1}) \mapsto (y_t, c_t)`.

        Args:
            x_t: the input of this step, ``(B, D)``.
            state: the pair :math:`(y_{t-1}, c_{t-1})`, each ``(B, H)``.

        Returns:
            :math:`(y_t, c_t)`, each ``(B, H)``.

        Example:
            >>> lstm = LSTM(2, 3)
            >>> zeros = torch.zeros(4, 3)
            >>> y, c = lstm.cell(torch.zeros(4, 2), (zeros, zeros))
            >>> tuple(y.shape), tuple(c.shape)
            ((4, 3), (4, 3))
        """
        check_step_input(x_t, self.input_size)
        if state is None:
            raise TypeError("state must be a pair (y_prev, c_prev) of tensors, got None")
        y_prev, c_prev = self._check_state(state, x_t.shape[0], x_t)
        pre_x = x_t @ self._stacked("W").T + self._stacked("b")  # (B, G H)
        y, c, _ = self._step(pre_x, y_prev, c_prev, self._stacked("R"))
        return y, c

    def _run(self, x, state, lengths, record: bool):
        x = check_sequence_batch(x, self.input_size, self.batch_first)  # (B, T, D)
        B, T, _ = x.shape
        y, c = self._check_state(state, B, x)
        mask = padding_mask(lengths, B, T, x.device)  # (B, T, 1) or None
        R = self._stacked("R")  # (G H, H)
        # the input part of every gate for all t at once; unbind so that the
        # backward pass assembles its gradient once, not once per step
        pre_xs = (x @ self._stacked("W").T + self._stacked("b")).unbind(1)  # T x (B, G H)
        outputs, cells, gates = [], [], []
        for t in range(T):
            y_new, c_new, step_gates = self._step(pre_xs[t], y, c, R)
            if mask is not None:  # padding: keep the old state, output zeros
                y = torch.where(mask[:, t], y_new, y)
                c = torch.where(mask[:, t], c_new, c)
                outputs.append(y_new * mask[:, t])
            else:
                y, c = y_new, c_new
                outputs.append(y)
            if record:
                cells.append(c)
                gates.append(step_gates)
        out = torch.stack(outputs, dim=1)  # (B, T, H)
        trace = None
        if record:
            z, i, f, o = (
                None if g[0] is None else torch.stack(g, dim=1)  # (B, T, H)
                for g in zip(*gates)
            )
            trace = LSTMTrace(z, i, f, torch.stack(cells, dim=1), o, out)  # (B, T, H)
        return out, (y, c), trace

    def forward(
        self,
        x: torch.Tensor,
        state: State | None = None,
        lengths: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, State]:
        """Run the LSTM over a batch of sequences.

        Args:
            x: inputs, ``(B, T, D)`` (or ``(T, B, D)`` if ``batch_first=False``),
                ``T >= 1``.
            state: initial ``(y_0, c_0)``, each ``(B, H)``; zeros if None.
            lengths: optional ``(B,)`` integer lengths in ``[0, T]`` of padded
                sequences: each sequence's state stops changing after its last real
                step and the outputs at padding positions are zeros (as
                ``pack_padded_sequence`` gives with ``nn.LSTM``).

        Returns:
            ``(outputs, (y_T, c_T))``: all block outputs ``(B, T, H)`` (``(T, B, H)``
            if not batch-first) and the final state, each ``(B, H)``.
        """
        out, final, _ = self._run(x, state, lengths, record=False)
        if not self.batch_first:
            out = out.transpose(0, 1)  # (T, B, H)
        return out, final


    def fused_forward(
        self, x: torch.Tensor, state: State | None = None
    ) -> tuple[torch.Tensor, State]:
        """The same function as :meth:`forward`, with the backward pass written by hand.

        The loop over time runs without autograd's bookkeeping and the gradient is
        back-propagated through time by the LSTM's own BPTT equations, written out
        in one ``torch.autograd.Function``; on a CPU a forward and backward pass
        is faster than autograd through the gate-by-gate version (measured in
        ``benchmarks/results.md``). Outputs and gradients equal :meth:`forward`'s
        (tested). No ``lengths``: for padded batches call :meth:`forward`.

        Example:
            >>> lstm = LSTM(3, 4)
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(lstm.fused_forward(x)[0], lstm(x)[0], atol=1e-6)
            True
        """
        x = check_sequence_batch(x, self.input_size, self.batch_first)  # (B, T, D)
        y0, c0 = self._check_state(state, x.shape[0], x)
        B, T, D = x.shape
        x_steps = x.transpose(0, 1).reshape(T * B, D)  # time-major rows
        pre_x = torch.addmm(self._stacked("b"), x_steps, self._stacked("W").T)  # (T B, G H)
        pre_x = pre_x.view(T, B, -1)
        ys, c_T = _LSTMRecurrence.apply(pre_x, y0, c0, self._stacked("R"), self.forget_gate)
        y_T = ys[-1]
        out = ys.transpose(0, 1) if self.batch_first else ys  # (B, T, H) or (T, B, H)
        return out, (y_T, c_T)

    def trace(
        self,
        x: torch.Tensor,
        state: State | None = None,
        lengths: torch.Tensor | None = None,
    ) -> LSTMTrace:
        """Run like :meth:`forward` and return every cell state and gate activation.

        The fields of the returned :class:`LSTMTrace` are batch-first ``(B, T, H)``
        whatever ``batch_first`` is.

        Example:
            >>> lstm = LSTM(2, 3, forget_gate=False)
            >>> trace = lstm.trace(torch.randn(1, 6, 2))
            >>> tuple(trace.cell_state.shape), trace.forget_gate is None
            ((1, 6, 3), True)
        """
        return self._run(x, state, lengths, record=True)[2]

    @classmethod
    def from_torch(cls, lstm: nn.LSTM, forget_gate: bool = True) -> "LSTM":
        """An :class:`LSTM` computing the same function as a one-layer ``nn.LSTM``.

        ``nn.LSTM`` stacks its gates in the order ``i, f, g, o`` in
        ``weight_ih_l0`` ``(4H, D)``, ``weight_hh_l0`` ``(4H, H)`` and two bias
        vectors; their ``g`` is our cell input ``z``, and the two biases are summed
        into one. Same device and dtype.

        Args:
            lstm: a one-layer, unidirectional ``nn.LSTM`` without projection.
            forget_gate: ``False`` copies into an LSTM without forget gate; then
                ``lstm``'s forget gate must be pinned at exactly 1 (zero forget
                weights and a bias whose sigmoid is 1, as :meth:`to_torch` makes it).

        Example:
            >>> reference = nn.LSTM(3, 4, batch_first=True)
            >>> ours = LSTM.from_torch(reference)
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], reference(x)[0], atol=1e-6)
            True
        """
        if not isinstance(lstm, nn.LSTM):
            raise TypeError(f"lstm must be a torch.nn.LSTM, got {type(lstm).__name__}")
        if lstm.num_layers != 1 or lstm.bidirectional or lstm.proj_size:
            raise ValueError(
                "lstm must have num_layers=1, bidirectional=False and proj_size=0, got "
                f"num_layers={lstm.num_layers}, bidirectional={lstm.bidirectional}, "
                f"proj_size={lstm.proj_size}"
            )
        if not isinstance(forget_gate, bool):
            raise TypeError(f"forget_gate must be a bool, got {forget_gate!r}")
        weight = lstm.weight_ih_l0
        if lstm.bias:
            bias = lstm.bias_ih_l0 + lstm.bias_hh_l0  # (4H,)
        else:
            bias = torch.zeros_like(weight[:, 0])  # (4H,)
        torch_order = dict(zip("ifzo", range(4)))  # torch's g is our z
        W_ih, W_hh = lstm.weight_ih_l0.chunk(4), lstm.weight_hh_l0.chunk(4)
        b = bias.chunk(4)
        if not forget_gate:
            k = torch_order["f"]
            pinned = (
                not W_ih[k].any() and not W_hh[k].any() and bool(torch.all(torch.sigmoid(b[k]) == 1))
            )
            if not pinned:
                raise ValueError(
                    "forget_gate=False needs an nn.LSTM whose forget gate is exactly 1 "
                    "(zero forget-gate weights, sigmoid(bias) == 1), as LSTM.to_torch() "
                    "makes it"
                )
        ours = cls(lstm.input_size, lstm.hidden_size, forget_gate, batch_first=lstm.batch_first)
        ours.to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            for gate in ours.gate_names:
                k = torch_order[gate]
                getattr(ours, f"W_{gate}").copy_(W_ih[k])
                getattr(ours, f"R_{gate}").copy_(W_hh[k])
                getattr(ours, f"b_{gate}").copy_(b[k])
        return ours

    def to_torch(self) -> nn.LSTM:
        r"""A ``torch.nn.LSTM`` computing the same function (same device and dtype).

        PyTorch's fused LSTM is several times faster than this module's loop over
        time, so the book trains with it and copies the result back with
        :meth:`from_torch`. ``nn.LSTM`` always has a forget gate; for an LSTM
        without one it is pinned at :math:`f_t = 1`: zero forget-gate weights and a
        bias of 50 (:math:`\sigma(50)` is exactly 1 in float32 and float64), with
        gradient hooks that zero the gradient of those rows, so that training the
        returned module (without weight decay) keeps :math:`f_t = 1`.

        Example:
            >>> ours = LSTM(3, 4, forget_gate=False)
            >>> fused = ours.to_torch()
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], fused(x)[0], atol=1e-6)
            True
        """
        H = self.hidden_size
        W = self.W_z
        fused = nn.LSTM(self.input_size, H, batch_first=self.batch_first)
        fused.to(device=W.device, dtype=W.dtype)
        torch_order = dict(zip("ifzo", range(4)))
        with torch.no_grad():
            fused.bias_hh_l0.zero_()
            for gate in "ifzo":
                rows = slice(torch_order[gate] * H, (torch_order[gate] + 1) * H)
                if gate == "f" and not self.forget_gate:
                    fused.weight_ih_l0[rows] = 0.0
                    fused.weight_hh_l0[rows] = 0.0
                    fused.bias_ih_l0[rows] = _PINNED_FORGET_BIAS
                    continue
                fused.weight_ih_l0[rows] = getattr(self, f"W_{gate}")
                fused.weight_hh_l0[rows] = getattr(self, f"R_{gate}")
                fused.bias_ih_l0[rows] = getattr(self, f"b_{gate}")
        if not self.forget_gate:
            keep = torch.ones(4 * H, device=W.device, dtype=W.dtype)  # (4H,)
            keep[H : 2 * H] = 0.0
            fused.weight_ih_l0.register_hook(lambda g: g * keep[:, None])
            fused.weight_hh_l0.register_hook(lambda g: g * keep[:, None])
            fused.bias_ih_l0.register_hook(lambda g: g * keep)
            fused.bias_hh_l0.register_hook(lambda g: g * keep)
        return fused
