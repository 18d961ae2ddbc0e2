r"""Long short-term memory, written gate by gate.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` LSTM blocks
(hidden units), ``P`` the size of a projected output (``proj_size``),
``K = num_layers * num_directions``.

The module follows the formulas of Widrich's lecture (the book's chapter "Long
short-term memory") in the book's notation, with :math:`h_t` the block outputs (the
hidden state) and :math:`c_t` the cell states:

.. math::
    g_t &= \tanh(W_{xg} x_t + W_{hg} h_{t-1} + b_g)  &\text{cell input} \\
    i_t &= \sigma(W_{xi} x_t + W_{hi} h_{t-1} + b_i) &\text{input gate} \\
    f_t &= \sigma(W_{xf} x_t + W_{hf} h_{t-1} + b_f) &\text{forget gate} \\
    c_t &= i_t \odot g_t + f_t \odot c_{t-1}          &\text{cell state} \\
    o_t &= \sigma(W_{xo} x_t + W_{ho} h_{t-1} + b_o) &\text{output gate} \\
    h_t &= o_t \odot \tanh(c_t)                       &\text{block output}

Without a forget gate (``forget_gate=False``) the cell is the pure integrator of the
original LSTM, :math:`c_t = i_t \odot g_t + c_{t-1}`. With ``proj_size``
:math:`P > 0` the block outputs are projected,
:math:`h_t = W_{\text{proj}}\,(o_t \odot \tanh(c_t))`, as in ``torch.nn.LSTM`` (the
"LSTMP" of Sak et al., 2014). ``torch.nn.LSTM`` orders its gates ``i, f, g, o`` and
keeps two biases per gate that only appear as their sum;
:meth:`seqbook.recurrent.LSTM.from_torch` reorders and folds them.
"""

from __future__ import annotations

from dataclasses import dataclass
from types import SimpleNamespace
from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_bool, check_int, check_real
from seqbook.recurrent._sequence import State, Step, stack_history
from seqbook.recurrent.stack import Inputs, Lengths, Outputs, RecurrentStack

__all__ = ["LSTM", "LSTMTrace", "chrono_init", "lstm_backward", "lstm_step_backward"]

# sigmoid(50) rounds to exactly 1 in float32 and float64: a forget gate pinned open
_PINNED_FORGET_BIAS = 50.0
# the kinds of parameter of a gate: input weights, recurrent weights, bias
_KINDS = ("W_x", "W_h", "b_")
_TORCH_ORDER = dict(zip("ifgo", range(4)))  # torch's order of the gates i, f, g, o
# the cell state c or the gates of one step, (B, H)
Cells: TypeAlias = Float[Tensor, "B {self.hidden_size}"]
# the block output h, (B, P) with a projection, else (B, H)
BlockOutput: TypeAlias = Float[Tensor, "B {self._output_size}"]
# the state (h_0, c_0) of forward: (K, B, P or H) and (K, B, H), K layers and directions
States: TypeAlias = tuple[
    Float[Tensor, "{self.num_layers*self.num_directions} B {self._output_size}"],
    Float[Tensor, "{self.num_layers*self.num_directions} B {self.hidden_size}"],
]


@dataclass
class LSTMTrace:
    """Everything one layer of an :class:`LSTM` computed at every time step.

    All fields have shape ``(B, T, H)`` for a one-direction layer; a bidirectional
    layer puts its two directions side by side, ``(B, T, 2H)``, forward first, as in
    its outputs, and both in the order of the inputs (the backward direction's values
    at step ``t`` are those it computed when it read :math:`x_t`). ``outputs`` is
    ``(B, T, P)`` (``(B, T, 2P)``) with a projection. ``forget_gate`` is ``None``
    for an LSTM without forget gate (its :math:`f_t` is 1). At padding positions
    (with ``lengths``) the states are carried over unchanged and the gates are
    recorded as computed.
    """

    cell_input: torch.Tensor  # g_t
    input_gate: torch.Tensor  # i_t
    forget_gate: torch.Tensor | None  # f_t
    cell_state: torch.Tensor  # c_t
    output_gate: torch.Tensor  # o_t
    outputs: torch.Tensor  # h_t


