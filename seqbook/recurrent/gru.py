r"""The gated recurrent unit, written from its update rule.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units.

Equations (3.3)-(3.6) of the source notes (the book's chapter "Gated recurrent
units"), which are also those of ``torch.nn.GRU``:

.. math::
    z_t &= \sigma(W_{iz} x_t + W_{hz} h_{t-1} + b_z)  &\text{update gate} \\
    r_t &= \sigma(W_{ir} x_t + W_{hr} h_{t-1} + b_r)  &\text{reset gate} \\
    n_t &= \tanh\big(W_{in} x_t + b_{in} + r_t \odot (W_{hn} h_{t-1} + b_{hn})\big)
        &\text{candidate} \\
    h_t &= (1 - z_t) \odot n_t + z_t \odot h_{t-1}  &\text{new state}

The notes write two biases for each gate, :math:`b_{iz} + b_{hz}` and
:math:`b_{ir} + b_{hr}`, which only appear as sums; the module keeps one, ``b_z``
and ``b_r``. The candidate's two biases differ in kind (the reset gate multiplies
:math:`b_{hn}` but not :math:`b_{in}`), so both are kept.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import nn

from seqbook._checks import check_positive_int
from seqbook.recurrent._sequence import (
    check_sequence_batch,
    check_state,
    check_step_input,
    padding_mask,
    run_masked,
)

__all__ = ["GRU", "GRUTrace"]


@dataclass
class GRUTrace:
    """Everything a :class:`GRU` computed at every time step, for plotting.

    All fields have shape ``(B, T, H)``. At padding positions (with ``lengths``) the
    state is carried over unchanged and the gates are recorded as computed.
    """

    update_gate: torch.Tensor  # z_t
    reset_gate: torch.Tensor  # r_t
    candidate: torch.Tensor  # n_t
    hidden: torch.Tensor  # h_t


class GRU(nn.Module):
    r"""One GRU layer: a hidden state updated by a gated convex combination.

    .. math::
        h_t = (1 - z_t) \odot n_t + z_t \odot h_{t-1},

    with update gate :math:`z_t`, reset gate :math:`r_t` and candidate :math:`n_t`
    (see the module docstring); :math:`h_0 = 0` unless given. An update gate near 1
    keeps the old state, near 0 replaces it by the candidate.

    Args:
        input_size: ``D``, features per time step (>= 1).
        hidden_size: ``H``, hidden units (>= 1).
        batch_first: inputs and outputs are ``(B, T, .)`` if True (the book's
            convention), ``(T, B, .)`` if False.

    Shapes:
        x: ``(B, T, D)``.
        h0: ``(B, H)``.
        lengths: ``(B,)``.
        outputs: ``(B, T, H)``, the hidden states of every step.
        h_T: ``(B, H)``.

    Attributes:
        W_iz, W_ir, W_in: input weights, ``(H, D)`` each.
        W_hz, W_hr, W_hn: recurrent weights, ``(H, H)`` each.
        b_z, b_r, b_in, b_hn: biases, ``(H,)`` each.

    Example:
        >>> gru = GRU(3, 5)
        >>> outputs, h_T = gru(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), torch.equal(outputs[:, -1], h_T)
        ((2, 7, 5), True)
    """

    def __init__(self, input_size: int, hidden_size: int, batch_first: bool = True) -> None:
        super().__init__()
        self.input_size = check_positive_int("input_size", input_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first must be a bool, got {batch_first!r}")
        self.batch_first = batch_first
        H, D = hidden_size, input_size
        for gate in "zrn":
            setattr(self, f"W_i{gate}", nn.Parameter(torch.empty(H, D)))
            setattr(self, f"W_h{gate}", nn.Parameter(torch.empty(H, H)))
        self.b_z = nn.Parameter(torch.empty(H))
        self.b_r = nn.Parameter(torch.empty(H))
        self.b_in = nn.Parameter(torch.empty(H))
        self.b_hn = nn.Parameter(torch.empty(H))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform in :math:`\\pm 1/\\sqrt{H}`, the initialisation of ``nn.GRU``."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    def extra_repr(self) -> str:
        return f"{self.input_size}, {self.hidden_size}, batch_first={self.batch_first}"

    def _input_parts(self, x: torch.Tensor) -> torch.Tensor:
        """``W_iz x + b_z``, ``W_ir x + b_r``, ``W_in x + b_in`` side by side."""
        W = torch.cat([self.W_iz, self.W_ir, self.W_in])  # (3H, D)
        b = torch.cat([self.b_z, self.b_r, self.b_in])  # (3H,)
        return x @ W.T + b  # (..., 3H)

    def _step(self, pre_x: torch.Tensor, h_prev: torch.Tensor, W_h: torch.Tensor):
        """One step given the input parts ``(B, 3H)`` and ``W_h`` = [W_hz; W_hr; W_hn]."""
        H = self.hidden_size
        pre_h = h_prev @ W_h.T  # (B, 3H)
        z = torch.sigmoid(pre_x[:, :H] + pre_h[:, :H])  # (eq-gru-z)
        r = torch.sigmoid(pre_x[:, H : 2 * H] + pre_h[:, H : 2 * H])  # (eq-gru-r)
        n = torch.tanh(pre_x[:, 2 * H :] + r * (pre_h[:, 2 * H :] + self.b_hn))  # (eq-gru-n)
        h = (1 - z) * n + z * h_prev  # (eq-gru-h)
        return h, (z, r, n)

    def cell(self, x_t: torch.Tensor, h_prev: torch.Tensor) -> torch.Tensor:
        r"""One time step, :math:`h_{t-1} \mapsto h_t`.

        Args:
            x_t: the input of this step, ``(B, D)``.
            h_prev: the previous hidden state :math:`h_{t-1}`, ``(B, H)``.

        Returns:
            :math:`h_t`, ``(B, H)``.

        Example:
            >>> gru = GRU(2, 3)
            >>> gru.cell(torch.zeros(4, 2), torch.zeros(4, 3)).shape
            torch.Size([4, 3])
        """
        check_step_input(x_t, self.input_size)
        check_state("h_prev", h_prev, x_t.shape[0], self.hidden_size)
        W_h = torch.cat([self.W_hz, self.W_hr, self.W_hn])  # (3H, H)
        return self._step(self._input_parts(x_t), h_prev, W_h)[0]  # (B, H)

    def _run(self, x, h0, lengths, record: bool):
        x = check_sequence_batch(x, self.input_size, self.batch_first)  # (B, T, D)
        B, T, _ = x.shape
        h = x.new_zeros(B, self.hidden_size) if h0 is None else h0  # (B, H)
        check_state("h0", h, B, self.hidden_size)
        mask = padding_mask(lengths, B, T, x.device)  # (B, T, 1) or None
        W_h = torch.cat([self.W_hz, self.W_hr, self.W_hn])  # (3H, H)
        gates = []

        def step(pre_x: torch.Tensor, h_prev: torch.Tensor) -> torch.Tensor:
            h_new, step_gates = self._step(pre_x, h_prev, W_h)
            if record:
                gates.append(step_gates)
            return h_new

        out, h = run_masked(step, self._input_parts(x), h, mask)  # (B, T, H), (B, H)
        trace = None
        if record:
            z, r, n = (torch.stack(g, dim=1) for g in zip(*gates))  # (B, T, H)
            trace = GRUTrace(z, r, n, out)
        return out, h, trace

    def forward(
        self,
        x: torch.Tensor,
        h0: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the GRU over a batch of sequences.

        Args:
            x: inputs, ``(B, T, D)`` (or ``(T, B, D)`` if ``batch_first=False``),
                ``T >= 1``.
            h0: initial state ``(B, H)``; zeros if None.
            lengths: optional ``(B,)`` integer lengths in ``[0, T]`` of padded
                sequences: each state stops changing after its sequence's last real
                step and the outputs at padding positions are zeros (as
                ``pack_padded_sequence`` gives with ``nn.GRU``).

        Returns:
            ``(outputs, h_T)``: all hidden states ``(B, T, H)`` and the final one
            ``(B, H)``.
        """
        out, h, _ = self._run(x, h0, lengths, record=False)
        if not self.batch_first:
            out = out.transpose(0, 1)  # (T, B, H)
        return out, h

    def trace(
        self,
        x: torch.Tensor,
        h0: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
    ) -> GRUTrace:
        """Run like :meth:`forward` and return every gate activation and state.

        The fields of the returned :class:`GRUTrace` are batch-first ``(B, T, H)``.

        Example:
            >>> trace = GRU(2, 3).trace(torch.randn(1, 6, 2))
            >>> tuple(trace.update_gate.shape)
            (1, 6, 3)
        """
        return self._run(x, h0, lengths, record=True)[2]

    @classmethod
    def from_torch(cls, gru: nn.GRU) -> "GRU":
        """A :class:`GRU` computing the same function as a one-layer ``nn.GRU``.

        ``nn.GRU`` stacks its gates in the order ``r, z, n`` in ``weight_ih_l0``
        ``(3H, D)``, ``weight_hh_l0`` ``(3H, H)``, ``bias_ih_l0`` and
        ``bias_hh_l0``; the two biases of ``r`` and of ``z`` are summed, those of
        ``n`` copied to ``b_in`` and ``b_hn``. Same device and dtype.

        Example:
            >>> reference = nn.GRU(3, 4, batch_first=True)
            >>> ours = GRU.from_torch(reference)
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], reference(x)[0], atol=1e-6)
            True
        """
        if not isinstance(gru, nn.GRU):
            raise TypeError(f"gru must be a torch.nn.GRU, got {type(gru).__name__}")
        if gru.num_layers != 1 or gru.bidirectional:
            raise ValueError(
                "gru must have num_layers=1 and bidirectional=False, got "
                f"num_layers={gru.num_layers}, bidirectional={gru.bidirectional}"
            )
        ours = cls(gru.input_size, gru.hidden_size, batch_first=gru.batch_first)
        weight = gru.weight_ih_l0
        ours.to(device=weight.device, dtype=weight.dtype)
        W_ir, W_iz, W_in = gru.weight_ih_l0.chunk(3)
        W_hr, W_hz, W_hn = gru.weight_hh_l0.chunk(3)
        if gru.bias:
            b_ir, b_iz, b_in = gru.bias_ih_l0.chunk(3)
            b_hr, b_hz, b_hn = gru.bias_hh_l0.chunk(3)
        else:
            b_ir = b_iz = b_in = b_hr = b_hz = b_hn = torch.zeros_like(weight[:, 0][: gru.hidden_size])
        with torch.no_grad():
            for name, value in dict(
                W_iz=W_iz, W_ir=W_ir, W_in=W_in, W_hz=W_hz, W_hr=W_hr, W_hn=W_hn,
                b_z=b_iz + b_hz, b_r=b_ir + b_hr, b_in=b_in, b_hn=b_hn,
            ).items():
                getattr(ours, name).copy_(value)
        return ours

    def to_torch(self) -> nn.GRU:
        """A ``torch.nn.GRU`` computing the same function (same device and dtype).

        PyTorch's fused GRU is faster than this module's loop over time, so the book
        trains with it and copies the result back with :meth:`from_torch`. ``b_z``
        and ``b_r`` go to ``bias_ih_l0`` (``bias_hh_l0`` gets zeros there), ``b_in``
        and ``b_hn`` to their own places.

        Example:
            >>> ours = GRU(3, 4)
            >>> fused = ours.to_torch()
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], fused(x)[0], atol=1e-6)
            True
        """
        W = self.W_iz
        fused = nn.GRU(self.input_size, self.hidden_size, batch_first=self.batch_first)
        fused.to(device=W.device, dtype=W.dtype)
        with torch.no_grad():
            fused.weight_ih_l0.copy_(torch.cat([self.W_ir, self.W_iz, self.W_in]))  # (3H, D)
            fused.weight_hh_l0.copy_(torch.cat([self.W_hr, self.W_hz, self.W_hn]))  # (3H, H)
            fused.bias_ih_l0.copy_(torch.cat([self.b_r, self.b_z, self.b_in]))  # (3H,)
            fused.bias_hh_l0.copy_(torch.cat([torch.zeros_like(self.b_r), torch.zeros_like(self.b_z), self.b_hn]))
        return fused
