r"""The bare self-attention: a recurrent network of vector spins (D'Amico & Negri, 2024).

Shape letters: ``B`` configurations (images), ``N`` tokens (spins), ``d`` the spin
dimension, ``S`` iterations of the dynamics.

Every token is a unit vector spin :math:`\mathbf x_i \in \mathbb R^d`; the pair
:math:`(i, j)` is coupled by its own :math:`d \times d` matrix :math:`J_{ij}`
(:math:`J_{ii} = 0`), so the couplings form an ``(N, N, d, d)`` tensor and carry the
positions. One step of the dynamics, for all spins at once:

.. math::
    \alpha_{i\leftarrow j} = \operatorname{softmax}_{j \ne i}
        \bigl(\lambda\, \mathbf x_i^\top J_{ij}\mathbf x_j\bigr), \qquad
    \mathbf x_i \leftarrow \operatorname{normalize}\Bigl(\sum_{j \ne i}
        \alpha_{i\leftarrow j} J_{ij}\mathbf x_j + \gamma\,\mathbf x_i\Bigr)

and the local field :math:`\mathbf h_i = \sum_j \alpha_{i\leftarrow j}J_{ij}\mathbf x_j`
is minus the gradient, with respect to :math:`\mathbf x_i` alone, of the local energy

.. math::
    e_i = -\frac{1}{\lambda}\log\sum_{j \ne i}\exp\bigl(\lambda\,
        \mathbf x_i^\top J_{ij}\mathbf x_j\bigr).

At :math:`\lambda = 0` (infinite temperature) the attention is uniform and the update
is linear up to the normalisation: the control "attention switched off".

The ``(B, N, N, d)`` intermediate terms :math:`J_{ij}\mathbf x_j` are computed for a
few configurations at a time, so that memory stays small for any batch.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated, Any

import torch
from torch import nn

from seqbook._contracts import (
    Dims,
    InstanceOf,
    IntAtLeast,
    NonNegativeInt,
    NonNegativeReal,
    PositiveInt,
    RandomGenerator,
    Shaped,
)

__all__ = ["BareSelfAttention"]


class _KeyMask(Dims):
    """A mask of tokens (see :class:`~seqbook._contracts.Dims`) that leaves every
    configuration two tokens at least: a spin never attends to itself and needs another
    one to attend to."""

    def check_in(self, name: str, value: Any, call: dict[str, Any], bound: dict[str, Any]) -> Any:
        value = super().check_in(name, value, call, bound)
        if (value.sum(-1) < 2).any():
            raise ValueError(f"{name} must allow at least two tokens per configuration: a "
                             "spin never attends to itself and needs another one to attend to")
        return value


# The contracts of the public methods: finite configurations of the model's N spins of
# dimension d in the couplings' dtype and device, and a mask of their tokens.
Spins = Shaped("B num_tokens dim", floating=True, finite=True, dtype_of="module",
               device_of="module")
KeyMask = Annotated[torch.Tensor,  # True = attend; on the couplings' device
                    _KeyMask("B num_tokens", dtype=torch.bool, device_of="module")]

# Elements of one chunk's (B, N, N, d) intermediate: about 64 MB in float32.
_CHUNK_ELEMENTS = 16_000_000


class BareSelfAttention(nn.Module):
    r"""Self-attention as an attractor network of :math:`N` vector spins.

    .. math::
        \mathbf x_i^{(t+1)} = \operatorname{normalize}\Bigl(\sum_{j \ne i}
            \operatorname{softmax}_j\bigl(\lambda\,\mathbf x_i^{(t)\top} J_{ij}
            \mathbf x_j^{(t)}\bigr)\, J_{ij}\mathbf x_j^{(t)}
            + \gamma\,\mathbf x_i^{(t)}\Bigr)

    The couplings start uniform in :math:`[-\frac{1}{2d}, \frac{1}{2d}]` with
    :math:`J_{ii} = 0`, as in the paper's text; train them with
    :func:`~seqbook.attractor.train_pseudo_likelihood`.

    Args:
        num_tokens: the number :math:`N` of spins (patches of an image).
        dim: the spin dimension :math:`d`.
        lam: inverse temperature :math:`\lambda \ge 0` of the dynamics' softmax (the
            paper evaluates with 1 and trains with 5); 0 makes the attention uniform
            over the partners (attention switched off).
        gamma: weight :math:`\gamma \ge 0` of a spin's own state in its update
            (1 in the paper's text, 2 in the authors' code).
        generator: random generator for the initial couplings.

    Shapes:
        x: ``(B, N, d)``, unit vectors (a masked token may be the zero vector), of
        the couplings' dtype and device.
        key_mask: ``(B, N)``, True = the token may be attended to.
        J: ``(N, N, d, d)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> model = BareSelfAttention(num_tokens=5, dim=4, generator=g)
        >>> x = torch.nn.functional.normalize(torch.randn(2, 5, 4, generator=g), dim=-1)
        >>> trajectory = model.run(x, steps=3)
        >>> tuple(trajectory.shape)
        (4, 2, 5, 4)
        >>> torch.allclose(trajectory[-1].norm(dim=-1), torch.ones(2, 5))
        True
    """

    def __init__(
        self,
        num_tokens: IntAtLeast(2),
        dim: PositiveInt,
        lam: NonNegativeReal = 1.0,
        gamma: NonNegativeReal = 1.0,
        generator: RandomGenerator = None,
    ) -> None:
        super().__init__()
        self.num_tokens = num_tokens
        self.dim = dim
        self.lam = lam
        self.gamma = gamma
        N, d = self.num_tokens, self.dim
        J = (torch.rand(N, N, d, d, generator=generator) - 0.5) / d  # in [-1/2d, 1/2d]
        J[torch.arange(N), torch.arange(N)] = 0.0  # J_ii = 0
        self.J = nn.Parameter(J)  # (N, N, d, d)

    # ------------------------------------------------------------- the math
    def _partners(self, S: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
        """Scores (or logits) with -inf where j = i or where token j is masked."""
        N = self.num_tokens
        excluded = torch.eye(N, dtype=torch.bool, device=S.device)  # j = i
        if key_mask is not None:
            excluded = excluded | ~key_mask[:, None, :]  # (B, N, N)
        return S.masked_fill(excluded, float("-inf"))

    def _field(
        self, x: torch.Tensor, key_mask: torch.Tensor | None
    ) -> torch.Tensor:
        Jx = torch.einsum("ijde,bje->bijd", self.J, x)  # (B, N, N, d): J_ij x_j
        S = torch.einsum("bid,bijd->bij", x, Jx)  # (B, N, N): x_i^T J_ij x_j
        # (eq-attr-alpha)
        alpha = torch.softmax(self._partners(self.lam * S, key_mask), dim=-1)
        return torch.einsum("bij,bijd->bid", alpha, Jx)  # (eq-attr-field)

    def _step(
        self, x: torch.Tensor, key_mask: torch.Tensor | None
    ) -> torch.Tensor:
        y = self._field(x, key_mask) + self.gamma * x  # (eq-attr-dynamics)
        # (eq-attr-normalize)
        return y / y.norm(dim=-1, keepdim=True).clamp_min(1e-12)

    def _energies(
        self, x: torch.Tensor, others: torch.Tensor, lam: float
    ) -> torch.Tensor:
        S = torch.einsum("bid,ijde,bje->bij", x, self.J, others)  # (B, N, N)
        # the local energies, eq. (eq-attr-local-energy)
        return -torch.logsumexp(self._partners(lam * S, None), dim=-1) / lam

    # ------------------------------------------------------------ plumbing
    def _chunked(
        self, fn: Callable[..., torch.Tensor], *tensors: torch.Tensor | None
    ) -> torch.Tensor:
        """``fn`` on a few configurations at a time (the first dimension of each tensor)."""
        B = tensors[0].shape[0]
        size = max(1, _CHUNK_ELEMENTS // (self.num_tokens**2 * self.dim))
        if B <= size:
            return fn(*tensors)
        parts = [
            fn(*(None if t is None else t[start : start + size] for t in tensors))
            for start in range(0, B, size)
        ]
        return torch.cat(parts)

    # ------------------------------------------------------------ public API
    def scores(self, x: Spins) -> torch.Tensor:
        r"""The scores :math:`S_{ij} = \mathbf x_i^\top J_{ij}\mathbf x_j`, :math:`-\infty` for
        :math:`j = i`.

        Shapes:
            x: ``(B, N, d)``.
            returns: ``(B, N, N)``, row ``i`` for the query spin ``i``.
        """

        def scores(x: torch.Tensor) -> torch.Tensor:
            return self._partners(torch.einsum("bid,ijde,bje->bij", x, self.J, x), None)

        return self._chunked(scores, x)

    def attention(self, x: Spins, key_mask: KeyMask | None = None) -> torch.Tensor:
        r"""The attention mask :math:`\alpha_{i\leftarrow j}` of eq. (eq-attr-alpha).

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, N)``; each row sums to 1 and has a zero diagonal.
        """
        def attention(x: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
            S = torch.einsum("bid,ijde,bje->bij", x, self.J, x)
            return torch.softmax(self._partners(self.lam * S, key_mask), dim=-1)

        return self._chunked(attention, x, key_mask)

    def local_field(self, x: Spins, key_mask: KeyMask | None = None) -> torch.Tensor:
        r"""The local fields
        :math:`\mathbf h_i = \sum_{j\ne i}\alpha_{i\leftarrow j}J_{ij}\mathbf x_j`.

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, d)``.
        """
        return self._chunked(self._field, x, key_mask)

    def step(self, x: Spins, key_mask: KeyMask | None = None) -> torch.Tensor:
        r"""One parallel update of all spins, eq. (eq-attr-dynamics), back on the sphere.

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, d)``, unit vectors.
        """
        return self._chunked(self._step, x, key_mask)

    @torch.no_grad()
    def run(
        self, x0: Spins, steps: NonNegativeInt, key_mask: KeyMask | None = None
    ) -> torch.Tensor:
        """Iterate the dynamics ``steps`` times and return the whole trajectory.

        ``key_mask`` applies to the **first** step only: masked tokens (zero vectors,
        no information) are not attended to until they have been predicted once.

        Shapes:
            x0: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(steps + 1, B, N, d)``, the initial state first.
        """
        states = [x0]
        for t in range(steps):
            states.append(self._chunked(self._step, states[-1], key_mask if t == 0 else None))
        return torch.stack(states)  # (S + 1, B, N, d)

    def local_energies(
        self, x: Spins, others: Spins | None = None, lam: NonNegativeReal | None = None
    ) -> torch.Tensor:
        r"""The local energies :math:`e_i` of eq. (eq-attr-local-energy).

        .. math::
            e_i(\mathbf x_i, \{\mathbf y_j\}) = -\frac{1}{\lambda}\log\sum_{j\ne i}
                \exp\bigl(\lambda\,\mathbf x_i^\top J_{ij}\mathbf y_j\bigr)

        By default the other spins are the same configuration, :math:`\mathbf y =
        \mathbf x`. Passing ``others=x.detach()`` makes :math:`\mathbf x_i` the only
        variable of :math:`e_i`, so that autograd of :math:`\sum_i e_i` returns the
        partial derivatives :math:`\partial e_i/\partial\mathbf x_i` of eq.
        (eq-attr-gradient).

        Args:
            x: the spins whose energies are computed.
            others: the configuration of the other spins (default ``x``).
            lam: inverse temperature :math:`\lambda > 0` (default: the model's ``lam``,
                which must then be > 0).

        Shapes:
            x, others: ``(B, N, d)``.
            returns: ``(B, N)``.
        """
        if others is None:
            others = x
        lam = self.lam if lam is None else lam
        if lam == 0:
            raise ValueError("lam must be > 0 for the energies (-(1/lam) log sum exp diverges "
                             "at lam = 0), got 0.0")
        return self._chunked(lambda x, y: self._energies(x, y, lam), x, others)

    def energy(self, x: torch.Tensor, lam: float | None = None) -> torch.Tensor:
        r"""The total energy :math:`E(\mathbf x) = \sum_i e_i`, eq. (eq-attr-total-energy).

        Shapes:
            x: ``(B, N, d)``.
            returns: ``(B,)``.
        """
        return self.local_energies(x, lam=lam).sum(-1)  # (eq-attr-total-energy)

    def extra_repr(self) -> str:
        return (
            f"num_tokens={self.num_tokens}, dim={self.dim}, lam={self.lam:g}, "
            f"gamma={self.gamma:g}"
        )


# The contract of the functions that take a model (training, spectrum, storage).
BareModel = InstanceOf(BareSelfAttention, what="a seqbook.attractor.BareSelfAttention")
