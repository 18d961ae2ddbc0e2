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

The ``(B, N, N, d)`` intermediate tensors are computed for a few query tokens at a
time, so that memory stays small for any batch.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch
from torch import nn

from seqbook._checks import check_int, check_positive_int, check_real, check_tensor

__all__ = ["BareSelfAttention"]

# Elements of one chunk's (k, B, N, d) intermediate: about 16 MB in float32.
_CHUNK_ELEMENTS = 4_000_000


class BareSelfAttention(nn.Module):
    r"""Self-attention as an attractor network of :math:`N` vector spins.

    .. math::
        \mathbf x_i^{(t+1)} = \operatorname{normalize}\Bigl(\sum_{j \ne i}
            \operatorname{softmax}_j\bigl(\lambda\,\mathbf x_i^{(t)\top} J_{ij}
            \mathbf x_j^{(t)}\bigr)\, J_{ij}\mathbf x_j^{(t)}
            + \gamma\,\mathbf x_i^{(t)}\Bigr)

    The couplings start uniform in :math:`[-\frac{1}{2d}, \frac{1}{2d}]` with
    :math:`J_{ii} = 0`, as in the paper; train them with
    :func:`~seqbook.attractor.train_pseudo_likelihood`.

    Args:
        num_tokens: the number :math:`N` of spins (patches of an image).
        dim: the spin dimension :math:`d`.
        lam: inverse temperature :math:`\lambda > 0` of the dynamics' softmax (the
            paper evaluates with 1 and trains with 5).
        gamma: weight :math:`\gamma \ge 0` of a spin's own state in its update
            (1 in the paper).
        generator: random generator for the initial couplings.

    Shapes:
        x: ``(B, N, d)``, unit vectors (a masked token may be the zero vector).
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
        self.lam = check_real("lam", lam, min_value=0.0, strict_min=True)
        self.gamma = check_real("gamma", gamma, min_value=0.0)
        N, d = self.num_tokens, self.dim
        J = (torch.rand(N, N, d, d, generator=generator) - 0.5) / d  # in [-1/2d, 1/2d]
        J[torch.arange(N), torch.arange(N)] = 0.0  # J_ii = 0
        self.J = nn.Parameter(J)  # (N, N, d, d)

    # ---------------------------------------------------------------- checks
    def _check_x(self, name: str, x: object) -> torch.Tensor:
        x = check_tensor(name, x, ndim=3, floating=True)
        if x.shape[1:] != (self.num_tokens, self.dim):
            raise ValueError(
                f"{name} must have shape (B, {self.num_tokens}, {self.dim}) "
                f"(B configurations of N spins of dimension d), got {tuple(x.shape)}"
            )
        if not torch.isfinite(x).all():
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        return x.to(self.J.dtype)

    def _check_key_mask(self, key_mask: object, x: torch.Tensor) -> torch.Tensor | None:
        if key_mask is None:
            return None
        key_mask = check_tensor("key_mask", key_mask, ndim=2)
        if key_mask.dtype != torch.bool:
            raise TypeError(f"key_mask must be a boolean tensor (True = attend), got {key_mask.dtype}")
        if key_mask.shape != x.shape[:2]:
            raise ValueError(
                f"key_mask must have shape (B, N) = {tuple(x.shape[:2])}, got {tuple(key_mask.shape)}"
            )
        if (key_mask.sum(-1) < 2).any():
            raise ValueError(
                "key_mask must allow at least two tokens per configuration: a spin "
                "never attends to itself and needs another one to attend to"
            )
        return key_mask.to(x.device)

    # ---------------------------------------------------------- the core sums
    def _chunks(
        self, x: torch.Tensor, others: torch.Tensor, key_mask: torch.Tensor | None, lam: float
    ) -> Iterator[tuple[slice, torch.Tensor, torch.Tensor, torch.Tensor]]:
        r"""For a few query tokens ``i`` at a time: the scores and the weights.

        Yields ``(rows, J_i, S, alpha)`` with ``J_i`` the couplings of the queries as
        ``(k, d, N d)`` matrices, scores :math:`S_{ij} = \mathbf x_i^\top J_{ij}
        \mathbf y_j` (``y = others``) and weights ``alpha``, both ``(k, B, N)``, for
        the ``k`` query tokens in ``rows``.
        """
        B, N, d = x.shape
        J_rows = self.J.permute(0, 2, 1, 3).reshape(N, d, N * d)  # (N, d, N d): J_i[d, (j, e)]
        queries = x.transpose(0, 1)  # (N, B, d)
        k = max(1, min(N, _CHUNK_ELEMENTS // max(1, B * N * d)))
        for start in range(0, N, k):
            rows = slice(start, min(N, start + k))
            J_i = J_rows[rows]  # (k, d, N d)
            size = J_i.shape[0]
            xJ = torch.bmm(queries[rows], J_i).view(size, B, N, d)  # (k, B, N, d): x_i^T J_ij
            S = (xJ * others).sum(-1)  # (eq-attr-alpha)  (k, B, N)
            own = torch.arange(size, device=x.device)
            S[own, :, own + start] = float("-inf")  # j != i
            if key_mask is not None:
                S = S.masked_fill(~key_mask, float("-inf"))
            yield rows, J_i, S, torch.softmax(lam * S, dim=-1)  # (k, B, N)

    def scores(self, x: torch.Tensor) -> torch.Tensor:
        r"""The scores :math:`S_{ij} = \mathbf x_i^\top J_{ij}\mathbf x_j`, :math:`-\infty` for :math:`j = i`.

        Shapes:
            x: ``(B, N, d)``.
            returns: ``(B, N, N)``, row ``i`` for the query spin ``i``.
        """
        x = self._check_x("x", x)
        parts = [S for _, _, S, _ in self._chunks(x, x, None, self.lam)]
        return torch.cat(parts).transpose(0, 1)  # (B, N, N)

    def attention(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        r"""The attention mask :math:`\alpha_{i\leftarrow j}` of eq. (eq-attr-alpha).

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, N)``; each row sums to 1 and has a zero diagonal.
        """
        x = self._check_x("x", x)
        key_mask = self._check_key_mask(key_mask, x)
        parts = [alpha for _, _, _, alpha in self._chunks(x, x, key_mask, self.lam)]
        return torch.cat(parts).transpose(0, 1)  # (B, N, N)

    def local_field(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        r"""The local fields :math:`\mathbf h_i = \sum_{j\ne i}\alpha_{i\leftarrow j}J_{ij}\mathbf x_j`.

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, d)``.
        """
        x = self._check_x("x", x)
        key_mask = self._check_key_mask(key_mask, x)
        return self._field(x, key_mask)

    def _field(self, x: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
        B, N, d = x.shape
        fields = []
        for _, J_i, _, alpha in self._chunks(x, x, key_mask, self.lam):
            weighted = (alpha.unsqueeze(-1) * x).flatten(-2)  # (k, B, N d): alpha_ij x_j
            fields.append(torch.bmm(weighted, J_i.transpose(1, 2)))  # (k, B, d)
        return torch.cat(fields).transpose(0, 1)  # (eq-attr-field)  (B, N, d)

    # ------------------------------------------------------------ dynamics
    def step(self, x: torch.Tensor, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        r"""One parallel update of all spins, eq. (eq-attr-dynamics), back on the sphere.

        Shapes:
            x: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(B, N, d)``, unit vectors.
        """
        x = self._check_x("x", x)
        key_mask = self._check_key_mask(key_mask, x)
        return self._step(x, key_mask)

    def _step(self, x: torch.Tensor, key_mask: torch.Tensor | None) -> torch.Tensor:
        y = self._field(x, key_mask) + self.gamma * x  # (eq-attr-dynamics)
        return y / y.norm(dim=-1, keepdim=True).clamp_min(1e-12)  # (eq-attr-normalize)

    @torch.no_grad()
    def run(self, x0: torch.Tensor, steps: int, key_mask: torch.Tensor | None = None) -> torch.Tensor:
        """Iterate the dynamics ``steps`` times and return the whole trajectory.

        ``key_mask`` applies to the **first** step only: masked tokens (zero vectors,
        no information) are not attended to until they have been predicted once.

        Shapes:
            x0: ``(B, N, d)``; key_mask: ``(B, N)``.
            returns: ``(steps + 1, B, N, d)``, the initial state first.
        """
        x = self._check_x("x0", x0)
        steps = check_int("steps", steps, min_value=0)
        key_mask = self._check_key_mask(key_mask, x)
        states = [x]
        for t in range(steps):
            states.append(self._step(states[-1], key_mask if t == 0 else None))
        return torch.stack(states)  # (S + 1, B, N, d)

    # -------------------------------------------------------------- energies
    def local_energies(
        self, x: torch.Tensor, others: torch.Tensor | None = None, lam: float | None = None
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
            lam: inverse temperature (default: the model's ``lam``).

        Shapes:
            x, others: ``(B, N, d)``.
            returns: ``(B, N)``.
        """
        x = self._check_x("x", x)
        others = x if others is None else self._check_x("others", others)
        if others.shape != x.shape:
            raise ValueError(
                f"others must have the shape of x {tuple(x.shape)}, got {tuple(others.shape)}"
            )
        lam = self.lam if lam is None else check_real("lam", lam, min_value=0.0, strict_min=True)
        energies = [
            -torch.logsumexp(lam * S, dim=-1) / lam  # (eq-attr-local-energy)  (k, B)
            for _, _, S, _ in self._chunks(x, others, None, lam)
        ]
        return torch.cat(energies).transpose(0, 1)  # (B, N)

    def energy(self, x: torch.Tensor, lam: float | None = None) -> torch.Tensor:
        r"""The total energy :math:`E(\mathbf x) = \sum_i e_i`, eq. (eq-attr-total-energy).

        Shapes:
            x: ``(B, N, d)``.
            returns: ``(B,)``.
        """
        return self.local_energies(x, lam=lam).sum(-1)  # (eq-attr-total-energy)

    def extra_repr(self) -> str:
        return f"num_tokens={self.num_tokens}, dim={self.dim}, lam={self.lam:g}, gamma={self.gamma:g}"
