r"""The gated recurrent unit, written from its update rule.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units,
``K = num_layers * num_directions``.

Equations (3.3)-(3.6) of Aryaman's notes (the book's chapter "Gated recurrent
units"), which are also those of ``torch.nn.GRU``, in the book's notation:

.. math::
    z_t &= \sigma(W_{xz} x_t + W_{hz} h_{t-1} + b_z)  &\text{update gate} \\
    r_t &= \sigma(W_{xr} x_t + W_{hr} h_{t-1} + b_r)  &\text{reset gate} \\
    \tilde{h}_t &= \tanh\big(W_{xh} x_t + b_{xh} + r_t \odot (W_{hh} h_{t-1} + b_{hh})\big)
        &\text{candidate state} \\
    h_t &= (1 - z_t) \odot \tilde{h}_t + z_t \odot h_{t-1}  &\text{new state}

The candidate is the plain RNN's step with the reset gate on its recurrent term. The
notes (like PyTorch) write two biases for each gate, :math:`b_{iz} + b_{hz}` and
:math:`b_{ir} + b_{hr}`, which only appear as sums; the module keeps one, ``b_z``
and ``b_r``. The candidate's two biases differ in kind (the reset gate multiplies
:math:`b_{hh}` but not :math:`b_{xh}`), so both are kept.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook.recurrent._sequence import State, Step, stack_history
from seqbook.recurrent.stack import (
    Inputs,
    Lengths,
    Outputs,
    RecurrentStack,
    _check_no_projection,
)

__all__ = ["GRU", "GRUTrace"]

# a hidden state or a gate of one step, (B, H)
Hidden: TypeAlias = Float[Tensor, "B {self.hidden_size}"]
# the input parts [W_xz x_t + b_z; W_xr x_t + b_r; W_xh x_t + b_xh] of one step, (B, 3H)
InputParts: TypeAlias = Float[Tensor, "B 3*{self.hidden_size}"]
# the recurrent weights [W_hz; W_hr; W_hh] of one layer and direction, (3H, H)
RecurrentWeights: TypeAlias = Float[Tensor, "3*{self.hidden_size} {self.hidden_size}"]
# a bias, (H,); the constant 0 without bias
Bias: TypeAlias = Float[Tensor, "{self.hidden_size}"] | Float[Tensor, ""]  # noqa: F821
# initial and final states, (K, B, H) with K = num_layers * num_directions
States: TypeAlias = Float[Tensor, "{self.num_layers*self.num_directions} B {self.hidden_size}"]


@dataclass
class GRUTrace:
    """Everything one layer of a :class:`GRU` computed at every time step.

    All fields have shape ``(B, T, H)`` for a one-direction layer; a bidirectional
    layer puts its two directions side by side, ``(B, T, 2H)``, forward first, as in
    its outputs, and both in the order of the inputs. At padding positions (with
    ``lengths``) the state is carried over unchanged and the gates are recorded as
    computed.
    """

    update_gate: torch.Tensor  # z_t
    reset_gate: torch.Tensor  # r_t
    candidate: torch.Tensor  # h~_t, the candidate state
    hidden: torch.Tensor  # h_t


class GRU(RecurrentStack):
    r"""GRU layers: a hidden state updated by a gated convex combination.

    .. math::
        h_t = (1 - z_t) \odot \tilde{h}_t + z_t \odot h_{t-1},

    with update gate :math:`z_t`, reset gate :math:`r_t` and candidate state
    :math:`\tilde{h}_t`
    (see the module docstring); :math:`h_0 = 0` unless given. An update gate near 1
    keeps the old state, near 0 replaces it by the candidate. Layers and directions
    as in :class:`~seqbook.recurrent.RecurrentStack`.

    Args:
        input_size: ``D``, features per time step (>= 1).
        hidden_size: ``H``, hidden units per layer and direction (>= 1).
        num_layers: stacked layers (>= 1).
        bias: with the biases :math:`b_z, b_r, b_{xh}, b_{hh}` (False: none at all).
        batch_first: inputs and outputs are ``(B, T, .)`` if True (the book's
            convention and the default here; torch's default is False), ``(T, B, .)``
            if False. States are ``(K, B, H)`` either way, as in torch.
        dropout: dropout probability on the outputs of every layer but the last, in
            training mode (in [0, 1)).
        bidirectional: also run each layer from the end of the sequence to its start.
        proj_size: torch's LSTM-only argument; must be 0.
        device, dtype: where and in which floating-point dtype to create the
            parameters, as in torch (defaults: torch's defaults).

    Shapes:
        x: ``(B, T, D)`` or a ``PackedSequence``.
        h0: ``(K, B, H)``.
        lengths: ``(B,)``.
        outputs: ``(B, T, num_directions * H)``, the last layer's states at every step.
        h_n: ``(K, B, H)``.

    Attributes:
        W_xz, W_xr, W_xh: input weights of the first layer, ``(H, D)`` each.
        W_hz, W_hr, W_hh: its recurrent weights, ``(H, H)`` each.
        b_z, b_r, b_xh, b_hh: its biases, ``(H,)`` each (None if ``bias=False``).
        W_xz_l1, ..., W_xz_reverse, ...: those of the other layers and directions.

    Example:
        >>> gru = GRU(3, 5)
        >>> outputs, h_n = gru(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), torch.equal(outputs[:, -1], h_n[-1])
        ((2, 7, 5), True)
        >>> outputs, h_n = GRU(3, 5, bidirectional=True)(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), tuple(h_n.shape)
        ((2, 7, 10), (2, 2, 5))
    """

    _torch_class = nn.GRU
    _parameter_names = ("W_xz", "W_xr", "W_xh", "W_hz", "W_hr", "W_hh",
                        "b_z", "b_r", "b_xh", "b_hh")

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        proj_size: int = 0,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device, dtype)
        _check_no_projection("proj_size", proj_size, module="GRU")
        H = hidden_size
        for suffix, D_l in self._layer_inputs():  # every layer and direction
            for gate in "zrh":  # update gate, reset gate, candidate state
                self._new_parameter(f"W_x{gate}{suffix}", H, D_l)
                self._new_parameter(f"W_h{gate}{suffix}", H, H)
            for name in ("b_z", "b_r", "b_xh", "b_hh"):
                self._new_parameter(f"{name}{suffix}", H, is_bias=True)
        self.reset_parameters()

    def step(
        self, x_part: InputParts, h_prev: Hidden, W_h: RecurrentWeights, b_hh: Bias
    ) -> tuple[Hidden, tuple[Hidden, Hidden, Hidden]]:
        r"""One step of equations (3.3)-(3.6), given the input parts of the three
        blocks (computed for all :math:`t` at once).

        Args:
            x_part: :math:`[W_{xz} x_t + b_z; W_{xr} x_t + b_r; W_{xh} x_t + b_{xh}]`,
                ``(B, 3H)``.
            h_prev: the previous hidden state :math:`h_{t-1}`, ``(B, H)``.
            W_h: :math:`[W_{hz}; W_{hr}; W_{hh}]`, ``(3H, H)``.
            b_hh: :math:`b_{hh}`, ``(H,)`` (a zero-dimensional 0 without bias).

        Returns:
            ``(h, (z, r, h_tilde))``: the new state, the two gates and the candidate
            state, ``(B, H)`` each.

        Example:
            >>> gru = GRU(2, 3)
            >>> x_t, h = torch.randn(4, 2), torch.randn(4, 3)
            >>> W_x = torch.cat([gru.W_xz, gru.W_xr, gru.W_xh])
            >>> b_x = torch.cat([gru.b_z, gru.b_r, gru.b_xh])
            >>> W_h = torch.cat([gru.W_hz, gru.W_hr, gru.W_hh])
            >>> h_t, gates = gru.step(x_t @ W_x.T + b_x, h, W_h, gru.b_hh)
            >>> torch.equal(h_t, gru.cell(x_t, h))
            True
        """
        # Wx_* = W_x* x_t + b_* and Wh_* = W_h* h_{t-1} for * = z, r, h
        Wx_z, Wx_r, Wx_h = x_part.chunk(3, dim=1)  # (B, H) each
        Wh_z, Wh_r, Wh_h = (h_prev @ W_h.T).chunk(3, dim=1)  # (B, H) each
        z = torch.sigmoid(Wx_z + Wh_z)  # update gate  (eq-gru-z)
        r = torch.sigmoid(Wx_r + Wh_r)  # reset gate  (eq-gru-r)
        h_tilde = torch.tanh(Wx_h + r * (Wh_h + b_hh))  # (eq-gru-candidate)
        h = (1 - z) * h_tilde + z * h_prev  # new state  (eq-gru-h)
        return h, (z, r, h_tilde)

    def recurrence(
        self, x: Float[Tensor, "*batch D"], layer: int = 0, direction: int = 0
    ) -> tuple[Float[Tensor, "*batch 3*{self.hidden_size}"], Step]:
        """The recurrence of one layer and direction: the input parts of the three
        blocks for every step of ``x`` ``(B, T, D)`` in one matrix product, the
        recurrent weights stacked once, and the function
        ``advance(x_part, (h_prev,)) -> ((h_t,), (z, r, h_tilde))`` that the stack
        runs over time.

        Example:
            >>> gru = GRU(2, 3)
            >>> x, h = torch.randn(4, 5, 2), torch.zeros(4, 3)
            >>> x_parts, advance = gru.recurrence(x)
            >>> (h_1,), gates = advance(x_parts[:, 0], (h,))
            >>> torch.equal(h_1, gru(x)[0][:, 0])
            True
        """
        w = self._layer_parameters(layer, direction)  # W_xz, ..., b_hh
        W_x = torch.cat([w.W_xz, w.W_xr, w.W_xh])  # (3H, D)
        W_h = torch.cat([w.W_hz, w.W_hr, w.W_hh])  # (3H, H)
        b_x = torch.cat([w.b_z, w.b_r, w.b_xh]) if self.bias else w.b_z  # or 0

        def advance(x_part: Tensor, state: State) -> tuple[State, tuple]:
            h, gates = self.step(x_part, state[0], W_h, w.b_hh)
            return (h,), gates

        return x @ W_x.T + b_x, advance  # the input parts of all t, (B, T, 3H)

    def _trace(self, outputs: Tensor, history: list[tuple[State, tuple]]) -> GRUTrace:
        z, r, h_tilde = (stack_history(g) for g in zip(*(gates for _, gates in history)))
        return GRUTrace(z, r, h_tilde, outputs)  # type: ignore[arg-type]  # (B, T, H) each

    def cell(self, x_t: Float[Tensor, "B {self.input_size}"], h_prev: Hidden) -> Hidden:
        r"""One time step, :math:`h_{t-1} \mapsto h_t`.

        For a one-layer, one-direction GRU (like ``torch.nn.GRUCell``).

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
        self._check_one_layer("cell")
        x_part, advance = self.recurrence(x_t)  # (B, 3H)
        (h,), _ = advance(x_part, (h_prev,))
        return h

    def forward(
        self, x: Inputs, h0: States | None = None, lengths: Lengths | None = None
    ) -> tuple[Outputs, States]:
        """Run the GRU over a batch of sequences.

        Args:
            x: inputs, ``(B, T, D)`` (or ``(T, B, D)`` if ``batch_first=False``),
                ``T >= 1``, in the parameters' dtype; or a ``PackedSequence`` (then
                ``outputs`` is one too, as with ``nn.GRU``).
            h0: initial states ``(K, B, H)``, ``K = num_layers * num_directions``;
                zeros if None.
            lengths: optional ``(B,)`` integer lengths in ``[0, T]`` of padded
                sequences: each state stops changing after its sequence's last real
                step, the backward direction starts at each sequence's last real
                step, and the outputs at padding positions are zeros (as
                ``pack_padded_sequence`` gives with ``nn.GRU``).

        Returns:
            ``(outputs, h_n)``: the last layer's states ``(B, T, num_directions * H)``
            and every layer's final state ``(K, B, H)``.
        """
        out, h_n, _ = self._run(x, h0, lengths)
        return out, h_n

    def trace(
        self,
        x: Float[Tensor, "_ _ {self.input_size}"],
        h0: States | None = None,
        lengths: Lengths | None = None,
        layer: int = -1,
    ) -> GRUTrace:
        """Run like :meth:`forward` and return every gate activation and state of one
        layer (by default the last, whose outputs are the module's).

        The fields of the returned :class:`GRUTrace` are batch-first ``(B, T, .)``;
        a bidirectional layer's two directions are side by side, as in its outputs.

        Example:
            >>> trace = GRU(2, 3).trace(torch.randn(1, 6, 2))
            >>> tuple(trace.update_gate.shape)
            (1, 6, 3)
        """
        return self._trace_of_layer(x, h0, lengths, layer)

    @classmethod
    def from_torch(cls, gru: nn.GRU) -> GRU:
        """A :class:`GRU` computing the same function as an ``nn.GRU``.

        Same configuration (``num_layers``, ``bias``, ``batch_first``, ``dropout``,
        ``bidirectional``), device, dtype and training mode. ``nn.GRU`` stacks its
        gates in the order ``r, z, n`` in ``weight_ih_l{k}`` ``(3H, D)``,
        ``weight_hh_l{k}`` ``(3H, H)``, ``bias_ih_l{k}`` and ``bias_hh_l{k}``; the two
        biases of ``r`` and of ``z`` are summed, those of ``n`` (our candidate
        state) copied to ``b_xh`` and ``b_hh`` (an ``nn.GRU`` without bias gives a
        GRU without bias).

        Example:
            >>> reference = nn.GRU(3, 4, bidirectional=True, batch_first=True)
            >>> ours = GRU.from_torch(reference)
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], reference(x)[0], atol=1e-6)
            True
        """
        ours = cls(gru.input_size, gru.hidden_size, gru.num_layers, gru.bias, gru.batch_first,
                   float(gru.dropout), gru.bidirectional)
        ours._copy_all_from_torch(gru)
        return ours

    def to_torch(self) -> nn.GRU:
        """A ``torch.nn.GRU`` computing the same function (configuration, device, dtype,
        training mode).

        PyTorch's fused GRU is faster than this module's loop over time, so the book
        trains with it and copies the result back with :meth:`from_torch`. ``b_z``
        and ``b_r`` go to ``bias_ih_l{k}`` (``bias_hh_l{k}`` gets zeros there),
        ``b_xh`` and ``b_hh`` to their own places.

        Example:
            >>> ours = GRU(3, 4)
            >>> fused = ours.to_torch()
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], fused(x)[0], atol=1e-6)
            True
        """
        twin = self._torch_twin()
        assert isinstance(twin, nn.GRU)
        return twin

    def _copy_from_torch(self, module: nn.GRU, suffix: str, torch_suffix: str) -> None:
        # torch's gates r, z, n; its n is our candidate state h~
        W_xr, W_xz, W_xh = getattr(module, f"weight_ih{torch_suffix}").chunk(3)
        W_hr, W_hz, W_hh = getattr(module, f"weight_hh{torch_suffix}").chunk(3)
        values = dict(W_xz=W_xz, W_xr=W_xr, W_xh=W_xh, W_hz=W_hz, W_hr=W_hr, W_hh=W_hh)
        if self.bias:
            b_xr, b_xz, b_xh = getattr(module, f"bias_ih{torch_suffix}").chunk(3)
            b_hr, b_hz, b_hh = getattr(module, f"bias_hh{torch_suffix}").chunk(3)
            values.update(b_z=b_xz + b_hz, b_r=b_xr + b_hr, b_xh=b_xh, b_hh=b_hh)
        for name, value in values.items():
            getattr(self, f"{name}{suffix}").copy_(value)

    def _copy_to_torch(self, module: nn.GRU, suffix: str, torch_suffix: str) -> None:
        def ours(name: str) -> torch.Tensor:
            return getattr(self, f"{name}{suffix}")

        getattr(module, f"weight_ih{torch_suffix}").copy_(
            torch.cat([ours("W_xr"), ours("W_xz"), ours("W_xh")]))  # (3H, D)
        getattr(module, f"weight_hh{torch_suffix}").copy_(
            torch.cat([ours("W_hr"), ours("W_hz"), ours("W_hh")]))  # (3H, H)
        if self.bias:
            zeros = torch.zeros_like(ours("b_r"))
            getattr(module, f"bias_ih{torch_suffix}").copy_(
                torch.cat([ours("b_r"), ours("b_z"), ours("b_xh")]))  # (3H,)
            getattr(module, f"bias_hh{torch_suffix}").copy_(
                torch.cat([zeros, zeros, ours("b_hh")]))  # (3H,)
