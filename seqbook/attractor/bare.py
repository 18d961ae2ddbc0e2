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
from typing import TypeAlias

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int, check_real
from seqbook.attractor._values import check_device, check_finite

__all__ = ["BareSelfAttention"]

# Configurations of the model's N spins of dimension d (in the couplings' dtype), a
# mask of their tokens (True = may be attended to), scores or weights (B, N, N) with
# row i for the query spin i, and local energies (B, N).
Spins: TypeAlias = Float[Tensor, "B {self.num_tokens} {self.dim}"]
KeyMask: TypeAlias = Bool[Tensor, "B {self.num_tokens}"]
Scores: TypeAlias = Float[Tensor, "B {self.num_tokens} {self.num_tokens}"]
Energies: TypeAlias = Float[Tensor, "B {self.num_tokens}"]

# Elements of one chunk's (B, N, N, d) intermediate: about 64 MB in float32.
_CHUNK_ELEMENTS = 16_000_000


def _energy_lam(lam: float) -> float:
    """``lam`` if it is > 0: the energies' -(1/lam) log sum exp diverges at lam = 0."""
    if not check_real("lam", lam) > 0:
        raise ValueError(f"lam must be > 0 for the energies (-(1/lam) log sum exp diverges "
                         f"at lam = 0), got {lam}")
    return lam


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
        num_tokens: int,
        dim: int,
        lam: float = 1.0,
        gamma: float = 1.0,
        generator: torch.Generator | None = None,
    ) -> None:
        super().__init__()
        self.num_tokens = check_int("num_tokens", num_tokens, min_value=2)
        self.dim = check_positive_int("dim", dim)
        self.lam = check_real("lam", lam, min_value=0.0)
        self.gamma = check_real("gamma", gamma, min_value=0.0)
        N, d = self.num_tokens, self.dim
        J = (torch.rand(N, N, d, d, generator=generator) - 0.5) / d  # in [-1/2d, 1/2d]
        J[torch.arange(N), torch.arange(N)] = 0.0  # J_ii = 0
        self.J = nn.Parameter(J)  # (N, N, d, d)

    # ------------------------------------------------------------ plumbing
    def _chunk(self) -> int:
        """Configurations per chunk: their (B, N, N, d) terms stay near _CHUNK_ELEMENTS."""
        return max(1, _CHUNK_ELEMENTS // (self.num_tokens**2 * self.dim))

    def _chunked(self, fn: Callable[..., Tensor], x: Tensor, *others: Tensor | None) -> Tensor:
        """``fn`` on a few configurations at a time (the first dimension of each tensor)."""
        size = self._chunk()
        return torch.cat([
            fn(x[i : i + size], *(None if t is None else t[i : i + size] for t in others))
            for i in range(0, len(x), size)
        ])

    # ------------------------------------------------------------ public API
    def check_spins(self, x: Spins, key_mask: KeyMask | None = None, name: str = "x") -> Spins:
        """What the types cannot say: the spins ``x`` (the argument ``name``) and the mask
        are on the couplings' device, the spins are finite, and the mask leaves every
        configuration two tokens at least (a spin never attends to itself and needs
        another one to attend to). Returns ``x``.
        """
        for arg, value in ((name, x), ("key_mask", key_mask)):
            check_device(arg, value, self.J.device, of="the module's parameters")
        check_finite(name, x)
        if key_mask is not None and (key_mask.sum(-1) < 2).any():
            raise ValueError("key_mask must allow at least two tokens per configuration: a "
                             "spin never attends to itself and needs another one to attend to")
        return x

    def partners(self, S: Scores, key_mask: KeyMask | None = None) -> Scores:
        """Scores (or logits) with -inf where j = i or where token j is masked."""
        excluded = torch.eye(self.num_tokens, dtype=torch.bool, device=S.device)  # j = i
        if key_mask is not None:
            excluded = excluded | ~key_mask[:, None, :]  # (B, N, N)
        return S.masked_fill(excluded, float("-inf"))

    def scores(self, x: Spins, others: Spins | None = None) -> Scores:
        r"""The scores :math:`S_{ij} = \mathbf x_i^\top J_{ij}\mathbf y_j`, :math:`-\infty` for
        :math:`j = i`, with the other spins :math:`\mathbf y` = ``others`` (default ``x``).

        Shapes:
            x, others: ``(B, N, d)``.
            returns: ``(B, N, N)``, row ``i`` for the query spin ``i``.
        """
        y = x if others is None else self.check_spins(others, name="others")
        if len(self.check_spins(x)) > self._chunk():  # a large batch: in pieces
            return self._chunked(self.scores, x, y)
        return self.partners(torch.einsum("bid,ijde,bje->bij", x, self.J, y))

    def attention(self, x: Spins, key_mask: KeyMask | None = None) -> Scores:
        r"""The attention mask :math:`\alpha_{i\leftarrow j}` of eq. (eq-attr-alpha).

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, N)``; each row sums to 1 and has a zero diagonal.
        """
        if len(self.check_spins(x, key_mask)) > self._chunk():  # a large batch: in pieces
            return self._chunked(self.attention, x, key_mask)
        S = torch.einsum("bid,ijde,bje->bij", x, self.J, x)
        return torch.softmax(self.partners(self.lam * S, key_mask), dim=-1)

    def local_field(self, x: Spins, key_mask: KeyMask | None = None) -> Spins:
        r"""The local fields
        :math:`\mathbf h_i = \sum_{j\ne i}\alpha_{i\leftarrow j}J_{ij}\mathbf x_j`.

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, d)``.
        """
        if len(self.check_spins(x, key_mask)) > self._chunk():  # a large batch
            return self._chunked(self.local_field, x, key_mask)  # in pieces
        Jx = torch.einsum("ijde,bje->bijd", self.J, x)  # (B, N, N, d): J_ij x_j
        S = torch.einsum("bid,bijd->bij", x, Jx)  # (B, N, N): x_i^T J_ij x_j
        # (eq-attr-alpha)
        alpha = torch.softmax(self.partners(self.lam * S, key_mask), dim=-1)
        return torch.einsum("bij,bijd->bid", alpha, Jx)  # (eq-attr-field)

    def step(self, x: Spins, key_mask: KeyMask | None = None) -> Spins:
        r"""One parallel update of all spins, eq. (eq-attr-dynamics), back on the sphere.

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, d)``, unit vectors.
        """
        y = self.local_field(x, key_mask) + self.gamma * x  # (eq-attr-dynamics)
        # (eq-attr-normalize)
        return y / y.norm(dim=-1, keepdim=True).clamp_min(1e-12)

    def run(
        self, x0: Spins, steps: int, key_mask: KeyMask | None = None
    ) -> Float[Tensor, "{steps+1} B {self.num_tokens} {self.dim}"]:
        """Iterate the dynamics ``steps`` times and return the whole trajectory (no
        gradients are recorded).

        ``key_mask`` applies to the **first** step only: masked tokens (zero vectors,
        no information) are not attended to until they have been predicted once.

        Shapes:
            x0: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(steps + 1, B, N, d)``, the initial state first.
        """
        check_int("steps", steps, min_value=0)
        states = [self.check_spins(x0, key_mask, name="x0")]
        with torch.no_grad():
            for t in range(steps):
                states.append(self.step(states[-1], key_mask if t == 0 else None))
            return torch.stack(states)  # (S + 1, B, N, d)

    def local_energies(self, x: Spins, others: Spins | None = None,
                       lam: float | None = None) -> Energies:
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
        lam = _energy_lam(self.lam if lam is None else lam)
        S = self.scores(x, others)  # (B, N, N), -inf where j = i
        # the local energies, eq. (eq-attr-local-energy)
        return -torch.logsumexp(lam * S, dim=-1) / lam

    def energy(self, x: Spins, lam: float | None = None) -> Float[Tensor, " B"]:
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