class LSTM(RecurrentStack):
    r"""LSTM layers of ``H`` blocks, each a cell (constant error carousel) and gates.

    .. math::
        c_t = i_t \odot g_t + f_t \odot c_{t-1}, \qquad h_t = o_t \odot \tanh(c_t),

    with cell input :math:`g_t`, input gate :math:`i_t`, forget gate :math:`f_t` and
    output gate :math:`o_t` computed from :math:`x_t` and :math:`h_{t-1}` (see the
    module docstring); :math:`h_0 = c_0 = 0` unless a state is given. With
    ``proj_size`` :math:`P > 0`, :math:`h_t = W_{\text{proj}}(o_t \odot \tanh(c_t))`
    has :math:`P` features. Layers and directions as in
    :class:`~seqbook.recurrent.RecurrentStack`.

    Args:
        input_size: ``D``, features per time step (>= 1).
        hidden_size: ``H``, LSTM blocks per layer and direction (>= 1).
        num_layers: stacked layers (>= 1).
        bias: with the biases :math:`b_g, b_i, b_f, b_o` (False: none at all).
        batch_first: inputs and outputs are ``(B, T, .)`` if True (the book's
            convention and the default here; torch's default is False), ``(T, B, .)``
            if False. States are ``(K, B, .)`` either way, as in torch.
        dropout: dropout probability on the outputs of every layer but the last, in
            training mode (in [0, 1)).
        bidirectional: also run each layer from the end of the sequence to its start.
        proj_size: ``P``, project the block outputs to ``P < H`` features (0: no
            projection).
        forget_gate: with a forget gate (the modern LSTM, as ``nn.LSTM``) or
            without (the original LSTM of 1997: :math:`f_t = 1`, a pure integrator).
        input_gate_bias: added to every input gate's initial bias :math:`b_i`
            (whose initial values are uniform in :math:`\pm 1/\sqrt{H}` like all
            parameters); negative values start with the input gates mostly closed.
            Needs ``bias=True`` unless 0.
        device, dtype: where and in which floating-point dtype to create the
            parameters, as in torch (defaults: torch's defaults).

    Shapes:
        x: ``(B, T, D)`` or a ``PackedSequence``.
        state: a pair ``(h_0, c_0)``: ``(K, B, P)`` (``(K, B, H)`` without
        projection) and ``(K, B, H)``.
        lengths: ``(B,)``.
        outputs: ``(B, T, num_directions * P)`` (or ``* H``), the last layer's block
        outputs :math:`h_t` at every step.
        final_state: ``(h_n, c_n)``, shaped like ``state``.

    Attributes:
        W_xg, W_xi, W_xf, W_xo: input weights of the first layer, ``(H, D)`` each
            (``W_xf``, ``W_hf`` and ``b_f`` exist only with a forget gate).
        W_hg, W_hi, W_hf, W_ho: its recurrent weights, ``(H, H)`` each (``(H, P)``
            with a projection).
        b_g, b_i, b_f, b_o: its biases, ``(H,)`` each (None if ``bias=False``).
        W_proj: its projection, ``(P, H)``, if ``proj_size`` > 0.
        W_xg_l1, ..., W_xg_reverse, ...: those of the other layers and directions.

    Example:
        >>> lstm = LSTM(3, 5)
        >>> outputs, (h_n, c_n) = lstm(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), tuple(c_n.shape)
        ((2, 7, 5), (1, 2, 5))
        >>> torch.equal(outputs[:, -1], h_n[-1])
        True
        >>> deep = LSTM(3, 5, num_layers=2, bidirectional=True, proj_size=2)
        >>> outputs, (h_n, c_n) = deep(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), tuple(h_n.shape), tuple(c_n.shape)
        ((2, 7, 4), (4, 2, 2), (4, 2, 5))
    """

    _torch_class = nn.LSTM
    _state_names = ("h_0", "c_0")

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        *,
        forget_gate: bool = True,
        input_gate_bias: float = 0.0,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first,
                         dropout, bidirectional, device, dtype)
        check_int("proj_size", proj_size, min_value=0)
        if proj_size >= hidden_size:
            raise ValueError(f"proj_size must be < hidden_size = {hidden_size} (the argument "
                             f"hidden_size), got {proj_size}")
        self.proj_size = proj_size
        self.forget_gate = check_bool("forget_gate", forget_gate)
        self.input_gate_bias = check_real("input_gate_bias", input_gate_bias, finite=True)
        if self.input_gate_bias and not self.bias:
            raise ValueError(f"input_gate_bias={input_gate_bias} needs a bias: bias must be True")
        H = hidden_size
        for suffix, D_l in self._layer_inputs():  # every layer and direction
            for gate in self.gate_names:
                self._new_parameter(f"W_x{gate}{suffix}", H, D_l)
                self._new_parameter(f"W_h{gate}{suffix}", H, self._output_size)
                self._new_parameter(f"b_{gate}{suffix}", H, is_bias=True)
            if proj_size:
                self._new_parameter(f"W_proj{suffix}", proj_size, H)
        self.reset_parameters()

    @property
    def gate_names(self) -> tuple[str, ...]:
        """Names of the gates in the book's order, ``("g", "i", "f", "o")`` or
        ``("g", "i", "o")``."""
        return ("g", "i", "f", "o") if self.forget_gate else ("g", "i", "o")

    @property
    def _output_size(self) -> int:
        return self.proj_size or self.hidden_size

    def _state_sizes(self) -> tuple[int, ...]:
        return (self._output_size, self.hidden_size)

    @property
    def _parameter_names(self) -> tuple[str, ...]:  # type: ignore[override]
        names = [f"{kind}{gate}" for gate in self.gate_names for kind in _KINDS]
        return (*names, "W_proj") if self.proj_size else tuple(names)

    def reset_parameters(self) -> None:
        r"""Uniform in :math:`\pm 1/\sqrt{H}` (as ``nn.LSTM``), then
        ``input_gate_bias`` added to every :math:`b_i`."""
        super().reset_parameters()
        if self.bias:
            with torch.no_grad():
                for name, parameter in self.named_parameters():
                    if name == "b_i" or name.startswith("b_i_"):
                        parameter.add_(self.input_gate_bias)

    def extra_repr(self) -> str:
        extra = [super().extra_repr()]
        if self.proj_size:
            extra.append(f"proj_size={self.proj_size}")
        if not self.forget_gate:
            extra.append("forget_gate=False")
        if self.input_gate_bias:
            extra.append(f"input_gate_bias={self.input_gate_bias}")
        return ", ".join(extra)

    def _stack_gates(self, w: SimpleNamespace, kind: str) -> Tensor:
        """``W_x``, ``W_h`` or ``b_`` of one layer's gates (``w``, from
        ``_layer_parameters``) stacked, so that one matrix product serves them all."""
        if kind == "b_" and not self.bias:
            return w.b_g  # the constant 0
        return torch.cat([getattr(w, f"{kind}{gate}") for gate in self.gate_names])

    def step(
        self,
        x_part: Float[Tensor, "B GH"],
        h_prev: Float[Tensor, "B P"],
        c_prev: Cells,
        W_h: Float[Tensor, "GH P"],
    ) -> tuple[Cells, Cells, tuple[Cells | None, ...]]:
        r"""One step of the block equations, given the input part
        :math:`W_x x_t + b` of all gates (computed for all :math:`t` at once).

        Args:
            x_part: :math:`W_{x\bullet} x_t + b_\bullet` of the gates ``gate_names``
                (:math:`\bullet` = g, i, f, o), stacked, ``(B, G H)``.
            h_prev, c_prev: the previous block output ``(B, P)`` (``P = H`` without
                projection) and cell state ``(B, H)``.
            W_h: the recurrent weights :math:`W_{h\bullet}` of the gates, stacked,
                ``(G H, P)``.

        Returns:
            ``(h, c, (g, i, f, o))``: the block output :math:`o_t \odot \tanh(c_t)`
            (before a projection), the cell state and the gates, ``(B, H)`` each
            (``f`` is None without forget gate).

        Example:
            >>> lstm = LSTM(2, 3)
            >>> x_t, zeros = torch.randn(4, 2), torch.zeros(4, 3)
            >>> W_x = torch.cat([lstm.W_xg, lstm.W_xi, lstm.W_xf, lstm.W_xo])
            >>> b = torch.cat([lstm.b_g, lstm.b_i, lstm.b_f, lstm.b_o])
            >>> W_h = torch.cat([lstm.W_hg, lstm.W_hi, lstm.W_hf, lstm.W_ho])
            >>> h, c, gates = lstm.step(x_t @ W_x.T + b, zeros, zeros, W_h)
            >>> torch.equal(h, lstm.cell(x_t, (zeros, zeros))[0])
            True
        """
        pre = x_part + h_prev @ W_h.T  # (B, G H)
        parts = dict(zip(self.gate_names, pre.chunk(len(self.gate_names), dim=1)))
        g = torch.tanh(parts["g"])  # (eq-lstm-g)
        i = torch.sigmoid(parts["i"])  # (eq-lstm-i)
        if self.forget_gate:
            f = torch.sigmoid(parts["f"])  # (eq-lstm-f)
            c = i * g + f * c_prev  # (eq-lstm-c)
        else:
            f = None
            c = i * g + c_prev  # (eq-lstm-cec)
        o = torch.sigmoid(parts["o"])  # (eq-lstm-o)
        h = o * torch.tanh(c)  # (eq-lstm-h)
        return h, c, (g, i, f, o)

    def recurrence(
        self, x: Float[Tensor, "*batch D"], layer: int = 0, direction: int = 0
    ) -> tuple[Float[Tensor, "*batch _"], Step]:
        r"""The recurrence of one layer and direction: the input parts
        :math:`W_{x\bullet} x_t + b_\bullet` of all gates and every step of ``x``
        ``(B, T, D)`` in one matrix product, and the function
        ``advance(x_part, (h, c)) -> ((h, c), gates)``
        that the stack runs over time, with the projection if there is one.

        Example:
            >>> lstm = LSTM(2, 3, proj_size=1)
            >>> x, h, c = torch.randn(4, 5, 2), torch.zeros(4, 1), torch.zeros(4, 3)
            >>> x_parts, advance = lstm.recurrence(x)
            >>> (h_1, c_1), gates = advance(x_parts[:, 0], (h, c))
            >>> torch.equal(h_1, lstm(x)[0][:, 0])
            True
        """
        w = self._layer_parameters(layer, direction)  # W_xg, W_hg, b_g, ...
        W_x, W_h, b = (self._stack_gates(w, kind) for kind in _KINDS)  # (G H, .)

        def advance(x_part: Tensor, state: State) -> tuple[State, tuple]:
            h, c, gates = self.step(x_part, state[0], state[1], W_h)
            if self.proj_size:
                h = h @ w.W_proj.T  # (B, P)  (eq-lstm-proj)
            return (h, c), gates

        return x @ W_x.T + b, advance  # the input parts of all t, (B, T, G H)

    def _trace(self, outputs: Tensor, history: list[tuple[State, tuple]]) -> LSTMTrace:
        states, gates = zip(*history)
        g, i, f, o = (stack_history(gate) for gate in zip(*gates))  # (B, T, H)
        cells = stack_history([c for _, c in states])  # (B, T, H)
        return LSTMTrace(g, i, f, cells, o, outputs)  # type: ignore[arg-type]

    def cell(
        self, x_t: Float[Tensor, "B {self.input_size}"], state: tuple[BlockOutput, Cells]
    ) -> tuple[BlockOutput, Cells]:
        r"""One time step: :math:`(h_{t-1}, c_{t-1}) \mapsto (h_t, c_t)`.

        For a one-layer, one-direction LSTM (like ``torch.nn.LSTMCell``).

        Args:
            x_t: the input of this step, ``(B, D)``.
            state: the pair :math:`(h_{t-1}, c_{t-1})`, ``(B, H)`` each (``h`` is
                ``(B, P)`` with a projection).

        Returns:
            :math:`(h_t, c_t)`, shaped like ``state``.

        Example:
            >>> lstm = LSTM(2, 3)
            >>> zeros = torch.zeros(4, 3)
            >>> h, c = lstm.cell(torch.zeros(4, 2), (zeros, zeros))
            >>> tuple(h.shape), tuple(c.shape)
            ((4, 3), (4, 3))
        """
        self._check_one_layer("cell")
        x_part, advance = self.recurrence(x_t)  # (B, G H)
        (h, c), _ = advance(x_part, state)
        return h, c

    def forward(
        self, x: Inputs, state: States | None = None, lengths: Lengths | None = None
    ) -> tuple[Outputs, States]:
        """Run the LSTM over a batch of sequences.

        Args:
            x: inputs, ``(B, T, D)`` (or ``(T, B, D)`` if ``batch_first=False``),
                ``T >= 1``, in the parameters' dtype; or a ``PackedSequence`` (then
                ``outputs`` is one too, as with ``nn.LSTM``).
            state: initial ``(h_0, c_0)``, ``(K, B, P)`` (or ``(K, B, H)``) and
                ``(K, B, H)``, ``K = num_layers * num_directions``; zeros if None.
            lengths: optional ``(B,)`` integer lengths in ``[0, T]`` of padded
                sequences: each sequence's state stops changing after its last real
                step, the backward direction starts at each sequence's last real
                step, and the outputs at padding positions are zeros (as
                ``pack_padded_sequence`` gives with ``nn.LSTM``).

        Returns:
            ``(outputs, (h_n, c_n))``: the last layer's block outputs
            ``(B, T, num_directions * P)`` (``(T, B, .)`` if not batch-first) and
            every layer's final state, shaped like ``state``.
        """
        out, final, _ = self._run(x, state, lengths)
        return out, final

    def trace(
        self,
        x: Float[Tensor, "_ _ {self.input_size}"],
        state: States | None = None,
        lengths: Lengths | None = None,
        layer: int = -1,
    ) -> LSTMTrace:
        """Run like :meth:`forward` and return every cell state and gate activation
        of one layer (by default the last, whose outputs are the module's).

        The fields of the returned :class:`LSTMTrace` are batch-first ``(B, T, .)``
        whatever ``batch_first`` is; a bidirectional layer's two directions are side
        by side (forward first), as in its outputs.

        Example:
            >>> lstm = LSTM(2, 3, forget_gate=False)
            >>> trace = lstm.trace(torch.randn(1, 6, 2))
            >>> tuple(trace.cell_state.shape), trace.forget_gate is None
            ((1, 6, 3), True)
        """
        return self._trace_of_layer(x, state, lengths, layer)

    @classmethod
    def from_torch(cls, lstm: nn.LSTM, forget_gate: bool = True) -> LSTM:
        """An :class:`LSTM` computing the same function as an ``nn.LSTM``.

        Same configuration (``num_layers``, ``bias``, ``batch_first``, ``dropout``,
        ``bidirectional``, ``proj_size``), device, dtype and training mode.
        ``nn.LSTM`` stacks its gates in the order ``i, f, g, o`` in
        ``weight_ih_l{k}`` ``(4H, D)``, ``weight_hh_l{k}`` ``(4H, H)`` and two bias
        vectors (their ``g`` is our cell input ``g``); the two biases are summed
        into one (an ``nn.LSTM`` without bias gives an LSTM without bias);
        ``weight_hr_l{k}`` is our ``W_proj``.

        Args:
            lstm: an ``nn.LSTM``.
            forget_gate: ``False`` copies into an LSTM without forget gate; then
                ``lstm``'s forget gates must be pinned at exactly 1 (zero forget
                weights and a bias whose sigmoid is 1, as :meth:`to_torch` makes it).

        Example:
            >>> reference = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True)
            >>> ours = LSTM.from_torch(reference)
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], reference(x)[0], atol=1e-6)
            True
        """
        # forget_gate is checked by the constructor
        ours = cls(lstm.input_size, lstm.hidden_size, lstm.num_layers, lstm.bias,
                   lstm.batch_first, float(lstm.dropout), lstm.bidirectional, lstm.proj_size,
                   forget_gate=forget_gate)
        ours._copy_all_from_torch(lstm)
        return ours

    def to_torch(self) -> nn.LSTM:
        r"""An ``torch.nn.LSTM`` computing the same function (configuration, device,
        dtype, training mode).

        PyTorch's fused LSTM is several times faster than this module's loop over
        time, so the book trains with it and copies the result back with
        :meth:`from_torch`. ``nn.LSTM`` always has a forget gate; for an LSTM
        without one it is pinned at :math:`f_t = 1`: zero forget-gate weights and a
        bias of 50 (:math:`\sigma(50)` is exactly 1 in float32 and float64), with
        gradient hooks that zero the gradient of those rows, so that training the
        returned module (without weight decay) keeps :math:`f_t = 1`. That needs a
        bias: an LSTM with ``forget_gate=False`` and ``bias=False`` has no torch twin.

        Example:
            >>> ours = LSTM(3, 4, forget_gate=False)
            >>> fused = ours.to_torch()
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], fused(x)[0], atol=1e-6)
            True
        """
        if not self.forget_gate and not self.bias:
            raise ValueError("an LSTM with forget_gate=False and bias=False has no nn.LSTM twin: "
                             "pinning torch's forget gate at 1 needs a bias")
        fused = self._torch_twin()
        assert isinstance(fused, nn.LSTM)
        if not self.forget_gate:
            H = self.hidden_size
            keep = torch.ones(4 * H, device=self._like.device, dtype=self._like.dtype)  # (4H,)
            keep[H : 2 * H] = 0.0
            for name, parameter in fused.named_parameters():
                if name.startswith(("weight_ih", "weight_hh")):
                    parameter.register_hook(lambda g: g * keep[:, None])
                elif name.startswith("bias"):
                    parameter.register_hook(lambda g: g * keep)
        return fused

    def _torch_settings(self) -> dict[str, int]:
        return {"proj_size": self.proj_size}

    def _copy_from_torch(self, module: nn.LSTM, suffix: str, torch_suffix: str) -> None:
        W_ih = getattr(module, f"weight_ih{torch_suffix}").chunk(4)
        W_hh = getattr(module, f"weight_hh{torch_suffix}").chunk(4)
        b = None
        if module.bias:
            b = (getattr(module, f"bias_ih{torch_suffix}")
                 + getattr(module, f"bias_hh{torch_suffix}")).chunk(4)
        if not self.forget_gate:
            k = _TORCH_ORDER["f"]
            pinned = (b is not None and not W_ih[k].any() and not W_hh[k].any()
                      and bool(torch.all(torch.sigmoid(b[k]) == 1)))
            if not pinned:
                raise ValueError(
                    "forget_gate=False needs an nn.LSTM whose forget gates are exactly 1 "
                    "(zero forget-gate weights, sigmoid(bias) == 1), as LSTM.to_torch() "
                    f"makes them; layer and direction {torch_suffix!r} is not"
                )
        for gate in self.gate_names:
            k = _TORCH_ORDER[gate]
            getattr(self, f"W_x{gate}{suffix}").copy_(W_ih[k])
            getattr(self, f"W_h{gate}{suffix}").copy_(W_hh[k])
            if b is not None:
                getattr(self, f"b_{gate}{suffix}").copy_(b[k])
        if self.proj_size:
            getattr(self, f"W_proj{suffix}").copy_(getattr(module, f"weight_hr{torch_suffix}"))

    def _copy_to_torch(self, module: nn.LSTM, suffix: str, torch_suffix: str) -> None:
        H = self.hidden_size
        W_ih = getattr(module, f"weight_ih{torch_suffix}")
        W_hh = getattr(module, f"weight_hh{torch_suffix}")
        if self.bias:
            b_ih = getattr(module, f"bias_ih{torch_suffix}")
            getattr(module, f"bias_hh{torch_suffix}").zero_()
        for gate in "ifgo":
            rows = slice(_TORCH_ORDER[gate] * H, (_TORCH_ORDER[gate] + 1) * H)
            if gate == "f" and not self.forget_gate:
                W_ih[rows] = 0.0
                W_hh[rows] = 0.0
                b_ih[rows] = _PINNED_FORGET_BIAS
                continue
            W_ih[rows] = getattr(self, f"W_x{gate}{suffix}")
            W_hh[rows] = getattr(self, f"W_h{gate}{suffix}")
            if self.bias:
                b_ih[rows] = getattr(self, f"b_{gate}{suffix}")
        if self.proj_size:
            getattr(module, f"weight_hr{torch_suffix}").copy_(getattr(self, f"W_proj{suffix}"))


