r"""The sLSTM of xLSTM (Beck et al., 2024): an LSTM with exponential input gates, a
normaliser state and a stabiliser state that keeps the exponentials finite.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_positive_int, check_same_dtype, check_tensor

__all__ = ["SLSTMState", "SLSTM"]


class SLSTMState(NamedTuple):
    """The sLSTM's state: hidden ``h``, cell ``c``, normaliser ``n`` and stabiliser
    ``m`` (the log of the scale by which ``c`` and ``n`` are divided), each ``(B, H)``."""

    h: Tensor
    c: Tensor
    n: Tensor
    m: Tensor


def _check_step(pre: Tensor, state: SLSTMState) -> None:
    """What the types cannot say: ``pre`` is ``(B, 4H)``, and each of the state's
    tensors is ``(B, H)`` with the dtype of ``pre``."""
    B, width = pre.shape
    if width % 4:
        raise ValueError(f"pre must have shape (B, 4H) with 4H a multiple of 4, got "
                         f"{tuple(pre.shape)}")
    for name, value in zip(("state.h", "state.c", "state.n", "state.m"), state):
        check_tensor(name, value, shape=(B, width // 4))
        check_same_dtype(name, value, pre.dtype, of="the input")


class SLSTM(nn.Module):
    r"""One sLSTM layer (one head): exponential input gate, sigmoid forget gate.

    .. math::
        \mathbf{c}_t = \mathbf{f}_t \odot \mathbf{c}_{t-1} + \mathbf{i}_t \odot
        \mathbf{g}_t, \quad \mathbf{n}_t = \mathbf{f}_t \odot \mathbf{n}_{t-1} +
        \mathbf{i}_t, \quad \mathbf{h}_t = \mathbf{o}_t \odot \mathbf{c}_t /
        \mathbf{n}_t,

    with the cell input :math:`\mathbf{g}_t = \tanh(\tilde{\mathbf{g}}_t)` (the
    paper's :math:`\mathbf{z}_t`), :math:`\mathbf{i}_t = \exp(\tilde{\mathbf{i}}_t)`,
    :math:`\mathbf{f}_t = \sigma(\tilde{\mathbf{f}}_t)`,
    :math:`\mathbf{o}_t = \sigma(\tilde{\mathbf{o}}_t)` and each pre-activation
    :math:`\tilde{\boldsymbol{\bullet}}_t = \mathbf{W}_{x\bullet}\mathbf{x}_t +
    \mathbf{W}_{h\bullet}\mathbf{h}_{t-1} + \mathbf{b}_\bullet` (:math:`\bullet = i, f,
    g, o`). The step is computed with :math:`\mathbf{c}` and
    :math:`\mathbf{n}` divided by :math:`e^{\mathbf{m}_t}` (see :meth:`step`), which
    leaves :math:`\mathbf{h}` unchanged.

    Args:
        input_size: ``D``.
        hidden_size: ``H``.

    Shapes:
        x: ``(B, T, D)``; returns the hidden states ``(B, T, H)`` and the last state.

    Attributes:
        W_x: the input weights :math:`\mathbf{W}_{x\bullet}` of the gates ``i, f, g,
            o``, stacked, ``(4H, D)``.
        W_h: their recurrent weights :math:`\mathbf{W}_{h\bullet}`, stacked, ``(4H, H)``.
        b: their biases, stacked, ``(4H,)``.

    Example:
        >>> layer = SLSTM(3, 4)
        >>> h, state = layer(torch.randn(2, 5, 3))
        >>> h.shape, state.m.shape
        (torch.Size([2, 5, 4]), torch.Size([2, 4]))
    """

    gate_names = ("i", "f", "g", "o")

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        check_positive_int("input_size", input_size)
        check_positive_int("hidden_size", hidden_size)
        D = input_size
        H = hidden_size
        bound = 1 / math.sqrt(H)
        self.W_x = nn.Parameter(torch.empty(4 * H, D).uniform_(-bound, bound))  # i, f, g, o
        self.W_h = nn.Parameter(torch.empty(4 * H, H).uniform_(-bound, bound))
        self.b = nn.Parameter(torch.zeros(4 * H))
        self.input_size, self.hidden_size = D, H

    def init_state(self, batch_size: int) -> SLSTMState:
        """Zero memory; the stabiliser starts at minus infinity (nothing written yet)."""
        check_positive_int("batch_size", batch_size)
        zeros = self.b.new_zeros(batch_size, self.hidden_size)
        return SLSTMState(zeros, zeros, zeros, torch.full_like(zeros, -math.inf))

    def forward(
        self,
        x: Float[Tensor, "B T {self.input_size}"],
        state: SLSTMState | None = None,
    ) -> tuple[Float[Tensor, "B T {self.hidden_size}"], SLSTMState]:
        if x.shape[1] == 0:  # a loop over no steps
            raise ValueError(f"x must have shape (B, T, input_size) with T >= 1, got "
                             f"{tuple(x.shape)}")
        state = self.init_state(x.shape[0]) if state is None else state
        pre_x = x @ self.W_x.T + self.b  # (B, T, 4H): the input's part, all steps at once
        _check_step(pre_x[:, 0], state)  # a state of this batch, width and dtype
        hs = []
        for t in range(x.shape[1]):
            state = self.step(pre_x[:, t] + state.h @ self.W_h.T, state)
            hs.append(state.h)
        return torch.stack(hs, dim=1), state  # (B, T, H)

    @staticmethod
    def step(pre: Float[Tensor, "B H4"], state: SLSTMState) -> SLSTMState:
        r"""One stabilised step from the pre-activations ``pre`` = :math:`(\tilde{\mathbf{i}},
        \tilde{\mathbf{f}}, \tilde{\mathbf{g}}, \tilde{\mathbf{o}})`, ``(B, 4H)``, and a
        state of ``(B, H)`` tensors.

        .. math::
            \mathbf{m}_t = \max(\log\mathbf{f}_t + \mathbf{m}_{t-1}, \tilde{\mathbf{i}}_t),
            \quad \mathbf{i}'_t = e^{\tilde{\mathbf{i}}_t - \mathbf{m}_t}, \quad
            \mathbf{f}'_t = e^{\log\mathbf{f}_t + \mathbf{m}_{t-1} - \mathbf{m}_t}

        replace :math:`\mathbf{i}_t, \mathbf{f}_t` in the updates of :math:`\mathbf{c}`
        and :math:`\mathbf{n}`: both are then stored divided by :math:`e^{\mathbf{m}_t}`,
        every exponential is at most 1, and :math:`\mathbf{h}_t = \mathbf{o}_t \odot
        \mathbf{c}_t / \mathbf{n}_t` is unchanged.
        """
        _check_step(pre, state)  # (B, 4H), and a state of (B, H) tensors
        i_pre, f_pre, g_pre, o_pre = pre.chunk(4, dim=-1)  # (B, H) each
        log_f = F.logsigmoid(f_pre)  # log of the sigmoid forget gate
        m = torch.maximum(log_f + state.m, i_pre)  # (eq-slstm-stabiliser)
        i = torch.exp(i_pre - m)  # exp(i~) / e^m
        f = torch.exp(log_f + state.m - m)  # f e^{m_prev} / e^m
        c = f * state.c + i * torch.tanh(g_pre)  # (eq-slstm-cell)
        n = f * state.n + i  # (eq-slstm-normaliser)
        h = torch.sigmoid(o_pre) * c / n  # (eq-slstm-hidden)
        return SLSTMState(h, c, n, m)
