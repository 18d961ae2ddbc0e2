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
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_choice, check_positive_int, check_real
from seqbook.energy_transformer._validate import Tokens, check_tokens
from seqbook.hopfield import lse

__all__ = ["HopfieldNetwork"]

KINDS = ("relu", "softmax")


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
        returns: ``(B,)`` (:meth:`energy`), ``(B, N, D)`` (:meth:`forward`, the
        update).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> memory = HopfieldNetwork(dim=4, num_memories=8, generator=g)
        >>> tokens = torch.randn(3, 5, 4, generator=g, requires_grad=True)
        >>> (grad,) = torch.autograd.grad(memory.energy(tokens).sum(), tokens)
        >>> torch.allclose(memory(tokens), -grad, atol=1e-6)
        True
    """

    def __init__(
        self,
        dim: int,
        num_memories: int,
        kind: str = "relu",
        beta: float = 1.0,
        init_std: float = 0.1,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_positive_int("dim", dim), check_positive_int("num_memories", num_memories)
        check_choice("kind", kind, KINDS)
        check_real("beta", beta, min_value=0.0, strict_min=True)
        check_real("init_std", init_std, min_value=0.0)
        self.dim = dim
        self.num_memories = num_memories
        self.kind = kind
        self.beta = beta
        xi = torch.randn(self.num_memories, self.dim, generator=generator) * init_std
        self.xi = nn.Parameter(xi)  # (M, D): one memory per row

    def energy(self, g: Tokens) -> Float[Tensor, " B"]:
        """The Hopfield energy of each configuration, eq. (eq-et-hopfield-energy)."""
        check_tokens("g", g)
        h = g @ self.xi.T  # (B, N, M): xi_mu . g_A
        if self.kind == "softmax":
            return -lse(self.beta, h).sum(-1)  # (eq-et-hopfield-softmax)
        return -0.5 * F.relu(h).pow(2).sum((1, 2))  # (eq-et-hopfield-energy)

    def forward(self, g: Tokens) -> Tokens:
        """The update: minus the gradient of the energy, in closed form, eq.
        (eq-et-hopfield-update)."""
        check_tokens("g", g)
        h = g @ self.xi.T  # (B, N, M)
        if self.kind == "softmax":
            return torch.softmax(self.beta * h, dim=-1) @ self.xi  # (B, N, D)
        return F.relu(h) @ self.xi  # (eq-et-hopfield-update)  (B, N, D)

    def extra_repr(self) -> str:
        extra = f", beta={self.beta:g}" if self.kind == "softmax" else ""
        return f"dim={self.dim}, num_memories={self.num_memories}, kind={self.kind!r}{extra}"