def chrono_init(
    lstm: LSTM, t_max: float, generator: torch.Generator | None = None
) -> LSTM:
    r"""Tallec and Ollivier's *chrono initialisation* of an LSTM's gate biases.

    .. math::
        b_f \sim \log\big(\mathcal{U}[1,\, T_{\max} - 1]\big), \qquad b_i = -b_f,

    drawn independently for every block of every layer and direction, in place; the
    weights and the other biases keep their values. A forget gate with bias
    :math:`b_f = \log u` starts at :math:`\sigma(b_f) = u / (1 + u)`, so (with the
    weights' contribution left out) a cell forgets with a time constant
    :math:`1 / (1 - \sigma(b_f)) = 1 + u`, spread between 2 and :math:`T_{\max}`
    steps; its input gate starts at :math:`\sigma(-b_f) = 1 - \sigma(b_f)`, as if the
    two gates were tied like a GRU's. (Tallec and Ollivier, "Can recurrent neural
    networks warp time?", ICLR 2018, section 4.)

    Args:
        lstm: an :class:`LSTM` with forget gate and biases (``forget_gate=True``,
            ``bias=True``); its biases :math:`b_f` and :math:`b_i` are overwritten.
        t_max: :math:`T_{\max}`, the longest time dependency expected, in steps
            (a finite number >= 2; 2 gives :math:`b_f = 0`).
        generator: draws the uniform numbers (None: torch's global generator).

    Returns:
        ``lstm`` itself.

    Example:
        >>> lstm = chrono_init(LSTM(3, 4), t_max=100)
        >>> bool(torch.all((lstm.b_f >= 0) & (lstm.b_f <= torch.tensor(99.0).log())))
        True
        >>> torch.equal(lstm.b_i, -lstm.b_f)
        True
    """
    _check_chrono(lstm, t_max)
    with torch.no_grad():
        for name, b_f in lstm.named_parameters():  # every layer and direction
            if name == "b_f" or name.startswith("b_f_"):
                b_i = getattr(lstm, "b_i" + name[len("b_f"):])
                # U[1, T_max - 1]
                u = 1 + (t_max - 2) * torch.rand(
                    b_f.shape, generator=generator, dtype=torch.float64
                )
                b_f.copy_(torch.log(u))  # (eq-lstm-chrono)
                b_i.copy_(-b_f)  # (eq-lstm-chrono)
    return lstm


