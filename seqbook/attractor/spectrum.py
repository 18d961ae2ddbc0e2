r"""The bare self-attention without attention: a projected power iteration, and its spectrum.

Shape letters: ``B`` configurations, ``N`` tokens, ``d`` the spin dimension, ``K``
modes.

When the attention is uniform, :math:`\alpha_{i\leftarrow j} = 1/(N-1)` (the limit
:math:`\lambda \to 0`, and nearly what a trained model does at :math:`\lambda = 1`),
the update of the bare self-attention is linear up to the normalisation of every spin:

.. math::
    \mathbf x \leftarrow \operatorname{normalize}_i\bigl(A\,\mathbf x\bigr), \qquad
    A = \gamma I + \frac{1}{N-1} M, \qquad M_{(i,a),(j,b)} = (J_{ij})_{ab},

a power iteration of the :math:`Nd \times Nd` matrix :math:`A`, projected back onto
the spheres after every step. Its eigenvalues of largest modulus tell where it goes
(the leading eigenvector) and how fast: the other modes shrink relative to the first
by :math:`|\mu_2|/|\mu_1|` per step, a time scale :math:`1/\ln(|\mu_1|/|\mu_2|)`.
"""

from __future__ import annotations

import math
from typing import TypeAlias

import torch
from jaxtyping import Complex, Float, Shaped
from torch import Tensor

from seqbook._checks import check_int, check_positive_int
from seqbook.attractor.bare import BareSelfAttention

__all__ = [
    "coupling_matrix",
    "effective_partners",
    "forgetting_time",
    "leading_modes",
    "mode_spins",
    "power_operator",
]

# A square matrix of the model's N d numbers, and rows of attention weights.
Operator: TypeAlias = Float[
    Tensor, "{model.num_tokens*model.dim} {model.num_tokens*model.dim}"
]
AttentionRows: TypeAlias = Float[Tensor, "*batch N"]


def coupling_matrix(model: BareSelfAttention) -> Operator:
    r"""The couplings as one :math:`Nd \times Nd` matrix, :math:`M_{(i,a),(j,b)} = (J_{ij})_{ab}`.

    ``M @ x.flatten()`` is :math:`\sum_j J_{ij}\mathbf x_j` for every token :math:`i`.

    Shapes:
        returns: ``(N * d, N * d)``.

    Example:
        >>> model = BareSelfAttention(3, 2)
        >>> x = torch.randn(3, 2)
        >>> field = torch.einsum("ijde,je->id", model.J, x)
        >>> torch.allclose(coupling_matrix(model) @ x.flatten(), field.flatten())
        True
    """
    N, d = model.num_tokens, model.dim
    return model.J.detach().permute(0, 2, 1, 3).reshape(N * d, N * d)  # (N d, N d)


def power_operator(model: BareSelfAttention) -> Operator:
    r"""The linear map of one step at uniform attention, :math:`A = \gamma I + M/(N-1)`,
    eq. (eq-attr-power).

    Shapes:
        returns: ``(N * d, N * d)``.

    Example:
        >>> model = BareSelfAttention(4, 2, lam=0.0)
        >>> x = torch.nn.functional.normalize(torch.randn(1, 4, 2), dim=-1)
        >>> y = (power_operator(model) @ x.flatten()).view(1, 4, 2)
        >>> torch.allclose(model.step(x), torch.nn.functional.normalize(y, dim=-1))
        True
    """
    M = coupling_matrix(model)  # (N d, N d)
    eye = torch.eye(M.shape[0], dtype=M.dtype, device=M.device)
    return model.gamma * eye + M / (model.num_tokens - 1)  # (eq-attr-power)


def effective_partners(alpha: AttentionRows) -> Float[Tensor, "*batch"]:
    r"""How many partners a spin listens to: :math:`n_i = 1 / \sum_j \alpha_{i\leftarrow j}^2`,
    eq. (eq-attr-partners).

    :math:`N - 1` for a uniform attention over all others, 1 for a one-hot one.

    Shapes:
        alpha: ``(..., N, N)``, rows summing to 1.
        returns: ``(..., N)``.

    Example:
        >>> effective_partners(torch.tensor([[0.0, 0.5, 0.5], [0.0, 1.0, 0.0]]))
        tensor([2., 1.])
    """
    if alpha.numel() and alpha.min() < 0:
        raise ValueError("alpha must hold values in [0, inf] (weights), got "
                         f"{alpha.min().item():.4g}")
    rows = alpha.sum(-1)
    if alpha.numel() and not torch.allclose(rows, rows.new_ones(()), atol=1e-4):
        raise ValueError("alpha must hold weights whose rows sum to 1 (an "
                         f"attention matrix), got shape {tuple(alpha.shape)}")
    return 1.0 / (alpha**2).sum(-1)  # (eq-attr-partners)


