r"""The Elman recurrent network, written from its update rule.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units.

The module is the recurrence of the book's chapter "Recurrent neural networks",

.. math:: h_t = f(W_{xh} x_t + W_{hh} h_{t-1} + b_h),

with one bias vector ``b_h``. ``torch.nn.RNN`` keeps two (``bias_ih`` and
``bias_hh``) that are only ever added together; :meth:`RNN.from_torch` folds them
into one, so the two modules compute the same function.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seqbook._checks import check_choice, check_positive_int
from seqbook.recurrent._sequence import (
    check_sequence_batch,
    check_state,
    check_step_input,
    padding_mask,
    run_masked,
)

__all__ = ["RNN"]

_NONLINEARITIES = {"tanh": torch.tanh, "relu": torch.relu}


class RNN(nn.Module):
    r"""Elman RNN: one layer, a hidden state carried from step to step.

    .. math::
        h_t = f\left(W_{xh} x_t + W_{hh} h_{t-1} + b_h\right), \qquad h_0 = 0
        \text{ unless given},

    with :math:`f` = ``tanh`` or ``relu``, the same weights at every time step.

    Args:
        input_size: ``D``, features per time step (>= 1).
        hidden_size: ``H``, hidden units (>= 1).
        nonlinearity: ``"tanh"`` or ``"relu"``, as in ``torch.nn.RNN``.
        batch_first: inputs and outputs are ``(B, T, .)`` if True (the book's
            convention), ``(T, B, .)`` if False.

    Shapes:
        ``x``: ``(B, T, D)``; ``h0``: ``(B, H)``; ``lengths``: ``(B,)``;
        ``outputs``: ``(B, T, H)``, the hidden state of every step;
        ``h_T``: ``(B, H)``, the last one (at each sequence's own length when
        ``lengths`` is given).

    Attributes:
        W_xh: input weights, ``(H, D)``.
        W_hh: recurrent weights, ``(H, H)``.
        b_h: bias, ``(H,)``.

    Example:
        >>> rnn = RNN(3, 5)
        >>> outputs, h_T = rnn(torch.randn(2, 7, 3))
        >>> tuple(outputs.shape), tuple(h_T.shape)
        ((2, 7, 5), (2, 5))
        >>> torch.equal(outputs[:, -1], h_T)
        True
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        nonlinearity: str = "tanh",
        batch_first: bool = True,
    ) -> None:
        super().__init__()
        self.input_size = check_positive_int("input_size", input_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.nonlinearity = check_choice("nonlinearity", nonlinearity, tuple(_NONLINEARITIES))
        if not isinstance(batch_first, bool):
            raise TypeError(f"batch_first must be a bool, got {batch_first!r}")
        self.batch_first = batch_first
        self.W_xh = nn.Parameter(torch.empty(hidden_size, input_size))
        self.W_hh = nn.Parameter(torch.empty(hidden_size, hidden_size))
        self.b_h = nn.Parameter(torch.empty(hidden_size))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Uniform in :math:`\\pm 1/\\sqrt{H}`, the initialisation of ``nn.RNN``."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    def extra_repr(self) -> str:
        return (
            f"{self.input_size}, {self.hidden_size}, nonlinearity={self.nonlinearity!r}, "
            f"batch_first={self.batch_first}"
        )

    def cell(self, x_t: torch.Tensor, h_prev: torch.Tensor) -> torch.Tensor:
        r"""One time step, :math:`h_t = f(W_{xh} x_t + W_{hh} h_{t-1} + b_h)`.

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
        check_step_input(x_t, self.input_size)
        check_state("h_prev", h_prev, x_t.shape[0], self.hidden_size)
        return self._step(x_t @ self.W_xh.T, h_prev)  # (B, H)

    def _step(self, input_part: torch.Tensor, h_prev: torch.Tensor) -> torch.Tensor:
        """The update rule, given W_xh x_t already computed (for all t at once)."""
        a_t = input_part + h_prev @ self.W_hh.T + self.b_h  # (B, H)
        return _NONLINEARITIES[self.nonlinearity](a_t)  # (eq-rnn-elman)

    def forward(
        self,
        x: torch.Tensor,
        h0: torch.Tensor | None = None,
        lengths: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Run the recurrence over a batch of sequences.

        Args:
            x: inputs, ``(B, T, D)`` (or ``(T, B, D)`` if ``batch_first=False``),
                ``T >= 1``.
            h0: initial state ``(B, H)``; zeros if None.
            lengths: optional ``(B,)`` integer lengths in ``[0, T]`` of padded
                sequences. The state then stops changing after each sequence's
                last real step, so ``h_T`` is the state at the sequence's own end,
                and the outputs at padding positions are zeros (as
                ``pack_padded_sequence`` gives with ``nn.RNN``).

        Returns:
            ``(outputs, h_T)``: all hidden states ``(B, T, H)`` and the final one
            ``(B, H)``.
        """
        x = check_sequence_batch(x, self.input_size, self.batch_first)  # (B, T, D)
        B, T, _ = x.shape
        h = x.new_zeros(B, self.hidden_size) if h0 is None else h0
        check_state("h0", h, B, self.hidden_size)
        mask = padding_mask(lengths, B, T, x.device)  # (B, T, 1) or None
        # W_xh x_t for every t at once, then the recurrence step by step
        out, h = run_masked(self._step, x @ self.W_xh.T, h, mask)  # (B, T, H), (B, H)
        if not self.batch_first:
            out = out.transpose(0, 1)  # (T, B, H)
        return out, h

    @classmethod
    def from_torch(cls, rnn: nn.RNN) -> "RNN":
        """An :class:`RNN` computing the same function as a one-layer ``nn.RNN``.

        Copies ``weight_ih_l0`` to ``W_xh``, ``weight_hh_l0`` to ``W_hh`` and
        ``bias_ih_l0 + bias_hh_l0`` to ``b_h`` (zeros without bias), on the same
        device and dtype.

        Example:
            >>> reference = nn.RNN(3, 4, batch_first=True)
            >>> ours = RNN.from_torch(reference)
            >>> x = torch.randn(2, 5, 3)
            >>> torch.allclose(ours(x)[0], reference(x)[0], atol=1e-6)
            True
        """
        if not isinstance(rnn, nn.RNN):
            raise TypeError(f"rnn must be a torch.nn.RNN, got {type(rnn).__name__}")
        if rnn.num_layers != 1 or rnn.bidirectional:
            raise ValueError(
                "rnn must have num_layers=1 and bidirectional=False, got "
                f"num_layers={rnn.num_layers}, bidirectional={rnn.bidirectional}"
            )
        ours = cls(rnn.input_size, rnn.hidden_size, rnn.nonlinearity, rnn.batch_first)
        weight = rnn.weight_ih_l0
        ours.to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            ours.W_xh.copy_(rnn.weight_ih_l0)
            ours.W_hh.copy_(rnn.weight_hh_l0)
            if rnn.bias:
                ours.b_h.copy_(rnn.bias_ih_l0 + rnn.bias_hh_l0)
            else:
                ours.b_h.zero_()
        return ours
