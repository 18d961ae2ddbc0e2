r"""The continuous modern Hopfield network (Ramsauer et al., 2020).

Shapes: ``N`` stored patterns of dimension ``d`` (the rows of ``X``, the book's
columns of :math:`\mathbf X`), ``B`` queries (states) updated together (any leading
dimensions ``...``), ``d_v`` the dimension of optional values.

Energy and update, with :math:`\operatorname{lse}(\beta, \mathbf z) = \beta^{-1}\log\sum_i
e^{\beta z_i}` and :math:`M` the largest norm of a stored pattern:

.. math::

    E(\boldsymbol\xi) = -\operatorname{lse}(\beta, \mathbf X^\top\boldsymbol\xi)
        + \tfrac12 \boldsymbol\xi^\top\boldsymbol\xi + \beta^{-1}\log N + \tfrac12 M^2,
    \qquad
    \boldsymbol\xi^{\text{new}} = \mathbf X \operatorname{softmax}(\beta\mathbf X^\top\boldsymbol\xi)

The update is :math:`\boldsymbol\xi - \nabla E(\boldsymbol\xi)`, a concave-convex
procedure step, so the energy never increases along it.
"""

from __future__ import annotations

import math
import torch

from seqbook._checks import check_positive_int, check_real, check_tensor
from seqbook.hopfield._validate import check_patterns
from seqbook.hopfield.memory import PatternMemory, Retrieval

__all__ = ["ModernHopfield", "lse", "modern_energy", "modern_update"]


def lse(beta: float, z: torch.Tensor) -> torch.Tensor:
    r"""Log-sum-exp at inverse temperature :math:`\beta`: :math:`\beta^{-1}\log\sum_i e^{\beta z_i}`.

    Over the last dimension; it tends to :math:`\max_i z_i` as :math:`\beta \to \infty`.

    Shapes:
        z: ``(..., N)``.
        returns: ``(...)``.

    Example:
        >>> round(lse(100.0, torch.tensor([1.0, 3.0, 2.0])).item(), 4)
        3.0
    """
    beta = check_real("beta", beta, min_value=0.0, strict_min=True)
    z = check_tensor("z", z, floating=True)
    return torch.logsumexp(beta * z, dim=-1) / beta


def modern_energy(xi: torch.Tensor, patterns: torch.Tensor, beta: float) -> torch.Tensor:
    r"""The energy of eq. (eq-hopfield-mhn-energy) (no argument checks; see :class:`ModernHopfield`).

    Shapes:
        xi: ``(..., d)``.
        patterns: ``(N, d)``.
        returns: ``(...)``.
    """
    N = patterns.shape[0]
    M = patterns.norm(dim=-1).max()  # the largest pattern norm
    scores = xi @ patterns.transpose(-1, -2)  # (..., N)  X^T xi
    return (
        -torch.logsumexp(beta * scores, dim=-1) / beta
        + 0.5 * (xi * xi).sum(-1)
        + math.log(N) / beta
        + 0.5 * M**2
    )  # (eq-hopfield-mhn-energy)


def modern_update(
    xi: torch.Tensor, patterns: torch.Tensor, beta: float, values: torch.Tensor | None = None
) -> torch.Tensor:
    r"""One update :math:`\mathbf X\operatorname{softmax}(\beta\mathbf X^\top\boldsymbol\xi)` (no checks).

    With ``values`` the softmax weights average the values instead of the patterns:
    the memory then *associates* each stored pattern with its value.

    Shapes:
        xi: ``(..., d)``.
        patterns: ``(N, d)``.
        values: ``(N, d_v)``.
        returns: ``(..., d)``, or ``(..., d_v)`` with values.
    """
    p = torch.softmax(beta * (xi @ patterns.transpose(-1, -2)), dim=-1)  # (..., N)
    return p @ (patterns if values is None else values)  # (eq-hopfield-mhn-update)  (..., d)


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

    def __init__(self, patterns: torch.Tensor, beta: float) -> None:
        self.patterns = check_patterns("patterns", patterns, binary=False)  # (N, d)
        self.beta = check_real("beta", beta, min_value=0.0, strict_min=True)

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
        return modern_energy(self._state(xi), self.patterns, self.beta)

    def weights(self, xi: torch.Tensor) -> torch.Tensor:
        r"""The softmax weights :math:`\operatorname{softmax}(\beta\mathbf X^\top\boldsymbol\xi)`.

        Shapes:
            xi: ``(..., d)``.
            returns: ``(..., N)``.
        """
        xi = self._state(xi)
        return torch.softmax(self.beta * (xi @ self.patterns.T), dim=-1)  # (..., N)

    def update(self, xi: torch.Tensor, steps: int = 1, values: torch.Tensor | None = None) -> torch.Tensor:
        """Apply the update ``steps`` times (all components at once).

        With ``values`` (one row per stored pattern, ``steps`` must be 1) the output is
        the softmax-weighted average of the values: association of two sets.

        Shapes:
            xi: ``(..., d)``.
            values: ``(N, d_v)``.
            returns: ``(..., d)``, or ``(..., d_v)`` with values.
        """
        xi = self._state(xi)
        steps = check_positive_int("steps", steps)
        if values is not None:
            values = check_tensor("values", values, ndim=2, floating=True)
            if values.shape[0] != self.num_patterns:
                raise ValueError(
                    f"values must have one row per stored pattern ({self.num_patterns}), "
                    f"got shape {tuple(values.shape)}"
                )
            if steps != 1:
                raise ValueError(f"steps must be 1 when values are given, got {steps}")
            return modern_update(xi, self.patterns, self.beta, values)
        for _ in range(steps):
            xi = modern_update(xi, self.patterns, self.beta)
        return xi

    def retrieve(self, xi: torch.Tensor, max_steps: int = 20, tol: float = 1e-6) -> Retrieval:
        """Update until no component moves by more than ``tol`` (or ``max_steps``).

        Shapes:
            xi: ``(..., d)``.
            returns: a ``Retrieval`` with states ``(S + 1, ..., d)``.
        """
        xi = self._state(xi)
        max_steps = check_positive_int("max_steps", max_steps)
        tol = check_real("tol", tol, min_value=0.0)
        return self._run_to_fixed_point(
            xi,
            lambda state: modern_update(state, self.patterns, self.beta),
            max_steps,
            lambda new, old: ((new - old).abs() <= tol).all(-1),
        )

    def __repr__(self) -> str:
        return f"ModernHopfield(num_patterns={self.num_patterns}, dim={self.dim}, beta={self.beta:g})"
