r"""The continuous modern Hopfield network (Ramsauer et al., 2021).

Shapes: ``N`` stored patterns of dimension ``d`` (the rows of ``X``, the book's
columns of :math:`\mathbf X`), ``B`` queries (states) updated together (any leading
dimensions ``...``), ``d_v`` the dimension of optional values.

Energy and update, with :math:`\operatorname{lse}(\beta, \mathbf u) = \beta^{-1}\log\sum_i
e^{\beta u_i}` and :math:`M` the largest norm of a stored pattern:

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
from typing import TypeAlias

import torch
from jaxtyping import Float, Real
from torch import Tensor

from seqbook._checks import (
    check_beta,
    check_patterns,
    check_positive_int,
    check_real,
    check_same_dtype,
    check_state,
)
from seqbook.hopfield.memory import PatternMemory, Retrieval

__all__ = ["ModernHopfield", "lse", "modern_energy", "modern_update", "separation"]

States: TypeAlias = Float[Tensor, "*batch d"]  # states (queries), any leading dimensions
Energies: TypeAlias = Float[Tensor, "*batch"]  # one per state
Patterns: TypeAlias = Float[Tensor, "N d"]  # the stored patterns, one per row
# the patterns of one memory (N, d), or of T memories (T, N, d)
Memories: TypeAlias = Patterns | Float[Tensor, "T N d"]
Values: TypeAlias = Float[Tensor, "N d_v"]  # one value per stored pattern


def lse(beta: float, u: Float[Tensor, "*batch N"]) -> Float[Tensor, "*batch"]:
    r"""Log-sum-exp at inverse temperature :math:`\beta`:
    :math:`\beta^{-1}\log\sum_i e^{\beta u_i}`.

    Over the last dimension; it tends to :math:`\max_i u_i` as :math:`\beta \to \infty`.

    Shapes:
        u: ``(..., N)``.
        returns: ``(...)``.

    Example:
        >>> round(lse(100.0, torch.tensor([1.0, 3.0, 2.0])).item(), 4)
        3.0
    """
    check_beta("beta", beta)
    return torch.logsumexp(beta * u, dim=-1) / beta


def modern_energy(xi: States, patterns: Patterns, beta: float) -> Energies:
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
    X = check_patterns("patterns", patterns, binary=False)  # patterns as rows
    xi = check_state("xi", xi, X.shape[-1], binary=False, dtype=X.dtype)
    check_beta("beta", beta)
    M = X.norm(dim=-1).max()  # the largest pattern norm
    X_xi = xi @ X.transpose(-1, -2)  # (..., N)  X^T xi
    return (
        -torch.logsumexp(beta * X_xi, dim=-1) / beta
        + 0.5 * (xi * xi).sum(-1)
        + math.log(len(X)) / beta
        + 0.5 * M**2
    )  # (eq-hopfield-mhn-energy)


def modern_update(
    xi: States, patterns: Memories, beta: float, values: Values | None = None
) -> States | Float[Tensor, "*batch d_v"]:
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
    X = check_patterns("patterns", patterns, binary=False, ndim=(2, 3))  # rows
    xi = check_state("xi", xi, X.shape[-1], binary=False, dtype=X.dtype)
    check_beta("beta", beta)
    if values is not None and X.dim() != 2:
        raise ValueError("values need the patterns (N, d) of one memory")
    p = torch.softmax(beta * (xi @ X.transpose(-1, -2)), dim=-1)  # (..., N)
    return p @ (X if values is None else values)  # (eq-hopfield-mhn-update)


def separation(patterns: Patterns) -> Float[Tensor, " N"]:
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
    check_patterns("patterns", patterns, binary=False)
    if len(patterns) < 2:
        raise ValueError(f"patterns must hold at least two patterns (N >= 2), got shape "
                         f"{tuple(patterns.shape)}")
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

    def __init__(self, patterns: Real[Tensor, "N d"], beta: float) -> None:
        self.patterns = check_patterns("patterns", patterns, binary=False)  # (N, d)
        self.beta = check_beta("beta", beta)

    @property
    def M(self) -> float:
        """The largest norm of a stored pattern."""
        return self.patterns.norm(dim=-1).max().item()

    def energy(self, xi: States) -> Energies:
        """Energy of the state(s), eq. (eq-hopfield-mhn-energy).

        Shapes:
            xi: ``(..., d)``.
            returns: ``(...)``.
        """
        return modern_energy(xi, self.patterns, self.beta)  # which checks xi

    def weights(self, xi: States) -> Float[Tensor, "*batch N"]:
        r"""The softmax weights :math:`\operatorname{softmax}(\beta\mathbf X^\top\boldsymbol\xi)`.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(..., N)``.
        """
        xi = self._state(xi)
        return torch.softmax(self.beta * (xi @ self.patterns.T), dim=-1)  # (..., N)

    def update(
        self,
        xi: States,
        steps: int = 1,
        values: Values | None = None,
    ) -> States | Float[Tensor, "*batch d_v"]:
        """Apply the update ``steps`` times (all components at once).

        With ``values`` (one row per stored pattern, ``steps`` must be 1) the output is
        the softmax-weighted average of the values: association of two sets.

        Shapes:
            xi: ``(..., d)``.
            values: ``(N, d_v)``.
            returns: ``(..., d)``, or ``(..., d_v)`` with values.
        """
        xi = self._state(xi)
        check_positive_int("steps", steps)
        if values is not None:
            if steps != 1:
                raise ValueError(f"steps must be 1 when values are given, got {steps}")
            if len(values) != self.num_patterns:
                raise ValueError(f"values must have one row per stored pattern (N = "
                                 f"{self.num_patterns}), got shape {tuple(values.shape)}")
            check_same_dtype("values", values, self.patterns.dtype, of="the stored patterns")
            return modern_update(xi, self.patterns, self.beta, values)
        for _ in range(steps):
            xi = modern_update(xi, self.patterns, self.beta)
        return xi

    def retrieve(
        self,
        xi: States,
        max_steps: int = 20,
        tol: float = 1e-6,
    ) -> Retrieval:
        """Update until no component moves by more than ``tol`` (or ``max_steps``).

        Shapes:
            xi: ``(..., d)``.
            returns: a ``Retrieval`` with states ``(S + 1, ..., d)``.
        """
        xi = self._state(xi)
        check_positive_int("max_steps", max_steps), check_real("tol", tol, min_value=0.0)
        return self._run_to_fixed_point(
            xi,
            lambda state: modern_update(state, self.patterns, self.beta),
            max_steps,
            lambda new, old: ((new - old).abs() <= tol).all(-1),
        )

    def __repr__(self) -> str:
        return (
            f"ModernHopfield(num_patterns={self.num_patterns}, dim={self.dim}, "
            f"beta={self.beta:g})"
        )