def _check_chrono(lstm: LSTM, t_max: float) -> None:
    """What chrono initialisation needs: a forget gate, biases, T_max >= 2 (finite)."""
    if not lstm.forget_gate:
        raise ValueError("lstm must have a forget gate (forget_gate=True): chrono "
                         "initialisation sets the forget-gate biases b_f")
    if not lstm.bias:
        raise ValueError("lstm must have biases (bias=True): chrono initialisation sets them")
    check_real("t_max", t_max, min_value=2.0, finite=True)


def lstm_backward(
    lstm: LSTM,
    x: Float[Tensor, "B T D"],
    dl_dh: Float[Tensor, "B T H"],
) -> dict[str, Tensor]:
    r"""Back-propagation through time for a one-layer LSTM, written out by hand.

    The gradients of a loss :math:`L = \sum_t \ell_t(\mathbf{h}_t)` with respect to
    every parameter of ``lstm``, given :math:`\boldsymbol{\epsilon}_t = \partial
    \ell_t / \partial \mathbf{h}_t` (``dl_dh``), from the zero initial state. With
    :math:`\delta\bar{\mathbf{g}}_t, \delta\bar{\mathbf{i}}_t,
    \delta\bar{\mathbf{f}}_t, \delta\bar{\mathbf{o}}_t` the gradients of the gates'
    pre-activations (:math:`\bar{\mathbf{g}}_t = \mathbf{W}_{xg} \mathbf{x}_t +
    \mathbf{W}_{hg} \mathbf{h}_{t-1} + \mathbf{b}_g`, likewise for :math:`i, f, o`),
    going backwards from :math:`\delta\bar{\mathbf{g}}_{T+1} = \dots =
    \delta\mathbf{c}_{T+1} = \mathbf{0}`:

    .. math::
        \delta\mathbf{h}_t &= \boldsymbol{\epsilon}_t + \textstyle\sum_{\bullet}
            \mathbf{W}_{h\bullet}^\top \delta\bar{\boldsymbol{\bullet}}_{t+1}
            \quad (\bullet = g, i, f, o), \\
        \delta\bar{\mathbf{o}}_t &= \delta\mathbf{h}_t \odot \tanh(\mathbf{c}_t) \odot
            \sigma'(\bar{\mathbf{o}}_t), \\
        \delta\mathbf{c}_t &= \delta\mathbf{h}_t \odot \mathbf{o}_t \odot
            \tanh'(\mathbf{c}_t) + \delta\mathbf{c}_{t+1} \odot \mathbf{f}_{t+1}, \\
        \delta\bar{\mathbf{g}}_t &= \delta\mathbf{c}_t \odot \mathbf{i}_t \odot
            \tanh'(\bar{\mathbf{g}}_t), \quad
        \delta\bar{\mathbf{i}}_t = \delta\mathbf{c}_t \odot \mathbf{g}_t \odot
            \sigma'(\bar{\mathbf{i}}_t), \quad
        \delta\bar{\mathbf{f}}_t = \delta\mathbf{c}_t \odot \mathbf{c}_{t-1} \odot
            \sigma'(\bar{\mathbf{f}}_t), \\
        \frac{\partial L}{\partial \mathbf{W}_{x\bullet}} &= \sum_t
            \delta\bar{\boldsymbol{\bullet}}_t \mathbf{x}_t^\top, \quad
        \frac{\partial L}{\partial \mathbf{W}_{h\bullet}} = \sum_t
            \delta\bar{\boldsymbol{\bullet}}_t \mathbf{h}_{t-1}^\top, \quad
        \frac{\partial L}{\partial \mathbf{b}_\bullet} = \sum_t
            \delta\bar{\boldsymbol{\bullet}}_t,

    with :math:`\sigma' = \sigma(1 - \sigma)` and :math:`\tanh' = 1 - \tanh^2`
    (the equations of Greff et al. 2017, appendix, in this book's letters). Without
    a forget gate :math:`\mathbf{f}_t = 1` and there is no :math:`\delta\bar{\mathbf{f}}`.
    The forward pass is :meth:`LSTM.trace`; nothing is differentiated by autograd.

    Args:
        lstm: a one-layer, one-direction :class:`LSTM` without projection.
        x: inputs ``(B, T, D)`` in the parameters' dtype (``lstm.batch_first`` must
            be True, the default).
        dl_dh: :math:`\partial \ell_t / \partial \mathbf{h}_t`, shaped like the
            outputs, ``(B, T, H)``.

    Returns:
        The gradient of every parameter, by its name (``"W_xg"``, ``"W_hg"``,
        ``"b_g"``, ...), shaped like the parameter.

    Example:
        >>> lstm = LSTM(3, 4).double()
        >>> x, c = torch.randn(2, 5, 3).double(), torch.randn(2, 5, 4).double()
        >>> grads = lstm_backward(lstm, x, dl_dh=c)
        >>> (lstm(x)[0] * c).sum().backward()
        >>> torch.allclose(grads["W_hf"], lstm.W_hf.grad)
        True
    """
    _check_backward(lstm, x, dl_dh)
    with torch.no_grad():
        trace = lstm.trace(x)  # every g, i, f, c, o, h: (B, T, H)
        W_h = torch.cat([getattr(lstm, f"W_h{k}") for k in lstm.gate_names])
        f_next = _forget_next(trace)  # f_{t+1}; 1 without forget gate
        dp = x.new_zeros(len(x), W_h.shape[0])  # (B, G H)
        dc = torch.zeros_like(f_next[:, 0])  # (B, H)
        deltas = []
        for t in reversed(range(x.shape[1])):
            dh = dl_dh[:, t] + dp @ W_h  # (eq-lstm-bptt-h)
            dp, dc = lstm_step_backward(trace, t, dh, dc * f_next[:, t])
            deltas.append(dp)  # the gates' gradients at step t, (B, G H)
        dp_all = torch.stack(deltas[::-1], dim=1)  # (B, T, G H)
        h_prev = _delayed(trace.outputs)  # h_{t-1}: (B, T, H)
        return _weight_gradients(lstm, dp_all, x, h_prev)  # (eq-lstm-bptt-grad)


