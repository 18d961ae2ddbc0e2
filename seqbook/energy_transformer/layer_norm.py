r"""The energy layer norm: a layer normalisation that is the gradient of a Lagrangian.

Shape letters: ``B`` configurations (images), ``N`` tokens, ``D`` token features.

Hoover et al. (2023) write a token's layer normalisation as the gradient of a convex
scalar function of the token, its Lagrangian,

.. math::
    L(\mathbf x) = D\gamma\sqrt{\tfrac1D\textstyle\sum_j (x_j - \bar x)^2 + \varepsilon}
        + \sum_j \delta_j x_j, \qquad
    g_i = \frac{\partial L}{\partial x_i} = \gamma\,\frac{x_i - \bar x}
        {\sqrt{\tfrac1D\sum_j (x_j - \bar x)^2 + \varepsilon}} + \delta_i .

Its Hessian :math:`\partial^2 L/\partial x_i\partial x_j = \partial g_i/\partial x_j` is
positive semi-definite whenever :math:`\gamma \ge 0`, which is what makes the energy of
the Energy Transformer a Lyapunov function of its dynamics. Unlike the usual layer
norm, :math:`\gamma` is one scalar (a per-feature gain would not be a gradient of a
Lagrangian), and here it is stored as :math:`\log\gamma`, so that it stays positive
during training.
"""

from __future__ import annotations

import math
from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_positive_int, check_real

__all__ = ["EnergyLayerNorm"]

#: ``(..., D)`` features of the module's dimension (and dtype)
Features: TypeAlias = Float[Tensor, "*batch {self.dim}"]


class EnergyLayerNorm(nn.Module):
    r"""Layer normalisation :math:`\mathbf g = \nabla L(\mathbf x)` with a scalar gain.

    .. math::
        \mathbf g = \gamma\,\frac{\mathbf x - \bar x}{\sqrt{\operatorname{Var}(\mathbf x)
            + \varepsilon}} + \boldsymbol\delta

    Args:
        dim: the token dimension :math:`D`.
        eps: :math:`\varepsilon > 0` under the square root (1e-5, as ``nn.LayerNorm``).
        gamma: the initial gain :math:`\gamma > 0` (trained as :math:`\log\gamma`).

    Shapes:
        x: ``(..., D)``.
        returns: ``(..., D)`` (:meth:`forward`), ``(...)`` (:meth:`lagrangian`).

    Example:
        >>> norm = EnergyLayerNorm(4)
        >>> x = torch.tensor([[1.0, 2.0, 3.0, 6.0]])
        >>> torch.allclose(norm(x), torch.nn.functional.layer_norm(x, (4,)))
        True
        >>> x.requires_grad_(True)
        tensor([[1., 2., 3., 6.]], requires_grad=True)
        >>> (grad,) = torch.autograd.grad(norm.lagrangian(x).sum(), x)
        >>> torch.allclose(grad, norm(x))
        True
    """

    def __init__(
        self,
        dim: int,
        eps: float = 1e-5,
        gamma: float = 1.0,
    ) -> None:
        super().__init__()
        check_positive_int("dim", dim)
        check_real("eps", eps, min_value=0.0, strict_min=True)
        check_real("gamma", gamma, min_value=0.0, strict_min=True)
        self.dim = dim
        self.eps = eps
        self.log_gamma = nn.Parameter(torch.tensor(math.log(gamma)))  # gamma > 0
        self.delta = nn.Parameter(torch.zeros(self.dim))

    @property
    def gamma(self) -> Tensor:
        """The gain :math:`\\gamma = e^{\\log\\gamma} > 0`."""
        return self.log_gamma.exp()

    def forward(self, x: Features) -> Features:
        """The normalised tokens :math:`\\mathbf g`, eq. (eq-et-layernorm)."""
        centred = x - x.mean(-1, keepdim=True)  # (..., D)
        scale = (centred.pow(2).mean(-1, keepdim=True) + self.eps).sqrt()
        return self.gamma * centred / scale + self.delta  # (eq-et-layernorm)

    def lagrangian(self, x: Features) -> Float[Tensor, "*batch"]:
        """The Lagrangian :math:`L(\\mathbf x)` of each token, eq. (eq-et-lagrangian)."""
        centred = x - x.mean(-1, keepdim=True)  # (..., D)
        scale = (centred.pow(2).mean(-1) + self.eps).sqrt()  # (...)
        return self.dim * self.gamma * scale + x @ self.delta  # (eq-et-lagrangian)

    def extra_repr(self) -> str:
        return f"dim={self.dim}, eps={self.eps:g}"
