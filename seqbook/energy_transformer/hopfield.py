r"""The Hopfield network module: the Energy Transformer's replacement of the MLP.

Shape letters: ``B`` configurations (images), ``N`` tokens, ``D`` token features,
``M`` memories.

Each token :math:`\mathbf g_A` is, on its own, the state of a dense associative memory
whose :math:`M` memories :math:`\boldsymbol\xi_\mu \in \mathbb R^D` are learned
(Hoover et al., 2023). With a rectified quadratic interaction,

.. math::
    E^{\mathrm{HN}} = -\frac12\sum_{A=1}^N\sum_{\mu=1}^M
        \operatorname{ReLU}\bigl(\boldsymbol\xi_\mu\cdot\mathbf g_A\bigr)^2,
    \qquad
    -\frac{\partial E^{\mathrm{HN}}}{\partial\mathbf g_A} = \sum_\mu\boldsymbol\xi_\mu
        \operatorname{ReLU}(\boldsymbol\xi_\mu\cdot\mathbf g_A),

a two-layer perceptron whose second layer is the transpose of its first; with the
softmax variant :math:`E^{\mathrm{HN}} = -\sum_A \operatorname{lse}(\beta,
\Xi\mathbf g_A)`, the log-sum-exp energy of the modern Hopfield network without its
quadratic term, and the update is :math:`\Xi^\top\operatorname{softmax}(\beta\Xi
\mathbf g_A)`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from seqbook._contracts import (
    NonNegativeReal,
    OneOf,
    PositiveInt,
    PositiveReal,
    RandomGenerator,
)
from seqbook.energy_transformer._validate import Tokens
from seqbook.hopfield import lse

__all__ = ["HopfieldNetwork"]


class HopfieldNetwork(nn.Module):
    r"""A token-wise dense associative memory with learned memories
    :math:`\Xi \in \mathbb R^{M\times D}`.

    .. math::
        E^{\mathrm{HN}} = -\frac12\sum_A\sum_\mu\operatorname{ReLU}
            (\boldsymbol\xi_\mu\cdot\mathbf g_A)^2
        \quad\text{or}\quad
        E^{\mathrm{HN}} = -\sum_A\operatorname{lse}(\beta, \Xi\mathbf g_A)

    Args:
        dim: the token dimension :math:`D`.
        num_memories: the number :math:`M` of memories (the paper: :math:`4D`).
        kind: ``"relu"`` (the paper's choice) or ``"softmax"``.
        beta: inverse temperature of the softmax variant (unused by ``"relu"``).
        init_std: standard deviation of the initial memories.
        generator: random generator of the initial memories.

    Shapes:
        g: ``(B, N, D)``.
        returns: ``(B,)`` (:meth:`energy`), ``(B, N, D)`` (:meth:`update`).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> memory = HopfieldNetwork(dim=4, num_memories=8, generator=g)
        >>> tokens = torch.randn(3, 5, 4, generator=g, requires_grad=True)
        >>> (grad,) = torch.autograd.grad(memory.energy(tokens).sum(), tokens)
        >>> torch.allclose(memory.update(tokens), -grad, atol=1e-6)
        True
    """

    def __init__(
        self,
        dim: PositiveInt,
        num_memories: PositiveInt,
        kind: OneOf('relu', 'softmax') = "relu",
        beta: PositiveReal = 1.0,
        init_std: NonNegativeReal = 0.1,
        generator: RandomGenerator = None,
    ) -> None:
        super().__init__()
        self.dim = dim
        self.num_memories = num_memories
        self.kind = kind
        self.beta = beta
        xi = torch.randn(self.num_memories, self.dim, generator=generator) * init_std
        self.xi = nn.Parameter(xi)  # (M, D): one memory per row

    def energy(self, g: Tokens) -> torch.Tensor:
        """The Hopfield energy of each configuration, eq. (eq-et-hopfield-energy)."""
        return self._energy(g)

    def update(self, g: Tokens) -> torch.Tensor:
        """Minus the gradient of the energy, in closed form, eq. (eq-et-hopfield-update)."""
        return self._update(g)

    def _energy(self, g: torch.Tensor) -> torch.Tensor:
        h = g @ self.xi.T  # (B, N, M): xi_mu . g_A
        if self.kind == "softmax":
            return -lse(self.beta, h).sum(-1)  # (eq-et-hopfield-softmax)
        return -0.5 * F.relu(h).pow(2).sum((1, 2))  # (eq-et-hopfield-energy)

    def _update(self, g: torch.Tensor) -> torch.Tensor:
        h = g @ self.xi.T  # (B, N, M)
        if self.kind == "softmax":
            return torch.softmax(self.beta * h, dim=-1) @ self.xi  # (B, N, D)
        return F.relu(h) @ self.xi  # (eq-et-hopfield-update)  (B, N, D)

    def extra_repr(self) -> str:
        extra = f", beta={self.beta:g}" if self.kind == "softmax" else ""
        return f"dim={self.dim}, num_memories={self.num_memories}, kind={self.kind!r}{extra}"
