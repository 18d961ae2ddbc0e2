r"""Energy attention: multi-head attention as the gradient of one energy (Hoover et al., 2023).

Shape letters: ``B`` configurations (images), ``N`` tokens, ``D`` token features,
``H`` heads, ``Y`` features of a head's queries and keys.

Every token :math:`\mathbf g_A` (after the energy layer norm) has, in head :math:`h`, a
key :math:`\mathbf k_{hA} = W^K_h\mathbf g_A` and a query :math:`\mathbf q_{hA} =
W^Q_h\mathbf g_A`. The energy

.. math::
    E^{\mathrm{ATT}} = -\frac1\beta\sum_{h=1}^H\sum_{C=1}^N\log\sum_{B\ne C}
        \exp\bigl(\beta\,\mathbf k_{hB}\cdot\mathbf q_{hC}\bigr)

is low when every query finds a key that matches it. There is no value matrix: the
update of a token is minus the gradient of the energy,

.. math::
    -\frac{\partial E^{\mathrm{ATT}}}{\partial\mathbf g_A} = \sum_h \Bigl(
        W_h^{Q\top}\sum_{B\ne A}\omega_{hAB}\,\mathbf k_{hB}
        + W_h^{K\top}\sum_{C\ne A}\omega_{hCA}\,\mathbf q_{hC}\Bigr),
    \qquad \omega_{hCB} = \operatorname{softmax}_{B\ne C}(\beta\,
        \mathbf k_{hB}\cdot\mathbf q_{hC}),

the first term an ordinary attention whose values are the keys mapped back by
:math:`W^{Q\top}_h`, the second the same weights read by the keys' side.
"""

from __future__ import annotations

import math
from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_positive_int, check_real
from seqbook.energy_transformer._validate import Tokens, check_tokens

__all__ = ["EnergyAttention"]

#: a head's keys or queries ``(B, H, N, Y)``
HeadVectors: TypeAlias = Float[Tensor, "B {self.num_heads} N {self.head_dim}"]
#: scores or weights ``(B, H, N, N)``: row C (the query), column B (the key)
Scores: TypeAlias = Float[Tensor, "B {self.num_heads} N N"]


class EnergyAttention(nn.Module):
    r"""Multi-head energy attention: an energy :math:`E^{\mathrm{ATT}}(\mathbf g)` and its update.

    .. math::
        E^{\mathrm{ATT}} = -\frac1\beta\sum_h\sum_C\log\sum_{B\ne C}
            \exp(\beta\,\mathbf k_{hB}\cdot\mathbf q_{hC})

    Args:
        dim: the token dimension :math:`D`.
        num_heads: the number of heads :math:`H`.
        head_dim: the dimension :math:`Y` of a head's queries and keys.
        beta: inverse temperature :math:`\beta > 0`; default :math:`1/\sqrt Y`.
        init_std: standard deviation of the initial :math:`W^Q, W^K`.
        generator: random generator of the initial weights.

    Shapes:
        g: ``(B, N, D)`` normalised tokens (at least 2: a token never attends to
            itself).
        returns: ``(B,)`` (:meth:`energy`), ``(B, N, D)`` (:meth:`forward`, the
            update), ``(B, H, N, N)`` (:meth:`weights`); :meth:`scores` returns the
            keys and queries ``(B, H, N, Y)`` and the scores ``(B, H, N, N)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> attention = EnergyAttention(dim=6, num_heads=2, head_dim=3, generator=g)
        >>> tokens = torch.randn(2, 5, 6, generator=g, requires_grad=True)
        >>> (grad,) = torch.autograd.grad(attention.energy(tokens).sum(), tokens)
        >>> torch.allclose(attention(tokens), -grad, atol=1e-6)
        True
    """

    def __init__(
        self,
        dim: int,
        num_heads: int = 2,
        head_dim: int = 8,
        beta: float | None = None,
        init_std: float = 0.1,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        for name, size in (("dim", dim), ("num_heads", num_heads), ("head_dim", head_dim)):
            check_positive_int(name, size)
        if beta is not None:
            check_real("beta", beta, min_value=0.0, strict_min=True)
        check_real("init_std", init_std, min_value=0.0)
        self.dim = dim
        self.num_heads = num_heads
        self.head_dim = head_dim
        self.beta = 1 / math.sqrt(self.head_dim) if beta is None else beta
        shape = (self.num_heads, self.head_dim, self.dim)
        W = torch.randn(shape, generator=generator) * init_std
        # Keys start equal to queries: W_K^T W_Q is then positive semi-definite and
        # every token first attends to the tokens most similar to it.
        self.W_Q = nn.Parameter(W.clone())
        self.W_K = nn.Parameter(W.clone())

    def scores(self, g: Tokens) -> tuple[HeadVectors, HeadVectors, Scores]:
        r"""The keys :math:`\mathbf k_{hB}` and queries :math:`\mathbf q_{hC}`, eq.
        (eq-et-keys), and the scores :math:`\beta\,\mathbf k_{hB}\cdot\mathbf q_{hC}`,
        :math:`-\infty` on the diagonal (a token never attends to itself)."""
        check_tokens("g", g)
        K = torch.einsum("bnd,hyd->bhny", g, self.W_K)  # (eq-et-keys)  (B, H, N, Y)
        Q = torch.einsum("bnd,hyd->bhny", g, self.W_Q)  # (eq-et-keys)  (B, H, N, Y)
        S = self.beta * Q @ K.transpose(-1, -2)  # (B, H, N, N): row C, column B
        N = g.shape[-2]
        self_pair = torch.eye(N, dtype=torch.bool, device=g.device)  # B == C
        return K, Q, S.masked_fill(self_pair, float("-inf"))

    def energy(self, g: Tokens) -> Float[Tensor, " B"]:
        """The attention energy of each configuration, eq. (eq-et-attention-energy)."""
        _, _, S = self.scores(g)
        lse = torch.logsumexp(S, dim=-1)  # (B, H, N): one term per query C
        return -lse.sum((1, 2)) / self.beta  # (eq-et-attention-energy)

    def weights(self, g: Tokens) -> Scores:
        r"""The attention weights :math:`\omega_{hCB}` (row: query :math:`C`)."""
        return torch.softmax(self.scores(g)[2], dim=-1)  # (B, H, N, N)

    def forward(self, g: Tokens) -> Tokens:
        """The update: minus the gradient of the energy, in closed form, eq.
        (eq-et-attention-update)."""
        K, Q, S = self.scores(g)
        omega = torch.softmax(S, dim=-1)  # (B, H, N, N)
        from_keys = omega @ K  # (B, H, N, Y): sum_B omega_AB k_B
        from_queries = omega.transpose(-1, -2) @ Q  # sum_C omega_CA q_C
        return (  # (eq-et-attention-update)
            torch.einsum("bhny,hyd->bnd", from_keys, self.W_Q)
            + torch.einsum("bhny,hyd->bnd", from_queries, self.W_K)
        )

    def extra_repr(self) -> str:
        return (
            f"dim={self.dim}, num_heads={self.num_heads}, head_dim={self.head_dim}, "
            f"beta={self.beta:.4g}"
        )
