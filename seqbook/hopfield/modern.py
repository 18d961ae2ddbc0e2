r"""The continuous modern Hopfield network (Ramsauer et al., 2021).

Shapes: ``N`` stored patterns of dimension ``d`` (the rows of ``X``, the book's
columns of :math:`\mathbf X`), ``B`` queries (states) updated together (any leading
dimensions ``...``), ``d_v`` the dimension of optional values.

Energy and update, with :math:`\operatorname{lse}(\beta, \mathbf z) = \beta^{-1}\log\sum_i
e^{\beta z_i}` and :math:`M` the largest norm of a stored pattern:

.. math::

    E(\boldsymbol\xi) = -\operatorname{lse}(\beta, \mathbf X^\top\boldsymbol\xi)
        + \tfrac12 \boldsymbol\xi^\top\boldsymbol\xi + \beta^{-1}\log N + \tfrac12 M^2,
    \qquad
    \boldsymbol\xi^{\text{new}}
        = \mathbf X \operatorname{softmax}(\beta\mathbf X^\top\boldsymbol\xi)

The update is :math:`\boldsymbol\xi - \nabla E(\boldsymbol\xi)`, a concave-convex
procedure step, so the energy never increases along it.
"""

from __future__ import annotations

import math

import torch

from seqbook._checks import check_state
from seqbook._contracts import NonNegativeReal, PositiveInt, Shaped, TensorOf
from seqbook.hopfield.memory import Beta, PatternMemory, Patterns, Retrieval

__all__ = ["ModernHopfield", "lse", "modern_energy", "modern_update", "separation"]


def lse(beta: Beta, z: TensorOf(floating=True)) -> torch.Tensor:
    r"""Log-sum-exp at inverse temperature :math:`\beta`:
    :math:`\beta^{-1}\log\sum_i e^{\beta z_i}`.

    Over the last dimension; it tends to :math:`\max_i z_i` as :math:`\beta \to \infty`.

    Shapes:
        z: ``(..., N)``.
        returns: ``(...)``.

    Example:
        >>> round(lse(100.0, torch.tensor([1.0, 3.0, 2.0])).item(), 4)
        3.0
    """
    return torch.logsumexp(beta * z, dim=-1) / beta


def modern_energy(
    xi: torch.Tensor, patterns: Patterns(binary=False), beta: Beta
) -> torch.Tensor:
    r"""The energy :math:`-\operatorname{lse}(\beta, \mathbf X^\top\boldsymbol\xi)
    + \tfrac12\boldsymbol\xi^\top\boldsymbol\xi + \beta^{-1}\log N + \tfrac12 M^2`.

    Shapes:
        xi: ``(..., d)``.
        patterns: ``(N, d)``.
        returns: ``(...)``.

    Example:
        >>> X = torch.tensor([[1., 0.], [0., 1.]])
        >>> round(modern_energy(torch.tensor([1., 0.]), X, beta=50.0).item(), 4)
        0.0139
    """
    xi = check_state("xi", xi, patterns.shape[-1], binary=False, dtype=patterns.dtype)
    return _modern_energy(xi, patterns, beta)


def _modern_energy(
    xi: torch.Tensor, X: torch.Tensor, beta: float
) -> torch.Tensor:
    N = X.shape[0]  # X: the stored patterns as rows
    M = X.norm(dim=-1).max()  # the largest pattern norm
    X_xi = xi @ X.transpose(-1, -2)  # (..., N)  X^T xi
    return (
        -torch.logsumexp(beta * X_xi, dim=-1) / beta
        + 0.5 * (xi * xi).sum(-1)
        + math.log(N) / beta
        + 0.5 * M**2
    )  # (eq-hopfield-mhn-energy)


def modern_update(
    xi: torch.Tensor,
    patterns: Patterns(binary=False, ndim=(2, 3)),
    beta: Beta,
    values: Shaped("N d_v", floating=True, dtype_of="patterns") | None = None,
) -> torch.Tensor:
    r"""One update :math:`\mathbf X\operatorname{softmax}(\beta\mathbf X^\top\boldsymbol\xi)`.

    With ``values`` the softmax weights average the values instead of the patterns:
    the memory then *associates* each stored pattern with its value.

    Shapes:
        xi: ``(..., d)``, or ``(T, B, d)`` for ``T`` memories at once.
        patterns: ``(N, d)``, or ``(T, N, d)``.
        values: ``(N, d_v)``.
        returns: ``(..., d)``, or ``(..., d_v)`` with values.

    Example:
        >>> X = torch.tensor([[1., 0.], [0., 1.]])
        >>> modern_update(torch.tensor([0.9, 0.2]), X, beta=8.0).round(decimals=3)
        tensor([0.9960, 0.0040])
    """
    xi = check_state("xi", xi, patterns.shape[-1], binary=False, dtype=patterns.dtype)
    if values is not None and patterns.dim() != 2:
        raise ValueError(f"values need the patterns of one memory (N, d), got {patterns.shape}")
    return _modern_update(xi, patterns, beta, values)