def lstm_step_backward(
    trace: LSTMTrace,
    t: int,
    dh: Float[Tensor, "B H"],
    dc_carried: Float[Tensor, "B H"],
) -> tuple[Float[Tensor, "B GH"], Float[Tensor, "B H"]]:
    r"""One step of :func:`lstm_backward`: from :math:`\delta\mathbf{h}_t` to the
    gradients of the gates' pre-activations and of the cell state at step ``t``.

    .. math::
        \delta\mathbf{c}_t = \delta\mathbf{h}_t \odot \mathbf{o}_t \odot
        \tanh'(\mathbf{c}_t) + \delta\mathbf{c}_{t+1} \odot \mathbf{f}_{t+1},

    then :math:`\delta\bar{\mathbf{o}}_t`, :math:`\delta\bar{\mathbf{g}}_t`,
    :math:`\delta\bar{\mathbf{i}}_t` and :math:`\delta\bar{\mathbf{f}}_t` as in
    :func:`lstm_backward`.

    Args:
        trace: the forward pass of a one-layer, one-direction LSTM
            (:meth:`LSTM.trace`), fields ``(B, T, H)``.
        t: the step, ``0 <= t < T``.
        dh: :math:`\delta\mathbf{h}_t = \partial L / \partial \mathbf{h}_t`,
            ``(B, H)``.
        dc_carried: what the carousel carries back,
            :math:`\delta\mathbf{c}_{t+1} \odot \mathbf{f}_{t+1}` (zeros at the
            last step), ``(B, H)``.

    Returns:
        ``(dp, dc)``: the gradients of the pre-activations of the gates
        ``gate_names`` (``g, i, f, o`` or ``g, i, o``) stacked, ``(B, G H)``, and
        :math:`\delta\mathbf{c}_t`, ``(B, H)``.

    Example:
        >>> lstm = LSTM(2, 3)
        >>> trace = lstm.trace(torch.randn(4, 5, 2))
        >>> dp, dc = lstm_step_backward(trace, 4, torch.ones(4, 3), torch.zeros(4, 3))
        >>> tuple(dp.shape), tuple(dc.shape)
        ((4, 12), (4, 3))
    """
    _check_step(trace, t, dh, dc_carried)
    g, i, c, o = (v[:, t] for v in (trace.cell_input, trace.input_gate,
                                    trace.cell_state, trace.output_gate))
    tanh_c = torch.tanh(c)
    do = dh * tanh_c * o * (1 - o)  # (eq-lstm-bptt-o)
    dc = dh * o * (1 - tanh_c**2) + dc_carried  # (eq-lstm-bptt-c)
    dg = dc * i * (1 - g**2)  # (eq-lstm-bptt-gates)
    di = dc * g * i * (1 - i)  # (eq-lstm-bptt-gates)
    if trace.forget_gate is None:  # the 1997 LSTM: no forget gate
        return torch.cat([dg, di, do], dim=1), dc
    f = trace.forget_gate[:, t]
    c_prev = trace.cell_state[:, t - 1] if t > 0 else torch.zeros_like(c)
    df = dc * c_prev * f * (1 - f)  # (eq-lstm-bptt-gates)
    return torch.cat([dg, di, df, do], dim=1), dc


