r"""Selective state-space models (Mamba): an SSM whose step, input and output matrices
depend on the input, computed by a sequential loop or by a parallel associative scan;
and Mamba-2's view of the same recurrence as attention with a 1-semiseparable mask.

Shape letters: ``b`` batch (``B`` is the input matrix here), ``L`` length, ``D``
channels, ``N`` state size.
"""

from __future__ import annotations

import math
from typing import Any, TypeAlias

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_positive_int, check_steps

__all__ = [
    "selective_discretize",
    "selective_scan",
    "selective_scan_sequential",
    "semiseparable_matrix",
    "MambaBlock",
]


# the arguments of a selective scan: the input and step of each channel (Signal), each
# channel's diagonal state matrix and skip weight, the input and output vectors of each
# position; and the discretised steps, one number per state
Signal: TypeAlias = Float[Tensor, "b L channels"]
StateMatrix: TypeAlias = Float[Tensor, "channels N"]
Skip: TypeAlias = Float[Tensor, " channels"]
Vectors: TypeAlias = Float[Tensor, "b L N"]
States: TypeAlias = Float[Tensor, "b L channels N"]


def selective_discretize(x: Signal, delta: Signal, A: StateMatrix,
                         B: Vectors) -> tuple[States, States]:
    r"""Each step's decay :math:`e^{\Delta_t \mathbf{A}}` and write
    :math:`\Delta_t \mathbf{B}_t x_t`, for every channel: the discretisation of the
    selective SSM (the first half of its recurrence).

    Shapes:
        x, delta: ``(b, L, D)``; A: ``(D, N)``; B: ``(b, L, N)``; returns two
        ``(b, L, D, N)`` tensors.

    Example:
        >>> x, delta = torch.ones(1, 1, 1), torch.full((1, 1, 1), math.log(2))
        >>> A_bar, Bx = selective_discretize(x, delta, -torch.ones(1, 1), torch.ones(1, 1, 1))
        >>> A_bar.item(), round(Bx.item(), 4)      # e^{-ln 2}, ln 2 * 1 * 1
        (0.5, 0.6931)
    """
    A_bar = torch.exp(delta[..., None] * A)  # (eq-ssm-selective)
    # (eq-ssm-selective)
    Bx = delta[..., None] * B[:, :, None, :] * x[..., None]
    return A_bar, Bx


def selective_scan_sequential(
    x: Signal, delta: Signal, A: StateMatrix, B: Vectors, C: Vectors, D: Skip
) -> Signal:
    r"""Mamba's selective SSM, one step at a time.

    .. math::
        \mathbf{h}_t = e^{\Delta_t \mathbf{A}} \odot \mathbf{h}_{t-1}
        + \Delta_t \mathbf{B}_t x_t, \qquad
        y_t = \mathbf{C}_t^\top \mathbf{h}_t + D x_t

    for every channel, with a diagonal :math:`\mathbf{A}` (one row of ``A`` per
    channel) and :math:`\Delta_t, \mathbf{B}_t, \mathbf{C}_t` computed from the input
    (discretised by :func:`selective_discretize`).

    Args:
        x: the input of each channel.
        delta: each channel's step :math:`\Delta_t > 0`.
        A: the diagonal state matrix of each channel (negative entries).
        B, C: the input and output vectors of each position (shared by the channels).
        D: the skip connection of each channel.

    Shapes:
        x, delta: ``(b, L, D)`` with ``L >= 1``; A: ``(D, N)``; B, C: ``(b, L, N)``;
        D: ``(D,)``; returns ``(b, L, D)``.

    Example:
        >>> x, delta = torch.ones(1, 3, 1), torch.full((1, 3, 1), math.log(2))
        >>> A, B, C, D = -torch.ones(1, 1), torch.ones(1, 3, 1), torch.ones(1, 3, 1), torch.zeros(1)
        >>> selective_scan_sequential(x, delta, A, B, C, D)[0, :, 0]   # h = h / 2 + ln 2
        tensor([0.6931, 1.0397, 1.2130])
    """
    check_steps("x", x, "b L channels")
    A_bar, Bx = selective_discretize(x, delta, A, B)
    h = torch.zeros_like(Bx[:, 0])  # (b, D, N)
    hs = []
    for t in range(x.shape[1]):
        h = A_bar[:, t] * h + Bx[:, t]  # (eq-ssm-selective)
        hs.append(h)
    # y_t = C_t^T h_t + D x_t, (b, L, D)
    return (torch.stack(hs, dim=1) @ C[..., None])[..., 0] + D * x


