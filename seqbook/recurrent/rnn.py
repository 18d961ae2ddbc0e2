r"""The Elman recurrent network, written from its update rule.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units,
``K = num_layers * num_directions``.

The module is the recurrence of the book's chapter "Recurrent neural networks",

.. math:: h_t = f(W_{xh} x_t + W_{hh} h_{t-1} + b_h),

with one bias vector ``b_h``. ``torch.nn.RNN`` keeps two (``bias_ih`` and
``bias_hh``) that are only ever added together; :meth:`RNN.from_torch` folds them
into one, so the two modules compute the same function. Stacked layers and a
backward direction (``num_layers``, ``bidirectional``) come from
:class:`~seqbook.recurrent.RecurrentStack`.
"""

from __future__ import annotations

from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_choice
from seqbook.recurrent._sequence import State, Step
from seqbook.recurrent.stack import (
    Inputs,
    Lengths,
    Outputs,
    RecurrentStack,
    _check_no_projection,
)

__all__ = ["RNN"]

_NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu}
# a hidden state, or the input part of one step, (B, H)
Hidden: TypeAlias = Float[Tensor, "B {self.hidden_size}"]
# W_hh of one layer and direction, (H, H)
Recurrent: TypeAlias = Float[Tensor, "{self.hidden_size} {self.hidden_size}"]
# b_h, (H,); the constant 0 without bias
Bias: TypeAlias = Float[Tensor, "{self.hidden_size}"] | Float[Tensor, ""]  # noqa: F821
# initial and final states, (K, B, H) with K = num_layers * num_directions
States: TypeAlias = Float[Tensor, "{self.num_layers*self.num_directions} B {self.hidden_size}"]