def _delayed(values: Float[Tensor, "B T H"]) -> Float[Tensor, "B T H"]:
    """``values`` one step later: at ``t`` the value of ``t - 1``, zeros at ``t = 0``."""
    return torch.cat([torch.zeros_like(values[:, :1]), values[:, :-1]], dim=1)


def _forget_next(trace: LSTMTrace) -> Float[Tensor, "B T H"]:
    """:math:`\\mathbf{f}_{t+1}` at ``t``: the factor by which the carousel carries
    :math:`\\delta\\mathbf{c}_{t+1}` back; 1 without forget gate, 0 after the last step."""
    cells = trace.cell_state
    f = trace.forget_gate if trace.forget_gate is not None else torch.ones_like(cells)
    return torch.cat([f[:, 1:], torch.zeros_like(f[:, :1])], dim=1)


def _check_step(trace: LSTMTrace, t: int, dh: Tensor, dc_carried: Tensor) -> None:
    """What :func:`lstm_step_backward` needs: a trace, a step in it, and ``dh`` and
    ``dc_carried`` shaped like one step of its cell states."""
    if not isinstance(trace, LSTMTrace):
        raise TypeError(f"trace must be an LSTMTrace, got {type(trace).__name__}")
    if trace.cell_state.dim() != 3:
        raise ValueError("trace must be batch-first (B, T, H), got cell states of shape "
                         f"{tuple(trace.cell_state.shape)}")
    check_int("t", t, min_value=0, max_value=trace.cell_state.shape[1] - 1)
    expected = tuple(trace.cell_state[:, t].shape)
    for name, value in (("dh", dh), ("dc_carried", dc_carried)):
        if tuple(value.shape) != expected:
            raise ValueError(f"{name} must have the shape of one step's cell states "
                             f"{expected}, got {tuple(value.shape)}")


