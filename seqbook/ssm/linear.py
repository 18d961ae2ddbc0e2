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
from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_positive_int, check_real, check_steps

__all__ = ["zoh", "ssm_recurrence", "ssm_kernel", "ssm_convolution", "S4D"]


# a discrete one-channel system: its state, input and output matrices
StateMatrix: TypeAlias = Float[Tensor, "N N"]
InputMatrix: TypeAlias = Float[Tensor, "N 1"]
OutputMatrix: TypeAlias = Float[Tensor, "1 N"]


def zoh(A: Float[Tensor, "N N"], B: Float[Tensor, "N M"], delta: float
        ) -> tuple[Float[Tensor, "N N"], Float[Tensor, "N M"]]:
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
    check_real("delta", delta, min_value=0.0, strict_min=True)
    A_bar = torch.linalg.matrix_exp(delta * A)  # (eq-ssm-zoh)
    I = torch.eye(A.shape[0], dtype=A.dtype, device=A.device)
    # (eq-ssm-zoh)
    B_bar = torch.linalg.solve(delta * A, (A_bar - I) @ (delta * B))
    return A_bar, B_bar


def ssm_recurrence(
    x: Float[Tensor, "b L"], A_bar: StateMatrix, B_bar: InputMatrix, C: OutputMatrix
) -> Float[Tensor, "b L"]:
    r"""Run the discrete SSM as a recurrence over a one-channel input signal.

    .. math::
        \mathbf{h}_t = \bar{\mathbf{A}}\mathbf{h}_{t-1} + \bar{\mathbf{B}}x_t, \qquad
        y_t = \mathbf{C}\mathbf{h}_t, \qquad \mathbf{h}_0 = 0

    Shapes:
        x: ``(b, L)`` with ``L >= 1``; A_bar: ``(N, N)``; B_bar: ``(N, 1)``;
        C: ``(1, N)``; returns ``(b, L)``.

    Example:
        >>> A_bar, B_bar = torch.tensor([[0.5]]), torch.tensor([[1.0]])
        >>> ssm_recurrence(torch.tensor([[1.0, 0.0, 0.0]]), A_bar, B_bar, torch.ones(1, 1))
        tensor([[1.0000, 0.5000, 0.2500]])
    """
    check_steps("x", x, "b L")
    h = x.new_zeros(x.shape[0], A_bar.shape[0])  # (b, N)
    ys = []
    for t in range(x.shape[1]):
        h = h @ A_bar.T + x[:, t, None] * B_bar[:, 0]  # (eq-ssm-recurrence)
        ys.append(h @ C[0])  # (b,)
    return torch.stack(ys, dim=1)  # (b, L)


def ssm_kernel(A_bar: StateMatrix, B_bar: InputMatrix, C: OutputMatrix,
               length: int) -> Float[Tensor, " {length}"]:
    r"""The convolution kernel of the discrete SSM: its response to a unit impulse.

    .. math::
        \bar{K}_k = \mathbf{C}\bar{\mathbf{A}}^k\bar{\mathbf{B}}, \qquad
        k = 0, \dots, L - 1

    Shapes:
        A_bar: ``(N, N)``; B_bar: ``(N, 1)``; C: ``(1, N)``; returns ``(L,)`` with
        ``L = length >= 1``.

    Example:
        >>> ssm_kernel(torch.tensor([[0.5]]), torch.ones(1, 1), torch.ones(1, 1), 3)
        tensor([1.0000, 0.5000, 0.2500])
    """
    check_positive_int("length", length)
    terms, v = [], B_bar[:, 0]  # v = A_bar^k B_bar, (N,)
    for _ in range(length):
        terms.append(C[0] @ v)  # (eq-ssm-kernel)
        v = A_bar @ v
    return torch.stack(terms)  # (L,)