class RNN(RecurrentStack):
    r"""Elman RNN: a hidden state carried from step to step, in one or more layers.

    .. math::
        h_t = f\left(W_{xh} x_t + W_{hh} h_{t-1} + b_h\right), \qquad h_0 = 0
        \text{ unless given},

    with :math:`f` = ``tanh`` or ``relu``, the same weights at every time step. With
    ``num_layers`` > 1, layer :math:`l` reads the states of layer :math:`l - 1`
    instead of :math:`x_t`; with ``bidirectional=True`` each layer also runs from the
    end of each sequence to its start (see :class:`~seqbook.recurrent.RecurrentStack`).

    Args:
        input_size: ``D``, features per time step (>= 1).
        hidden_size: ``H``, hidden units per layer and direction (>= 1).
        num_layers: stacked layers (>= 1).
        nonlinearity: ``"tanh"`` or ``"relu"``, as in ``torch.nn.RNN``.
        bias: with the bias :math:`b_h` (False: no bias parameter at all).
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
        ``x``: ``(B, T, D)`` or a ``PackedSequence``; ``h0``: ``(K, B, H)``;
        ``lengths``: ``(B,)``;
        ``outputs``: ``(B, T, num_directions * H)``, the last layer's states at every
        step; ``h_n``: ``(K, B, H)``, every layer's and direction's final state (at
        each sequence's own end when ``lengths`` is given).

    Attributes:
        W_xh: input weights of the first layer, ``(H, D)``.
        W_hh: its recurrent weights, ``(H, H)``.
        b_h: its bias, ``(H,)`` (None if ``bias=False``).
        W_xh_l1, W_hh_l1, b_h_l1, W_xh_reverse, ...: those of the other layers
            and directions (torch's suffixes).

    Example:
        >>> rnn = RNN(3, 5)
        >>> outputs, h_n = rnn(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), tuple(h_n.shape)
        ((2, 7, 5), (1, 2, 5))
        >>> torch.equal(outputs[:, -1], h_n[-1])
        True
        >>> deep = RNN(3, 5, num_layers=2, bidirectional=True)
        >>> outputs, h_n = deep(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), tuple(h_n.shape)
        ((2, 7, 10), (4, 2, 5))
    """

    _torch_class = nn.RNN
    _parameter_names = ("W_xh", "W_hh", "b_h")
    # the first layer's parameters (those of the others carry a suffix)
    W_xh: Tensor
    W_hh: Tensor
    b_h: Tensor | None

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: str = "tanh",
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
        self.nonlinearity = check_choice("nonlinearity", nonlinearity, _NONLINEARITIES)
        _check_no_projection("proj_size", proj_size, module="RNN")
        H = hidden_size
        for suffix, D_l in self._layer_inputs():  # every layer and direction
            self._new_parameter(f"W_xh{suffix}", H, D_l)
            self._new_parameter(f"W_hh{suffix}", H, H)
            self._new_parameter(f"b_h{suffix}", H, is_bias=True)
        self.reset_parameters()

    def extra_repr(self) -> str:
        nonlinearity = (
            "" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity!r}"
        )
        return super().extra_repr() + nonlinearity

    def step(
        self, x_part: Hidden, h_prev: Hidden, W_hh: Recurrent, b_h: Bias
    ) -> Hidden:
        r"""The update rule, :math:`h_t = f(W_{xh} x_t + W_{hh} h_{t-1} + b_h)`, given
        its input part :math:`W_{xh} x_t` (computed for all :math:`t` at once).

        Args:
            x_part: :math:`W_{xh} x_t`, ``(B, H)``.
            h_prev: the previous hidden state :math:`h_{t-1}`, ``(B, H)``.
            W_hh, b_h: the recurrent weights ``(H, H)`` and the bias ``(H,)`` (a
                zero-dimensional 0 without bias) of one layer and direction.

        Returns:
            :math:`h_t`, ``(B, H)``.

        Example:
            >>> rnn = RNN(2, 3)
            >>> x_t, h = torch.randn(4, 2), torch.randn(4, 3)
            >>> h_t = rnn.step(x_t @ rnn.W_xh.T, h, rnn.W_hh, rnn.b_h)
            >>> torch.equal(h_t, rnn.cell(x_t, h))
            True
        """
        a_t = x_part + h_prev @ W_hh.T + b_h  # (B, H)
        return _NONLINEARITIES[self.nonlinearity](a_t)  # (eq-rnn-elman)

    def recurrence(
        self, x: Float[Tensor, "*batch D"], layer: int = 0, direction: int = 0
    ) -> tuple[Float[Tensor, "*batch {self.hidden_size}"], Step]:
        """The recurrence of one layer and direction: the input parts
        :math:`W_{xh} x_t` of every step of ``x`` ``(B, T, D)`` in one matrix product,
        and the function ``advance(x_part, (h_prev,)) -> ((h_t,), None)`` that the
        stack runs over time.

        Example:
            >>> rnn = RNN(2, 3)
            >>> x, h = torch.randn(4, 5, 2), torch.zeros(4, 3)
            >>> x_parts, advance = rnn.recurrence(x)
            >>> (h_1,), _ = advance(x_parts[:, 0], (h,))
            >>> torch.equal(h_1, rnn(x)[0][:, 0])
            True
        """
        w = self._layer_parameters(layer, direction)  # W_xh, W_hh, b_h

        def advance(x_part: Tensor, state: State) -> tuple[State, None]:
            return (self.step(x_part, state[0], w.W_hh, w.b_h),), None

        return x @ w.W_xh.T, advance  # W_xh x_t for every t at once

    def cell(self, x_t: Float[Tensor, "B {self.input_size}"], h_prev: Hidden) -> Hidden:
        r"""One time step, :math:`h_t = f(W_{xh} x_t + W_{hh} h_{t-1} + b_h)`.

        For a one-layer, one-direction RNN (like ``torch.nn.RNNCell``).

        Args:
            x_t: the input of this step, ``(B, D)``.
            h_prev: the previous hidden state :math:`h_{t-1}`, ``(B, H)``.

        Returns:
            :math:`h_t`, ``(B, H)``.

        Example:
            >>> rnn = RNN(2, 3)
            >>> rnn.cell(torch.zeros(4, 2), torch.zeros(4, 3)).shape
            torch.Size([4, 3])
        """
        self._check_one_layer("cell")
        x_part, advance = self.recurrence(x_t)  # W_xh x_t, (B, H)
        (h,), _ = advance(x_part, (h_prev,))
        return h

    def forward(
        self, x: Inputs, h0: States | None = None, lengths: Lengths | None = None
    ) -> tuple[Outputs, States]:
        """Run the recurrence over a batch of sequences.

        Args:
            x: inputs, ``(B, T, D)`` (or ``(T, B, D)`` if ``batch_first=False``),
                ``T >= 1``, in the parameters' dtype; or a ``PackedSequence`` (then
                ``outputs`` is one too, as with ``nn.RNN``).
            h0: initial states ``(K, B, H)``, ``K = num_layers * num_directions``;
                zeros if None.
            lengths: optional ``(B,)`` integer lengths in ``[0, T]`` of padded
                sequences. The state then stops changing after each sequence's
                last real step, so ``h_n`` holds the state at the sequence's own end,
                the backward direction starts at each sequence's last real step, and
                the outputs at padding positions are zeros (as
                ``pack_padded_sequence`` gives with ``nn.RNN``).

        Returns:
            ``(outputs, h_n)``: the last layer's states ``(B, T, num_directions * H)``
            and every layer's final state ``(K, B, H)``.
        """
        out, h_n, _ = self._run(x, h0, lengths)
        return out, h_n

    @classmethod
    def from_torch(cls, rnn: nn.RNN) -> RNN:
        """An :class:`RNN` computing the same function as an ``nn.RNN``.

        Same configuration (``num_layers``, ``nonlinearity``, ``bias``, ``batch_first``,
        ``dropout``, ``bidirectional``), device, dtype and training mode. For every
        layer and direction, copies ``weight_ih_l{k}`` to ``W_xh``, ``weight_hh_l{k}``
        to ``W_hh`` and ``bias_ih_l{k} + bias_hh_l{k}`` to ``b_h`` (an ``nn.RNN``
        without bias gives an RNN without bias).

        Example:
            >>> reference = nn.RNN(3, 4, num_layers=2, batch_first=True)
            >>> ours = RNN.from_torch(reference)
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], reference(x)[0], atol=1e-6)
            True
        """
        ours = cls(rnn.input_size, rnn.hidden_size, rnn.num_layers, rnn.nonlinearity,
                   rnn.bias, rnn.batch_first, float(rnn.dropout), rnn.bidirectional)
        ours._copy_all_from_torch(rnn)
        return ours

    def to_torch(self) -> nn.RNN:
        """An ``nn.RNN`` computing the same function (configuration, device, dtype, mode).

        ``b_h`` goes to ``bias_ih_l{k}``, and ``bias_hh_l{k}`` gets zeros.

        Example:
            >>> ours = RNN(3, 4, bidirectional=True)
            >>> twin = ours.to_torch()
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], twin(x)[0], atol=1e-6)
            True
        """
        twin = self._torch_twin()
        assert isinstance(twin, nn.RNN)
        return twin

    def _torch_settings(self) -> dict[str, str]:
        return {"nonlinearity": self.nonlinearity}

    def _copy_from_torch(self, module: nn.RNN, suffix: str, torch_suffix: str) -> None:
        getattr(self, f"W_xh{suffix}").copy_(getattr(module, f"weight_ih{torch_suffix}"))
        getattr(self, f"W_hh{suffix}").copy_(getattr(module, f"weight_hh{torch_suffix}"))
        if self.bias:
            getattr(self, f"b_h{suffix}").copy_(
                getattr(module, f"bias_ih{torch_suffix}")
                + getattr(module, f"bias_hh{torch_suffix}")
            )

    def _copy_to_torch(self, module: nn.RNN, suffix: str, torch_suffix: str) -> None:
        getattr(module, f"weight_ih{torch_suffix}").copy_(getattr(self, f"W_xh{suffix}"))
        getattr(module, f"weight_hh{torch_suffix}").copy_(getattr(self, f"W_hh{suffix}"))
        if self.bias:
            getattr(module, f"bias_ih{torch_suffix}").copy_(getattr(self, f"b_h{suffix}"))
            getattr(module, f"bias_hh{torch_suffix}").zero_()