def _modern_update(
    xi: torch.Tensor,
    X: torch.Tensor,
    beta: float,
    values: torch.Tensor | None = None,
) -> torch.Tensor:
    # (..., N)  X: patterns as rows
    p = torch.softmax(beta * (xi @ X.transpose(-1, -2)), dim=-1)
    return p @ (X if values is None else values)  # (eq-hopfield-mhn-update)


def separation(patterns: Patterns(binary=False, min_size={"N": 2})) -> torch.Tensor:
    r"""The separation
    :math:`\Delta_i = \mathbf x_i^\top\mathbf x_i - \max_{j \ne i}\mathbf x_i^\top\mathbf x_j`
    of every pattern.

    Ramsauer et al.'s retrieval theorems need it large: a pattern with
    :math:`\Delta_i \le 0` overlaps another pattern at least as much as itself, and no
    :math:`\beta` makes it a fixed point next to itself.

    Shapes:
        patterns: ``(N, d)`` with ``N >= 2``.
        returns: ``(N,)``.

    Example:
        >>> separation(torch.tensor([[2., 0.], [1., 1.], [0., 3.]]))
        tensor([ 2., -1.,  6.])
    """
    G = patterns @ patterns.T  # (N, N) all overlaps
    others = G.masked_fill(
        torch.eye(len(G), dtype=torch.bool, device=G.device), -math.inf
    )  # (N, N)
    return G.diagonal() - others.amax(-1)


class ModernHopfield(PatternMemory):
    r"""Continuous modern Hopfield network with inverse temperature :math:`\beta`.

    Args:
        patterns: the stored patterns :math:`\mathbf x_1, \dots, \mathbf x_N \in
            \mathbb R^d`, one per row.
        beta: inverse temperature :math:`\beta > 0`: small values average over many
            patterns, large values retrieve single patterns.

    Shapes:
        patterns: ``(N, d)``.
        xi: a state ``(d,)`` or states ``(..., d)``; energies are ``()`` or ``(...)``,
        weights ``(..., N)``.

    Example:
        >>> X = torch.tensor([[1., 0.], [0., 1.]])
        >>> net = ModernHopfield(X, beta=8.0)
        >>> net.update(torch.tensor([0.9, 0.2])).round(decimals=3)
        tensor([0.9960, 0.0040])
    """

    binary = False  # continuous states

    def __init__(self, patterns: Patterns(binary=False), beta: Beta) -> None:
        self.patterns = patterns  # (N, d)
        self.beta = beta

    @property
    def M(self) -> float:
        """The largest norm of a stored pattern."""
        return self.patterns.norm(dim=-1).max().item()

    def energy(self, xi: torch.Tensor) -> torch.Tensor:
        """Energy of the state(s), eq. (eq-hopfield-mhn-energy).

        Shapes:
            xi: ``(..., d)``.
            returns: ``(...)``.
        """
        return _modern_energy(self._state(xi), self.patterns, self.beta)

    def weights(self, xi: torch.Tensor) -> torch.Tensor:
        r"""The softmax weights :math:`\operatorname{softmax}(\beta\mathbf X^\top\boldsymbol\xi)`.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(..., N)``.
        """
        xi = self._state(xi)
        return torch.softmax(self.beta * (xi @ self.patterns.T), dim=-1)  # (..., N)

    def update(
        self,
        xi: torch.Tensor,
        steps: PositiveInt = 1,
        values: Shaped("num_patterns d_v", floating=True, dtype_of="self.patterns") | None = None,
    ) -> torch.Tensor:
        """Apply the update ``steps`` times (all components at once).

        With ``values`` (one row per stored pattern, ``steps`` must be 1) the output is
        the softmax-weighted average of the values: association of two sets.

        Shapes:
            xi: ``(..., d)``.
            values: ``(N, d_v)``.
            returns: ``(..., d)``, or ``(..., d_v)`` with values.
        """
        xi = self._state(xi)
        if values is not None:
            if steps != 1:
                raise ValueError(f"steps must be 1 when values are given, got {steps}")
            return _modern_update(xi, self.patterns, self.beta, values)
        for _ in range(steps):
            xi = _modern_update(xi, self.patterns, self.beta)
        return xi

    def retrieve(
        self,
        xi: torch.Tensor,
        max_steps: PositiveInt = 20,
        tol: NonNegativeReal = 1e-6,
    ) -> Retrieval:
        """Update until no component moves by more than ``tol`` (or ``max_steps``).

        Shapes:
            xi: ``(..., d)``.
            returns: a ``Retrieval`` with states ``(S + 1, ..., d)``.
        """
        xi = self._state(xi)
        return self._run_to_fixed_point(
            xi,
            lambda state: _modern_update(state, self.patterns, self.beta),
            max_steps,
            lambda new, old: ((new - old).abs() <= tol).all(-1),
        )

    def __repr__(self) -> str:
        return (
            f"ModernHopfield(num_patterns={self.num_patterns}, dim={self.dim}, "
            f"beta={self.beta:g})"
        )
