r"""Storage capacity: how many random patterns a memory retrieves, vs how many it stores.

Shapes: ``T`` independent trials (memories), ``N`` stored patterns, ``d`` spins,
``Q`` queries per trial (the first ``Q`` stored patterns, possibly corrupted).

A stored pattern counts as *retrieved* when the dynamics started from it (or from a
corrupted copy) end within ``tolerance`` of it: at most a fraction ``tolerance`` of
the spins differ. The tolerance matters for the classical network: below its
capacity :math:`\alpha_c \approx 0.138\,d` (Amit, Gutfreund & Sompolinsky) the
attractor next to each pattern differs from it in a few percent of the spins at most
(about 1.6 % at :math:`\alpha_c`), and above it the attractor vanishes and the
dynamics run far away; a tolerance of a few percent separates the two cleanly,
whereas demanding an exact fixed point measures a different, much smaller capacity
(of order :math:`d / (2\ln d)`).

All trials run at once: the memories are stacked along a leading dimension.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeAlias

import torch
from jaxtyping import Float, Int, Real, Shaped
from torch import Tensor

from seqbook._checks import (
    check_beta,
    check_choice,
    check_int,
    check_patterns,
    check_positive_int,
    check_real,
)
from seqbook.hopfield.classical import _order, async_relax, hebbian_weights
from seqbook.hopfield.dense import dense_async_sweep
from seqbook.hopfield.modern import modern_update

__all__ = [
    "MEMORIES",
    "CapacityCurve",
    "random_patterns",
    "corrupt",
    "bit_errors",
    "retrieval_errors",
    "retrieved_fraction",
    "capacity_curve",
]

MEMORIES = ("classical", "poly", "exp", "modern")


# Stored patterns, one memory (N, d) or T memories side by side (T, N, d)
Patterns: TypeAlias = Real[Tensor, "N d"] | Real[Tensor, "T N d"]


def _check_sizes(name: str, value: Sequence[int]) -> list[int]:
    """``value`` as a non-empty list of numbers of stored patterns (positive ints)."""
    sizes = [check_positive_int(name, n) for n in value]
    if not sizes:
        raise ValueError(f"{name} must list at least one number of patterns")
    return sizes


def random_patterns(
    num_patterns: int,
    dim: int,
    num_trials: int | None = None,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
) -> Float[Tensor, "N d"] | Float[Tensor, "T N d"]:
    r"""Unbiased random patterns: every spin is :math:`\pm 1` with probability 1/2.

    Shapes:
        returns: ``(N, d)``, or ``(T, N, d)`` with ``num_trials``.

    Example:
        >>> x = random_patterns(3, 8, generator=torch.Generator().manual_seed(0))
        >>> tuple(x.shape), sorted(x.unique().tolist())
        ((3, 8), [-1.0, 1.0])
    """
    check_positive_int("num_patterns", num_patterns), check_positive_int("dim", dim)
    if num_trials is not None:
        check_positive_int("num_trials", num_trials)
    N = num_patterns
    d = dim
    shape = (N, d) if num_trials is None else (num_trials, N, d)
    bits = torch.randint(0, 2, shape, generator=generator)
    return (2.0 * bits - 1.0).to(device or "cpu")


def corrupt(
    patterns: Patterns, fraction: float, generator: torch.Generator | None = None
) -> Float[Tensor, "*T N d"]:
    r"""Flip exactly ``round(fraction * d)`` randomly chosen spins of every pattern.

    Shapes:
        patterns: ``(..., d)``.
        returns: ``(..., d)``.

    Example:
        >>> x = torch.ones(2, 10)
        >>> (corrupt(x, 0.3, torch.Generator().manual_seed(0)) == -1).sum(-1).tolist()
        [3, 3]
    """
    patterns = check_patterns("patterns", patterns, binary=True, ndim=(2, 3))
    check_real("fraction", fraction, min_value=0.0, max_value=1.0)
    d = patterns.shape[-1]
    k = round(fraction * d)
    keys = torch.rand(patterns.shape, generator=generator).to(patterns.device)
    flip = keys.argsort(-1)[..., :k]  # (..., k) a random subset of k spins per row
    signs = torch.ones_like(patterns).scatter(-1, flip, -1.0)
    return patterns * signs


def bit_errors(
    states: Shaped[Tensor, "*#batch d"], patterns: Shaped[Tensor, "*#batch d"]
) -> Float[Tensor, "*batch"]:
    r"""Fraction of components whose sign differs from the pattern's.

    Continuous states are compared through their sign.

    Shapes:
        states: ``(..., d)``.
        patterns: ``(..., d)`` (broadcast against ``states``).
        returns: ``(...)``.

    Example:
        >>> bit_errors(torch.tensor([1., -1., 0.5, -2.]), torch.tensor([1., 1., 1., -1.])).item()
        0.25
    """
    return (torch.sign(states) != torch.sign(patterns)).float().mean(-1)


def _run(memory: str, queries: Tensor, X: Tensor, *, max_sweeps: int, degree: int,
         beta: float, generator: torch.Generator | None) -> Tensor:
    """Final states of ``memory`` (stored patterns X, (T, N, d)) started at ``queries``."""
    d = X.shape[-1]
    if memory == "modern":
        xi = queries
        for _ in range(max_sweeps):
            new = modern_update(xi, X, beta)  # (T, Q, d)
            if torch.allclose(new, xi, atol=1e-6, rtol=0.0):
                return new
            xi = new
        return xi
    if memory == "classical":  # max_sweeps * d single-spin updates at most
        W = hebbian_weights(X)  # (T, d, d)
        U = torch.zeros(X.shape[0], d, dtype=X.dtype, device=X.device)  # (T, d)
        return async_relax(queries, W, U, generator, max_sweeps * d)[0]
    final = queries.clone()
    for t in range(X.shape[0]):  # one memory at a time: settled states leave the batch
        moving = torch.arange(queries.shape[1], device=X.device)
        for _ in range(max_sweeps):
            old = final[t, moving]  # (A, d)
            order = _order(d, generator, X.device)
            new = dense_async_sweep(old, X[t], memory, degree, order)
            final[t, moving] = new
            moving = moving[(new != old).any(-1)]
            if moving.numel() == 0:
                break
    return final


def retrieval_errors(
    memory: str,
    patterns: Patterns,
    *,
    corruption: float = 0.0,
    num_queries: int | None = None,
    max_sweeps: int = 30,
    degree: int = 3,
    beta: float = 1.0,
    generator: torch.Generator | None = None,
) -> Float[Tensor, "T Q"] | Float[Tensor, " Q"]:
    r"""Store ``patterns`` in ``memory``, query it, and return the final bit errors.

    Each query is a stored pattern with a fraction ``corruption`` of its spins flipped;
    the memory's dynamics run to a fixed point (asynchronous updates for the binary
    memories, full updates for ``"modern"``) or for at most ``max_sweeps`` sweeps; the
    result is the fraction of spins (signs) of the final state that differ from the
    stored pattern.

    Args:
        memory: ``"classical"``, ``"poly"`` (degree ``degree``), ``"exp"`` or ``"modern"``
            (continuous, inverse temperature ``beta``).
        patterns: stored patterns in {-1, +1}, ``(N, d)`` or ``(T, N, d)``.
        corruption: fraction of spins flipped in each query, in [0, 1].
        num_queries: query only the first ``Q`` patterns of each trial (default all).

    Shapes:
        patterns: ``(T, N, d)`` or ``(N, d)``.
        returns: ``(T, Q)`` or ``(Q,)``.
    """
    check_choice("memory", memory, MEMORIES)
    X = check_patterns("patterns", patterns, binary=True, ndim=(2, 3))
    check_real("corruption", corruption, min_value=0.0, max_value=1.0)
    check_positive_int("max_sweeps", max_sweeps), check_int("degree", degree, min_value=2)
    check_beta("beta", beta)
    single = X.dim() == 2
    if single:
        X = X.unsqueeze(0)  # (1, N, d)
    N = X.shape[1]
    Q = N if num_queries is None else check_int("num_queries", num_queries, min_value=1,
                                                 max_value=N)
    targets = X[:, :Q]  # (T, Q, d)
    queries = corrupt(targets, corruption, generator) if corruption > 0 else targets
    final = _run(
        memory, queries, X, max_sweeps=max_sweeps, degree=degree, beta=beta, generator=generator
    )
    errors = bit_errors(final, targets)  # (T, Q)
    return errors[0] if single else errors


def retrieved_fraction(
    memory: str,
    patterns: Patterns,
    *,
    tolerance: float = 0.05,
    corruption: float = 0.0,
    num_queries: int | None = None,
    max_sweeps: int = 30,
    degree: int = 3,
    beta: float = 1.0,
    generator: torch.Generator | None = None,
) -> Float[Tensor, " T"] | Float[Tensor, ""]:
    r"""Fraction of the queried patterns retrieved: final bit error at most ``tolerance``.

    The other arguments go to :func:`retrieval_errors` (``corruption``, ``num_queries``,
    ``max_sweeps``, ``degree``, ``beta``, ``generator``), which checks them.

    Shapes:
        patterns: ``(T, N, d)`` or ``(N, d)``.
        returns: ``(T,)`` or ``()``.

    Example:
        >>> X = random_patterns(5, 100, num_trials=2, generator=torch.Generator().manual_seed(0))
        >>> retrieved_fraction("classical", X, corruption=0.1).tolist()
        [1.0, 1.0]
    """
    check_real("tolerance", tolerance, min_value=0.0, max_value=1.0)
    errors = retrieval_errors(
        memory, patterns, corruption=corruption, num_queries=num_queries,
        max_sweeps=max_sweeps, degree=degree, beta=beta, generator=generator,
    )
    return (errors <= tolerance).float().mean(-1)


@dataclass
class CapacityCurve:
    """Final bit errors of every query, for each number of stored patterns."""

    memory: str
    dim: int
    num_patterns: Int[Tensor, " L"]  # numbers of stored patterns tried
    errors: Float[Tensor, "L T Q"]  # final bit error of every query
    tolerance: float = 0.05  # largest bit error that counts as retrieved

    @property
    def load(self) -> Tensor:
        r"""The load :math:`\alpha = N / d` of every point, shape ``(L,)``."""
        return self.num_patterns.double() / self.dim

    @property
    def fraction(self) -> Tensor:
        """Fraction retrieved per point and trial, shape ``(L, T)``."""
        return (self.errors <= self.tolerance).float().mean(-1)

    @property
    def mean(self) -> Tensor:
        """Fraction retrieved averaged over trials and queries, shape ``(L,)``."""
        return self.fraction.mean(-1)

    def with_tolerance(self, tolerance: float) -> CapacityCurve:
        """The same measurements judged with another tolerance."""
        check_real("tolerance", tolerance, min_value=0.0, max_value=1.0)
        return CapacityCurve(self.memory, self.dim, self.num_patterns, self.errors, tolerance)

    def capacity(self, level: float = 0.5, method: str = "interpolate") -> float:
        r"""Number of patterns :math:`N` at which the fraction retrieved falls to ``level``.

        ``"interpolate"``: linear interpolation between the two grid points around the
        first drop below ``level`` (``math.inf`` if it never drops, ``0`` if the first
        point is already below). ``"logistic"``: fit
        :math:`\operatorname{logit} f = a + bN` to every point with :math:`0.02 < f < 0.98`
        (least squares) and solve for ``level``; less noisy, as it uses all points of
        the transition.
        """
        check_real("level", level, min_value=0.0, max_value=1.0)
        check_choice("method", method, ("interpolate", "logistic"))
        mean = self.mean.double()
        n = self.num_patterns.double()
        if method == "logistic":
            inside = (mean > 0.02) & (mean < 0.98)
            if inside.sum() < 2:
                raise ValueError("a logistic fit needs at least two points with "
                                 "0.02 < fraction < 0.98")
            f, x = mean[inside], n[inside]
            y = torch.log(f / (1 - f))
            A = torch.stack([torch.ones_like(x), x], dim=1)  # (L', 2)
            a, b = torch.linalg.lstsq(A, y.unsqueeze(1)).solution.squeeze(1).tolist()
            return (math.log(level / (1 - level)) - a) / b
        means, sizes = mean.tolist(), n.tolist()
        for k, m in enumerate(means):
            if m < level:
                if k == 0:
                    return 0.0
                m0, n0 = means[k - 1], sizes[k - 1]
                return n0 + (m0 - level) / (m0 - m) * (sizes[k] - n0)
        return math.inf


def capacity_curve(
    memory: str,
    dim: int,
    num_patterns: Sequence[int],
    *,
    num_trials: int = 10,
    tolerance: float = 0.05,
    generator: torch.Generator | None = None,
    device: torch.device | str | None = None,
    corruption: float = 0.0,
    num_queries: int | None = None,
    max_sweeps: int = 30,
    degree: int = 3,
    beta: float = 1.0,
) -> CapacityCurve:
    r"""Measure :func:`retrieval_errors` for each number of stored patterns.

    Fresh random patterns are drawn for every point and trial; ``corruption``,
    ``max_sweeps``, ``degree`` and ``beta`` go to :func:`retrieval_errors`. The
    first ``num_queries`` patterns of every trial are queried (default: as many as the
    smallest number of patterns in ``num_patterns``).

    Shapes:
        returns: a ``CapacityCurve`` whose ``errors`` have shape ``(L, num_trials, Q)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> curve = capacity_curve("classical", 50, [2, 40], num_trials=3, generator=g)
        >>> curve.mean.tolist()[0], curve.capacity() < 40
        (1.0, True)
    """
    check_choice("memory", memory, MEMORIES), check_positive_int("dim", dim)
    sizes = _check_sizes("num_patterns", num_patterns)
    check_positive_int("num_trials", num_trials)
    check_real("tolerance", tolerance, min_value=0.0, max_value=1.0)
    d = dim
    Q = min(sizes) if num_queries is None else check_positive_int("num_queries", num_queries)
    if Q > min(sizes):
        raise ValueError(f"num_queries must be at most the smallest number of patterns "
                         f"({min(sizes)}), got {Q}")
    errors = []
    for N in sizes:
        X = random_patterns(N, d, num_trials=num_trials, generator=generator, device=device)
        errors.append(retrieval_errors(
            memory, X, corruption=corruption, num_queries=Q, max_sweeps=max_sweeps,
            degree=degree, beta=beta, generator=generator,
        ))
    return CapacityCurve(memory, d, torch.tensor(sizes), torch.stack(errors), tolerance)