def leading_modes(
    model: BareSelfAttention, k: int = 2, vectors: int | None = None
) -> tuple[Complex[Tensor, " {k}"], Complex[Tensor, "V {model.num_tokens} {model.dim}"]]:
    r"""The ``k`` eigenvalues of largest modulus of :math:`A` (eq. (eq-attr-power)) and their
    eigenvectors.

    Computed in float64 (the matrix is not symmetric: eigenvalues may come in complex
    conjugate pairs).

    Args:
        model: the bare model whose :math:`A` is decomposed.
        k: how many eigenvalues.
        vectors: how many eigenvectors, those of the leading eigenvalues (default: all
            ``k``). Fewer skip the eigenvectors of the full decomposition: the
            eigenvalues come from ``torch.linalg.eigvals``, and each eigenvector
            asked for from inverse iteration, :math:`\mathbf v \leftarrow (A - \mu
            I)^{-1}\mathbf v` with its eigenvalue :math:`\mu` as the shift (the same
            eigenvectors, up to rounding and their arbitrary phase).

    Shapes:
        returns: eigenvalues ``(K,)`` and eigenvectors ``(vectors, N, d)``, both complex,
        by decreasing modulus.

    Example:
        >>> model = BareSelfAttention(4, 2, generator=torch.Generator().manual_seed(0))
        >>> mu, v = leading_modes(model, k=2)
        >>> tuple(v.shape), bool(mu[0].abs() >= mu[1].abs())
        ((2, 4, 2), True)
        >>> mu1, v1 = leading_modes(model, k=2, vectors=1)
        >>> torch.allclose(mu1, mu), tuple(v1.shape)
        (True, (1, 4, 2))
    """
    N, d = model.num_tokens, model.dim
    check_positive_int("k", k)
    if k > N * d:
        raise ValueError(f"k must be <= N d = {N * d}, got {k}")
    if vectors is not None and check_int("vectors", vectors, min_value=0) > k:
        raise ValueError(f"vectors must be <= k = {k}, got {vectors}")
    A = power_operator(model).double()
    if vectors is None or vectors == k:
        mu, V = torch.linalg.eig(A)
        order = mu.abs().argsort(descending=True)[:k]
        return mu[order], V[:, order].T.reshape(k, N, d)  # (K, N, d)
    mu = torch.linalg.eigvals(A)
    mu = mu[mu.abs().argsort(descending=True)[:k]]
    V = [_eigenvector(A, m) for m in mu[:vectors]]
    return mu, torch.stack(V).reshape(vectors, N, d) if V else A.new_zeros(
        0, N, d, dtype=mu.dtype)


def _eigenvector(A: torch.Tensor, mu: torch.Tensor) -> torch.Tensor:
    """The unit eigenvector of ``A`` for its eigenvalue ``mu``, by inverse iteration."""
    real = bool(mu.imag == 0)
    M = A if real else A.to(mu.dtype)
    shift = (mu.real if real else mu) * (1 + 1e-10)  # not exactly singular
    eye = torch.eye(len(A), dtype=M.dtype)
    lu = torch.linalg.lu_factor(M - shift * eye)
    generator = torch.Generator().manual_seed(0)
    v = torch.randn(len(A), 1, dtype=torch.float64, generator=generator).to(M.dtype)
    for _ in range(3):  # each step shrinks the other modes by about 1e-10
        v = torch.linalg.lu_solve(*lu, v)
        v = v / torch.linalg.vector_norm(v)
    return v[:, 0].to(mu.dtype)


def mode_spins(
    v: Shaped[Tensor, "N d"], reference: Float[Tensor, "N d"]
) -> Float[Tensor, "N d"]:
    r"""A real eigenvector as a configuration of unit spins, with the sign that agrees with
    ``reference``.

    Eigenvectors have no sign; :math:`\mathbf v` and :math:`-\mathbf v` are the same
    mode. The sign is chosen so that :math:`\sum_i \mathbf v_i\cdot
    \mathbf r_i > 0`, then every token is normalised.

    Shapes:
        v: ``(N, d)`` (real or complex with zero imaginary part); reference: ``(N, d)``.
        returns: ``(N, d)``, unit vectors, in the reference's dtype.

    Example:
        >>> v = torch.tensor([[0.0, -2.0], [-1.0, 0.0]])
        >>> mode_spins(v, torch.ones(2, 2))
        tensor([[-0., 1.],
                [1., -0.]])
    """
    if v.is_complex():
        if v.imag.abs().max() > 1e-8 * max(v.abs().max().item(), 1e-30):
            raise ValueError("v must be a real eigenvector (its eigenvalue is complex)")
        v = v.real
    v = v.to(reference.dtype)
    if (v * reference).sum() < 0:
        v = -v
    return torch.nn.functional.normalize(v, dim=-1)


def forgetting_time(eigenvalues: Shaped[Tensor, " K"]) -> float:
    r"""The time scale :math:`\tau = 1/\ln(|\mu_1|/|\mu_2|)` of a power iteration,
    eq. (eq-attr-tau).

    The distance to the leading mode shrinks like :math:`e^{-t/\tau}`.

    Shapes:
        eigenvalues: ``(K,)`` with ``K >= 2``, by decreasing modulus.

    Example:
        >>> round(forgetting_time(torch.tensor([2.0, 1.0])), 4)
        1.4427
    """
    check_int("len(eigenvalues)", len(eigenvalues), min_value=2)  # K >= 2
    first, second = eigenvalues.abs()[:2].tolist()
    if not first > second > 0:
        raise ValueError("eigenvalues must be sorted by decreasing modulus: "
                         f"|mu_1| > |mu_2| > 0, got moduli {first:.6g} and "
                         f"{second:.6g}")
    return 1.0 / math.log(first / second)  # (eq-attr-tau)