def ssm_convolution(
    x: Float[Tensor, "*batch L"], K: Float[Tensor, "*kernel_batch L"]
) -> Float[Tensor, "*batch L"]:
    r"""Causal convolution of each signal with a kernel, by FFT.

    .. math::
        y_t = \sum_{k=0}^{t} \bar{K}_k\, x_{t-k}

    Both are padded to length :math:`2L` so that the FFT's circular convolution is the
    linear one: :math:`O(L \log L)` instead of :math:`O(L^2)`.

    Shapes:
        x: ``(..., L)`` with ``L >= 1``; K: ``(..., L)`` (broadcast against x, without
        enlarging it); returns ``(..., L)``.

    Example:
        >>> ssm_convolution(torch.tensor([[1.0, 2.0, 0.0]]), torch.tensor([1.0, 0.5, 0.0]))
        tensor([[1.0000, 2.5000, 1.0000]])
    """
    check_steps("x", x, "... L", dim=-1)
    if K.dim() > x.dim() or any(
            k not in (1, n) for k, n in zip(K.shape[-2::-1], x.shape[-2::-1])):
        raise ValueError(f"K must broadcast against x {tuple(x.shape)}, got {tuple(K.shape)}")
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

    def __init__(self, channels: int, state_size: int = 64,
                 generator: torch.Generator | None = None) -> None:
        super().__init__()
        check_positive_int("channels", channels)
        check_positive_int("state_size", state_size)
        if state_size % 2:  # N even: conjugate pairs
            raise ValueError(f"state_size must be a multiple of 2, got {state_size}")
        D = channels
        N = state_size
        self.channels = D
        modes = torch.arange(N // 2, dtype=torch.float32)
        self.A_real_log = nn.Parameter(torch.full((D, N // 2), math.log(0.5)))
        self.A_imag = nn.Parameter(math.pi * modes.repeat(D, 1))  # (D, N/2)
        log_dt = torch.rand(D, generator=generator) * math.log(100) + math.log(1e-3)
        self.log_dt = nn.Parameter(log_dt)  # (D,)
        self.C = nn.Parameter(torch.randn(D, N // 2, 2, generator=generator) * 0.5**0.5)
        self.D = nn.Parameter(torch.randn(D, generator=generator))

    def discretize(self) -> tuple[Tensor, Tensor]:
        r"""The per-channel :math:`(\bar{a}_n, \bar{b}_n)`, complex, each ``(D, N/2)``."""
        a = -torch.exp(self.A_real_log) + 1j * self.A_imag  # (D, N/2)
        dt_a = self.log_dt.exp()[:, None] * a  # (D, N/2)
        return torch.exp(dt_a), (torch.exp(dt_a) - 1) / a  # (eq-ssm-zoh), diagonal

    def kernel(self, length: int) -> Float[Tensor, "{self.channels} {length}"]:
        r"""The kernels :math:`\bar{K}` of every channel, ``(D, L)`` with ``L = length``."""
        check_positive_int("length", length)
        a_bar, b_bar = self.discretize()
        c = torch.view_as_complex(self.C)  # (D, N/2)
        # (D, N/2, L)
        powers = a_bar[:, :, None] ** torch.arange(length, device=a_bar.device)
        # (eq-ssm-kernel)
        return 2 * torch.einsum("dn,dnl->dl", c * b_bar, powers).real

    def forward(
        self, x: Float[Tensor, "b L {self.channels}"]
    ) -> Float[Tensor, "b L {self.channels}"]:
        check_steps("x", x, "b L channels")
        u = x.transpose(1, 2)  # (b, D, L)
        y = ssm_convolution(u, self.kernel(u.shape[-1])) + self.D[:, None] * u
        return y.transpose(1, 2)  # (b, L, D)

    def recurrent(
        self, x: Float[Tensor, "b L {self.channels}"]
    ) -> Float[Tensor, "b L {self.channels}"]:
        r"""The same layer as a recurrence, one step per position (how it generates)."""
        check_steps("x", x, "b L channels")
        a_bar, b_bar = self.discretize()  # (D, N/2)
        c = torch.view_as_complex(self.C)  # (D, N/2)
        h = torch.zeros(x.shape[0], *a_bar.shape, dtype=a_bar.dtype, device=x.device)
        ys = []
        for t in range(x.shape[1]):
            h = a_bar * h + b_bar * x[:, t, :, None]  # (b, D, N/2), (eq-ssm-recurrence)
            ys.append(2 * (c * h).sum(-1).real + self.D * x[:, t])  # (b, D)
        return torch.stack(ys, dim=1)  # (b, L, D)