def selective_scan(x: Signal, delta: Signal, A: StateMatrix, B: Vectors,
                   C: Vectors, D: Skip) -> Signal:
    r"""Mamba's selective SSM by a parallel associative scan.

    The recurrence :math:`\mathbf{h}_t = \bar{\mathbf{a}}_t \odot \mathbf{h}_{t-1} +
    \mathbf{u}_t` composes steps with the associative operator

    .. math::
        (\bar{\mathbf{a}}, \mathbf{u}) \bullet (\bar{\mathbf{a}}', \mathbf{u}') =
        (\bar{\mathbf{a}}' \odot \bar{\mathbf{a}},\; \bar{\mathbf{a}}' \odot \mathbf{u}
        + \mathbf{u}')

    so every prefix can be computed in :math:`\lceil \log_2 L \rceil` rounds, each a few
    element-wise operations over all positions at once (the Hillis-Steele scan): more
    work than the loop, :math:`O(L \log L)`, but no step waits for the previous one.
    Same arguments and result as :func:`selective_scan_sequential`.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, delta = torch.randn(2, 9, 3, generator=g), torch.rand(2, 9, 3, generator=g)
        >>> A, D = -torch.rand(3, 4, generator=g), torch.randn(3, generator=g)
        >>> B, C = torch.randn(2, 2, 9, 4, generator=g)
        >>> torch.allclose(selective_scan(x, delta, A, B, C, D),
        ...                selective_scan_sequential(x, delta, A, B, C, D), atol=1e-6)
        True
    """
    a, u = selective_discretize(x, delta, A, B)  # (b, L, D, N) each
    offset = 1
    while offset < a.shape[1]:  # log2(L) rounds
        # the step `offset` places before, padded with the identity
        a_before = F.pad(a[:, :-offset], (0, 0, 0, 0, offset, 0), value=1.0)
        u_before = F.pad(u[:, :-offset], (0, 0, 0, 0, offset, 0))
        # (a_before, u_before) then (a, u)  (eq-ssm-scan)
        a, u = a * a_before, a * u_before + u
        offset *= 2
    return (u @ C[..., None])[..., 0] + D * x  # y_t = C_t^T h_t + D x_t


def semiseparable_matrix(
    log_a: Float[Tensor, "b L"], B: Vectors, C: Vectors
) -> Float[Tensor, "b L L"]:
    r"""Mamba-2's form of a selective SSM with a scalar decay per step: one matrix that
    maps the inputs to the outputs, attention with a 1-semiseparable mask.

    With :math:`\bar{\mathbf{A}}_t = a_t \mathbf{I}` the recurrence
    :math:`\mathbf{h}_t = a_t \mathbf{h}_{t-1} + \mathbf{B}_t x_t`,
    :math:`y_t = \mathbf{C}_t^\top\mathbf{h}_t` unrolls to :math:`\mathbf{y} =
    \mathbf{M}\mathbf{x}` with

    .. math::
        M_{ij} = \mathbf{C}_i^\top \mathbf{B}_j \cdot \prod_{k=j+1}^{i} a_k
        \quad (j \le i), \qquad 0 \quad (j > i):

    the scores :math:`\mathbf{C}\mathbf{B}^\top` (queries times keys) masked by
    :math:`L_{ij} = a_{j+1}\cdots a_i`, which is 1 on the diagonal and decays below it
    instead of the causal mask's constant 1.

    Args:
        log_a: :math:`\log a_t` of each position (:math:`a_t \in (0, 1]`).
        B, C: the input and output vectors (keys and queries).

    Shapes:
        log_a: ``(b, L)``; B, C: ``(b, L, N)``; returns ``(b, L, L)``.

    Example:
        >>> M = semiseparable_matrix(torch.log(torch.full((1, 3), 0.5)),
        ...                          torch.ones(1, 3, 1), torch.ones(1, 3, 1))
        >>> M[0]
        tensor([[1.0000, 0.0000, 0.0000],
                [0.5000, 1.0000, 0.0000],
                [0.2500, 0.5000, 1.0000]])
    """
    cumulative = log_a.cumsum(-1)  # log(a_1 ... a_t), (b, L)
    L = log_a.shape[1]
    causal = torch.ones(L, L, dtype=torch.bool, device=log_a.device).tril()
    # log(a_{j+1}...a_i)
    log_mask = cumulative[:, :, None] - cumulative[:, None, :]
    # (eq-ssm-semiseparable)
    mask = torch.exp(log_mask.masked_fill(~causal, -math.inf))
    return (C @ B.transpose(1, 2)) * mask  # (b, L, L)


def _init_step_sizes(dt_proj: nn.Linear, rank: int, dt_min: float = 1e-3,
                     dt_max: float = 0.1) -> None:
    """Mamba's initialisation: each channel's step Delta starts log-uniform in [dt_min,
    dt_max], so that the slowest mode (A = -1) keeps inputs for about 10 to 1,000 steps
    (the mode n decays n times faster; the default bias
    of a linear layer would start Delta near softplus(0) = 0.69 and forget at once)."""
    with torch.no_grad():
        nn.init.uniform_(dt_proj.weight, -rank**-0.5, rank**-0.5)
        log_dt = torch.rand(dt_proj.out_features) * math.log(dt_max / dt_min) + math.log(dt_min)
        dt = torch.exp(log_dt).clamp(min=1e-4)
        dt_proj.bias.copy_(dt + torch.log(-torch.expm1(-dt)))  # softplus^-1(dt)