def _weight_gradients(
    lstm: LSTM,
    d_pre: Float[Tensor, "B T GH"],
    x: Float[Tensor, "B T D"],
    h_prev: Float[Tensor, "B T H"],
) -> dict[str, Tensor]:
    """The sums over the batch and time of :func:`lstm_backward`, split by gate."""
    sums = {
        "W_x": torch.einsum("btg,btd->gd", d_pre, x),  # (eq-lstm-bptt-grad)
        "W_h": torch.einsum("btg,bth->gh", d_pre, h_prev),  # (eq-lstm-bptt-grad)
        "b_": d_pre.sum(dim=(0, 1)),  # (eq-lstm-bptt-grad)
    }
    grads = {}
    for kind, total in sums.items():
        if kind == "b_" and not lstm.bias:
            continue
        for gate, part in zip(lstm.gate_names, total.chunk(len(lstm.gate_names))):
            grads[f"{kind}{gate}"] = part
    return grads


def _check_backward(lstm: LSTM, x: Tensor, dl_dh: Tensor) -> None:
    """What :func:`lstm_backward` needs: one layer and direction, no projection, and
    ``dl_dh`` shaped like the outputs of ``x``."""
    if not isinstance(lstm, LSTM):
        raise TypeError(f"lstm must be a seqbook.recurrent.LSTM, got {type(lstm).__name__}")
    if lstm.num_layers != 1 or lstm.bidirectional or lstm.proj_size or not lstm.batch_first:
        raise ValueError("lstm must have one layer, one direction, no projection and "
                         f"batch_first=True, got num_layers={lstm.num_layers}, "
                         f"bidirectional={lstm.bidirectional}, proj_size={lstm.proj_size}, "
                         f"batch_first={lstm.batch_first}")
    for name, value in (("x", x), ("dl_dh", dl_dh)):
        if not isinstance(value, Tensor):
            raise TypeError(f"{name} must be a torch.Tensor, got {type(value).__name__}")
        if value.dim() != 3:
            raise ValueError(f"{name} must be 3-dimensional, got shape {tuple(value.shape)}")
    expected = (*x.shape[:2], lstm.hidden_size)
    if tuple(dl_dh.shape) != expected:
        raise ValueError(f"dl_dh must have the outputs' shape {expected}, "
                         f"got {tuple(dl_dh.shape)}")
    if dl_dh.dtype != x.dtype:
        raise TypeError(f"dl_dh must have x's dtype {x.dtype}, got {dl_dh.dtype}")
