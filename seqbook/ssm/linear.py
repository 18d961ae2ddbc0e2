r"""Linear time-invariant state-space models: discretisation, recurrence, convolution, S4D.

A continuous state-space model maps an input signal :math:`x(t)` to an output
:math:`y(t)` through a state :math:`\mathbf{h}(t) \in \mathbb{R}^N`:
:math:`\mathbf{h}'(t) = \mathbf{A}\mathbf{h}(t) + \mathbf{B}x(t)`,
:math:`y(t) = \mathbf{C}\mathbf{h}(t)`. Sampled with a step :math:`\Delta` it becomes a
linear recurrence, which is also a convolution with a kernel that can be computed in
advance (Gu, Goel & Re, 2022; Gu et al., 2022, for the diagonal S4D).

Shape letters: ``b`` batch (``B`` is the model's input matrix here), ``L`` length,
``D`` channels, ``N`` state size.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seqbook._contracts import (
    MultipleOf,
    PositiveInt,
    PositiveReal,
    RandomGenerator,
    Shaped,
)

__all__ = ["zoh", "ssm_recurrence", "ssm_kernel", "ssm_convolution", "S4D"]

# a discrete one-channel system: its state, input and output matrices
StateMatrix = Shaped("N N", floating=True)
InputMatrix = Shaped("N 1", dtype_of="A_bar")
OutputMatrix = Shaped("1 N", dtype_of="A_bar")


def zoh(
    A: Shaped("N N", floating=True), B: Shaped("N M", dtype_of="A"), delta: PositiveReal
) -> tuple[torch.Tensor, torch.Tensor]:
    r"""Zero-order-hold discretisation of :math:`\mathbf{h}' = \mathbf{A}\mathbf{h} +
    \mathbf{B}x`: the exact solution over a step :math:`\Delta` when :math:`x` is held
    constant during the step.

    .. math::
        \bar{\mathbf{A}} = e^{\Delta \mathbf{A}}, \qquad
        \bar{\mathbf{B}} = (\Delta\mathbf{A})^{-1}(e^{\Delta\mathbf{A}} - \mathbf{I})\,
        \Delta\mathbf{B}

    Args:
        A: the state matrix (invertible).
        B: the input matrix.
        delta: the step :math:`\Delta > 0`.

    Shapes:
        A: ``(N, N)``; B: ``(N, M)``; returns ``(N, N)``, ``(N, M)``.

    Example:
        >>> A_bar, B_bar = zoh(-torch.eye(1), torch.ones(1, 1), math.log(2))
        >>> A_bar, B_bar        # e^{-ln 2} = 1/2, and (1 - 1/2) / 1
        (tensor([[0.5000]]), tensor([[0.5000]]))
    """
    return _zoh(A, B, delta)


def _zoh(
    A: torch.Tensor, B: torch.Tensor, delta: float
) -> tuple[torch.Tensor, torch.Tensor]:
    A_bar = torch.linalg.matrix_exp(delta * A)  # (eq-ssm-zoh)
    I = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
    # (eq-ssm-zoh)
    B_bar = torch.linalg.solve(delta * A, (A_bar - I) @ (delta * B))
    return A_bar, B_bar


def ssm_recurrence(
    x: Shaped("b L", dtype_of="A_bar", min_size={"L": 1}),
    A_bar: StateMatrix,
    B_bar: InputMatrix,
    C: OutputMatrix,
) -> torch.Tensor:
    r"""Run the discrete SSM as a recurrence over a one-channel input signal.

    .. math::
        \mathbf{h}_t = \bar{\mathbf{A}}\mathbf{h}_{t-1} + \bar{\mathbf{B}}x_t, \qquad
        y_t = \mathbf{C}\mathbf{h}_t, \qquad \mathbf{h}_0 = 0

    Shapes:
        x: ``(b, L)``; A_bar: ``(N, N)``; B_bar: ``(N, 1)``; C: ``(1, N)``;
        returns ``(b, L)``.

    Example:
        >>> A_bar, B_bar = torch.tensor([[0.5]]), torch.tensor([[1.0]])
        >>> ssm_recurrence(torch.tensor([[1.0, 0.0, 0.0]]), A_bar, B_bar, torch.ones(1, 1))
        tensor([[1.0000, 0.5000, 0.2500]])
    """
    h = x.new_zeros(x.shape[0], A_bar.shape[0])  # (b, N)
    ys = []
    for t in range(x.shape[1]):
        h = h @ A_bar.T + x[:, t, None] * B_bar[:, 0]  # (eq-ssm-recurrence)
        ys.append(h @ C[0])  # (b,)
    return torch.stack(ys, dim=1)  # (b, L)


def ssm_kernel(
    A_bar: StateMatrix, B_bar: InputMatrix, C: OutputMatrix, length: PositiveInt
) -> torch.Tensor:
    r"""The convolution kernel of the discrete SSM: its response to a unit impulse.

    .. math::
        \bar{K}_k = \mathbf{C}\bar{\mathbf{A}}^k\bar{\mathbf{B}}, \qquad
        k = 0, \dots, L - 1

    Shapes:
        A_bar: ``(N, N)``; B_bar: ``(N, 1)``; C: ``(1, N)``; returns ``(L,)``.

    Example:
        >>> ssm_kernel(torch.tensor([[0.5]]), torch.ones(1, 1), torch.ones(1, 1), 3)
        tensor([1.0000, 0.5000, 0.2500])
    """
    return _kernel(A_bar, B_bar, C, length)


def _kernel(A_bar: torch.Tensor, B_bar: torch.Tensor, C: torch.Tensor,
            length: int) -> torch.Tensor:
    terms, v = [], B_bar[:, 0]  # v = A_bar^k B_bar, (N,)
    for _ in range(length):
        terms.append(C[0] @ v)  # (eq-ssm-kernel)
        v = A_bar @ v
    return torch.stack(terms)  # (L,)


def ssm_convolution(
    x: Shaped("... L", floating=True, min_size={"L": 1}), K: Shaped("... L", floating=True)
) -> torch.Tensor:
    r"""Causal convolution of each signal with a kernel, by FFT.

    .. math::
        y_t = \sum_{k=0}^{t} \bar{K}_k\, x_{t-k}

    Both are padded to length :math:`2L` so that the FFT's circular convolution is the
    linear one: :math:`O(L \log L)` instead of :math:`O(L^2)`.

    Shapes:
        x: ``(..., L)``; K: ``(..., L)`` (broadcast against x); returns ``(..., L)``.

    Example:
        >>> ssm_convolution(torch.tensor([[1.0, 2.0, 0.0]]), torch.tensor([1.0, 0.5, 0.0]))
        tensor([[1.0000, 2.5000, 1.0000]])
    """
    if any(k not in (1, n) for k, n in zip(K.shape[-2::-1], x.shape[-2::-1])):
        raise ValueError(f"K must broadcast against x {tuple(x.shape)}, got {tuple(K.shape)}")
    return _convolution(x, K)


def _convolution(x: torch.Tensor, K: torch.Tensor) -> torch.Tensor:
    L = x.shape[-1]
    y = torch.fft.irfft(torch.fft.rfft(x, n=2 * L) * torch.fft.rfft(K, n=2 * L), n=2 * L)
    return y[..., :L]  # (eq-ssm-convolution)


class S4D(nn.Module):
    r"""A diagonal state-space layer (S4D): one SSM per channel, as a convolution.

    Each of the ``D`` channels has its own diagonal, complex state matrix with the
    S4D-Lin initialisation :math:`a_n = -\tfrac12 + i\pi n` (the modes come in
    conjugate pairs, so ``N/2`` complex numbers stand for ``N`` real states), its own
    step :math:`\Delta` (log-uniform in [0.001, 0.1]) and output weights
    :math:`\mathbf{C}`; :math:`\mathbf{B} = 1`. With a diagonal
    :math:`\mathbf{A}` the zero-order hold is element-wise:

    .. math::
        \bar{a}_n = e^{\Delta a_n}, \qquad \bar{b}_n = (e^{\Delta a_n} - 1) / a_n, \qquad
        \bar{K}_k = 2\,\mathrm{Re}\sum_n c_n \bar{a}_n^k \bar{b}_n

    and :math:`y = \bar{K} * x + D x`.

    Args:
        channels: ``D``.
        state_size: ``N`` (even).
        generator: seeds :math:`\Delta` and :math:`\mathbf{C}`.

    Shapes:
        x: ``(b, L, D)``; returns ``(b, L, D)``.

    Example:
        >>> layer = S4D(3, 8, generator=torch.Generator().manual_seed(0))
        >>> x = torch.randn(2, 20, 3)
        >>> torch.allclose(layer(x), layer.recurrent(x), atol=1e-5)
        True
    """

    def __init__(self, channels: PositiveInt, state_size: MultipleOf(2) = 64,
                 generator: RandomGenerator = None) -> None:
        super().__init__()
        D = channels
        N = state_size
        self.channels = D  # N even: conjugate pairs
        modes = torch.arange(N // 2, dtype=torch.float32)
        self.A_real_log = nn.Parameter(torch.full((D, N // 2), math.log(0.5)))
        self.A_imag = nn.Parameter(math.pi * modes.repeat(D, 1))  # (D, N/2)
        log_dt = torch.rand(D, generator=generator) * math.log(100) + math.log(1e-3)
        self.log_dt = nn.Parameter(log_dt)  # (D,)
        self.C = nn.Parameter(torch.randn(D, N // 2, 2, generator=generator) * 0.5**0.5)
        self.D = nn.Parameter(torch.randn(D, generator=generator))

    def discretize(self) -> tuple[torch.Tensor, torch.Tensor]:
        r"""The per-channel :math:`(\bar{a}_n, \bar{b}_n)`, complex, each ``(D, N/2)``."""
        a = -torch.exp(self.A_real_log) + 1j * self.A_imag  # (D, N/2)
        dt_a = self.log_dt.exp()[:, None] * a  # (D, N/2)
        return torch.exp(dt_a), (torch.exp(dt_a) - 1) / a  # (eq-ssm-zoh), diagonal

    def kernel(self, length: PositiveInt) -> torch.Tensor:
        r"""The kernels :math:`\bar{K}` of every channel, ``(D, L)``."""
        return self._kernel(length)

    def _kernel(self, length: int) -> torch.Tensor:
        a_bar, b_bar = self.discretize()
        c = torch.view_as_complex(self.C)  # (D, N/2)
        # (D, N/2, L)
        powers = a_bar[:, :, None] ** torch.arange(length, device=a_bar.device)
        # (eq-ssm-kernel)
        return 2 * torch.einsum("dn,dnl->dl", c * b_bar, powers).real

    def forward(
        self, x: Shaped("b L channels", floating=True, dtype_of="module", min_size={"L": 1})
    ) -> torch.Tensor:
        u = x.transpose(1, 2)  # (b, D, L)
        y = _convolution(u, self._kernel(u.shape[-1])) + self.D[:, None] * u
        return y.transpose(1, 2)  # (b, L, D)

    def recurrent(
        self, x: Shaped("b L channels", floating=True, dtype_of="module", min_size={"L": 1})
    ) -> torch.Tensor:
        r"""The same layer as a recurrence, one step per position (how it generates)."""
        a_bar, b_bar = self.discretize()  # (D, N/2)
        c = torch.view_as_complex(self.C)  # (D, N/2)
        h = torch.zeros(x.shape[0], *a_bar.shape, dtype=a_bar.dtype, device=x.device)
        ys = []
        for t in range(x.shape[1]):
            h = a_bar * h + b_bar * x[:, t, :, None]  # (b, D, N/2), (eq-ssm-recurrence)
            ys.append(2 * (c * h).sum(-1).real + self.D * x[:, t])  # (b, D)
        return torch.stack(ys, dim=1)  # (b, L, D)