class MambaBlock(nn.Module):
    r"""The Mamba block: a gated selective SSM between two projections.

    .. math::
        (\mathbf{x}, \mathbf{x}_\text{gate}) = \mathbf{W}_\text{in}\mathbf{u}, \quad
        \mathbf{x} \leftarrow \mathrm{SiLU}(\mathrm{conv}(\mathbf{x})), \quad
        (\Delta, \mathbf{B}, \mathbf{C}) = (\mathrm{softplus}(\mathbf{W}_\Delta
        \mathbf{W}_r \mathbf{x} + \mathbf{b}_\Delta), \mathbf{W}_B\mathbf{x},
        \mathbf{W}_C\mathbf{x}), \quad
        \mathbf{y} = \mathbf{W}_\text{out}\big(\mathrm{SSM}(\mathbf{x}) \odot
        \mathrm{SiLU}(\mathbf{x}_\text{gate})\big)

    with a short causal depthwise convolution and :math:`\mathbf{A} =
    -e^{\mathbf{A}_{\log}}` initialised to :math:`-1, \dots, -N` (S4D-Real), as in
    Gu & Dao (2023) and the ``mambapy`` package, whose ``MambaBlock`` this one equals
    (:meth:`from_mambapy`).

    Args:
        d_model: the width of the block's input and output.
        state_size: ``N``.
        expand: the inner width is ``expand * d_model``.
        conv_size: the length of the depthwise convolution.
        dt_rank: the rank of the projection that computes :math:`\Delta`.

    Shapes:
        u: ``(b, L, d_model)``; returns ``(b, L, d_model)``.

    Example:
        >>> block = MambaBlock(8, state_size=4)
        >>> block(torch.randn(2, 5, 8)).shape
        torch.Size([2, 5, 8])
    """

    def __init__(self, d_model: int, state_size: int = 16, expand: int = 2,
                 conv_size: int = 4, dt_rank: int | None = None) -> None:
        super().__init__()
        for name, size in dict(d_model=d_model, state_size=state_size, expand=expand,
                               conv_size=conv_size, dt_rank=dt_rank).items():
            if size is not None:
                check_positive_int(name, size)
        N = state_size
        inner = expand * d_model
        r = math.ceil(d_model / 16) if dt_rank is None else dt_rank
        self.in_proj = nn.Linear(d_model, 2 * inner, bias=False)
        self.conv1d = nn.Conv1d(inner, inner, conv_size, groups=inner, padding=conv_size - 1)
        self.x_proj = nn.Linear(inner, r + 2 * N, bias=False)
        self.dt_proj = nn.Linear(r, inner)
        _init_step_sizes(self.dt_proj, r)
        self.A_log = nn.Parameter(torch.log(torch.arange(1, N + 1.0)).repeat(inner, 1))
        self.D = nn.Parameter(torch.ones(inner))
        self.out_proj = nn.Linear(inner, d_model, bias=False)
        self.d_model, self.dt_rank, self.state_size = d_model, r, N

    def forward(
        self, u: Float[Tensor, "b L {self.d_model}"]
    ) -> Float[Tensor, "b L {self.d_model}"]:
        check_steps("u", u, "b L d_model")
        x, x_gate = self.in_proj(u).chunk(2, dim=-1)  # (b, L, inner) each
        L, N = u.shape[1], self.state_size
        x = F.silu(self.conv1d(x.transpose(1, 2))[:, :, :L].transpose(1, 2))
        dt, B, C = self.x_proj(x).split([self.dt_rank, N, N], -1)
        delta = F.softplus(self.dt_proj(dt))  # (b, L, inner)
        # (eq-ssm-selective)
        y = selective_scan(x, delta, -torch.exp(self.A_log), B, C, self.D)
        return self.out_proj(y * F.silu(x_gate))  # (b, L, d_model)

    @classmethod
    def from_mambapy(cls, block: nn.Module) -> MambaBlock:
        """A copy of a ``mambapy.mamba.MambaBlock`` (without inner layer norms or biases
        on the projections), with the same weights."""
        config: Any = block.config  # a mambapy.mamba.MambaConfig
        if config.bias or not config.conv_bias or config.inner_layernorms:
            raise ValueError("from_mambapy supports bias=False, conv_bias=True and "
                             "inner_layernorms=False, mambapy's defaults")
        ours = cls(config.d_model, config.d_state, config.expand_factor, config.d_conv,
                   config.dt_rank)
        ours.load_state_dict(
            {k: v for k, v in block.state_dict().items() if k in ours.state_dict()})
        return ours.to(next(block.parameters()).dtype)
