r"""The Energy Transformer block: one global energy, and token dynamics that descend it.

Shape letters: ``B`` configurations (images), ``N`` tokens, ``D`` token features,
``S`` steps of the dynamics.

The block of Hoover et al. (2023) sums two energies of the normalised tokens
:math:`\mathbf g = \nabla L(\mathbf x)` (:class:`EnergyLayerNorm`),
:math:`E(\mathbf g) = E^{\mathrm{ATT}}(\mathbf g) + E^{\mathrm{HN}}(\mathbf g)`
(:class:`EnergyAttention`, :class:`HopfieldNetwork`), and lets the tokens evolve by

.. math::
    \tau\frac{d\mathbf x_A}{dt} = -\frac{\partial E}{\partial\mathbf g_A},
    \qquad\text{discretised as}\qquad
    \mathbf x_A^{(t+1)} = \mathbf x_A^{(t)} - \alpha\,
        \frac{\partial E}{\partial\mathbf g_A}\Big|_{\mathbf g(\mathbf x^{(t)})} .

Along the continuous dynamics
:math:`dE/dt = -\tau\sum_A\dot{\mathbf x}_A^\top\,\nabla^2L(\mathbf x_A)\,
\dot{\mathbf x}_A \le 0`, since the Hessian of the Lagrangian is positive
semi-definite: the energy never increases, and the discrete steps inherit this for a
small enough :math:`\alpha`.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_choice, check_int, check_real
from seqbook.energy_transformer._validate import Tokens, check_tokens
from seqbook.energy_transformer.attention import EnergyAttention
from seqbook.energy_transformer.hopfield import KINDS, HopfieldNetwork
from seqbook.energy_transformer.layer_norm import EnergyLayerNorm

__all__ = ["EnergyTransformer"]

METHODS = ("closed", "autograd")


class EnergyTransformer(nn.Module):
    r"""An Energy Transformer block: energy layer norm, energy attention, Hopfield network.

    .. math::
        E(\mathbf x) = E^{\mathrm{ATT}}(\mathbf g(\mathbf x))
            + E^{\mathrm{HN}}(\mathbf g(\mathbf x)), \qquad
        \mathbf x^{(t+1)} = \mathbf x^{(t)} - \alpha\,\nabla_{\mathbf g}E

    Args:
        dim: the token dimension :math:`D`.
        num_heads: attention heads :math:`H`.
        head_dim: dimension :math:`Y` of a head's queries and keys.
        num_memories: memories :math:`M` of the Hopfield network.
        hopfield: ``"relu"`` or ``"softmax"`` (see :class:`HopfieldNetwork`).
        beta: the attention's inverse temperature (default :math:`1/\sqrt Y`).
        init_std: standard deviation of the initial :math:`W^Q, W^K, \Xi`.
        generator: random generator of the initial weights.

    Shapes:
        x: ``(B, N, D)`` tokens.
        returns: ``(B,)`` (:meth:`energy`), ``(B, N, D)`` (:meth:`gradient`, and
        :meth:`forward`, one step), ``(S + 1, B, N, D)`` (:meth:`run`).

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> block = EnergyTransformer(dim=8, num_memories=16, generator=g)
        >>> x0 = torch.randn(2, 6, 8, generator=g)
        >>> trajectory = block.run(x0, steps=5, alpha=0.1)
        >>> energies = block.energy(trajectory.flatten(0, 1)).view(6, 2)
        >>> bool((energies.diff(dim=0) <= 0).all())
        True
    """

    def __init__(
        self,
        dim: int,
        num_heads: int = 2,
        head_dim: int = 8,
        num_memories: int = 64,
        hopfield: str = "relu",
        beta: float | None = None,
        init_std: float = 0.1,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        check_choice("hopfield", hopfield, KINDS)  # the sizes: checked by the modules
        self.dim = dim
        self.norm = EnergyLayerNorm(dim)
        self.attention = EnergyAttention(dim, num_heads, head_dim, beta, init_std, generator)
        self.hopfield = HopfieldNetwork(dim, num_memories, hopfield, init_std=init_std,
                                        generator=generator)

    # ------------------------------------------------------------------ energy
    def energy(self, x: Tokens) -> Float[Tensor, " B"]:
        """The energy :math:`E(\\mathbf g(\\mathbf x))` of each configuration, eq.
        (eq-et-energy)."""
        check_tokens("x", x)
        g = self.norm(x)  # (eq-et-layernorm)
        return self.attention.energy(g) + self.hopfield.energy(g)  # (eq-et-energy)

    def gradient(self, g: Tokens, method: str = "closed") -> Tokens:
        r""":math:`\partial E/\partial\mathbf g`, in closed form or by autograd.

        Args:
            g: normalised tokens.
            method: ``"closed"`` (eqs. (eq-et-attention-update) and
                (eq-et-hopfield-update)) or ``"autograd"``.
        """
        check_choice("method", method, METHODS)
        if method == "closed":
            return -(self.attention(g) + self.hopfield(g))
        create_graph = torch.is_grad_enabled()  # to train through the dynamics
        with torch.enable_grad():
            if not g.requires_grad:
                g = g.detach().requires_grad_(True)
            E = self.attention.energy(g) + self.hopfield.energy(g)  # (eq-et-energy)
            (grad,) = torch.autograd.grad(E.sum(), g, create_graph=create_graph)
        return grad

    # ---------------------------------------------------------------- dynamics
    def forward(
        self, x: Tokens, alpha: float = 0.1, method: str = "closed"
    ) -> Tokens:
        """One step of the token dynamics, eq. (eq-et-step)."""
        check_tokens("x", x)
        check_real("alpha", alpha, min_value=0.0, strict_min=True)
        g = self.norm(x)  # (eq-et-layernorm)
        return x - alpha * self.gradient(g, method)  # (eq-et-step)

    def run(
        self,
        x0: Tokens,
        steps: int,
        alpha: float = 0.1,
        method: str = "closed",
    ) -> Float[Tensor, "S B N {self.dim}"]:
        """``steps`` steps of the dynamics from ``x0``: the whole trajectory, ``x0`` first.

        Differentiable (train through it by backpropagation); wrap it in
        ``torch.no_grad()`` to only evaluate.
        """
        check_tokens("x0", x0)
        check_int("steps", steps, min_value=0)
        check_real("alpha", alpha, min_value=0.0, strict_min=True)
        check_choice("method", method, METHODS)
        states = [x0]
        for _ in range(steps):
            states.append(self(states[-1], alpha, method))
        return torch.stack(states)  # (S + 1, B, N, D)
