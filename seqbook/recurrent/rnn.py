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

import torch
from torch import nn

from seqbook._contracts import InstanceOf, OneOf
from seqbook.recurrent._sequence import ModuleInput, State, run_masked
from seqbook.recurrent.stack import Lengths, NoProjection, RecurrentStack

__all__ = ["RNN"]

_NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu}


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

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        nonlinearity: OneOf(*_NONLINEARITIES) = "tanh",
        bias: bool = True,
        batch_first: bool = True,
        dropout: float = 0.0,
        bidirectional: bool = False,
        *,
        proj_size: NoProjection("RNN") = 0,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__(input_size, hidden_size, num_layers, bias, batch_first, dropout,
                         bidirectional, device, dtype)
        self.nonlinearity = nonlinearity
        self._build()

    def _make_parameters(self, suffix: str, input_size: int) -> None:
        H = self.hidden_size
        self._new_parameter(f"W_xh{suffix}", H, input_size)
        self._new_parameter(f"W_hh{suffix}", H, H)
        self._new_parameter(f"b_h{suffix}", H, is_bias=True)

    def extra_repr(self) -> str:
        nonlinearity = (
            "" if self.nonlinearity == "tanh" else f", nonlinearity={self.nonlinearity!r}"
        )
        return super().extra_repr() + nonlinearity

    def _step(
        self, x_part: torch.Tensor, h_prev: torch.Tensor, W_hh: torch.Tensor,
        b_h: torch.Tensor,
    ) -> torch.Tensor:
        """The update rule, given W_xh x_t (computed for all t at once)."""
        a_t = x_part + h_prev @ W_hh.T + b_h  # (B, H)
        return _NONLINEARITIES[self.nonlinearity](a_t)  # (eq-rnn-elman)

    def _one_direction(self, x, state, mask, suffix, record=False):
        W_xh, W_hh, b_h = (
            self._parameter(f"{name}{suffix}") for name in ("W_xh", "W_hh", "b_h")
        )

        def step(x_part: torch.Tensor, state: State) -> tuple[State, None]:
            return (self._step(x_part, state[0], W_hh, b_h),), None

        # W_xh x_t for every t at once, then the recurrence step by step
        out, final, _ = run_masked(step, x @ W_xh.T, state, mask)  # (B, T, H)
        return out, final, None

    def cell(
        self, x_t: ModuleInput("B input_size"), h_prev: ModuleInput("B hidden_size")
    ) -> torch.Tensor:
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
        b_h = self._parameter("b_h")  # 0 without bias
        return self._step(x_t @ self.W_xh.T, h_prev, self.W_hh, b_h)  # (B, H)

    def forward(
        self,
        x: torch.Tensor,
        h0: torch.Tensor | None = None,
        lengths: Lengths | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
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
    def from_torch(cls, rnn: InstanceOf(nn.RNN, what="a torch.nn.RNN")) -> "RNN":
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
        return ours._copy_all_from_torch(rnn)

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
        return self._torch_twin()

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
