r"""The classical network's capacity at large d: the offline sweep of the chapter.

The chapter "Hopfield networks" measures where the asynchronous dynamics started at a
stored pattern stops returning it, for networks of up to 6,400 spins; that takes longer
than a chapter may run, so the counts are computed here and committed as a small table,
``capacity_sweep.json`` beside this file, which the chapter loads (with a short live run
at small ``d`` that must agree with it). The table's defaults (``NETWORKS``, ``QUERIES``,
``plan_loads``, ``RELAX``) make it with::

    nice -n 15 python -m seqbook.hopfield.capacity_sweep --threads 1

It was made in three runs, which the provenance sidecar lists: ``d`` = 100 to 800 as one
(about 3 CPU-minutes), then ``--dims 1600 3200 --networks 50 12`` (447 and 377
CPU-seconds) and ``--dims 6400 --networks 6 --queries 50 --loads 0.135 0.14 0.145 0.15
0.155 0.16`` (280 CPU-seconds), on one thread of a busy two-core machine.
``--dims 100 200`` runs some dimensions only (their entries replace those in the table),
``--networks``, ``--queries`` and ``--loads`` override the plan, ``--smoke`` runs a tiny
sweep (a test that the script runs), ``--help`` lists the options.

The measurement, for one dimension ``d``: draw ``num_networks`` networks of random
unbiased patterns; in each, store the patterns one load after the other (the ``N``
patterns of a load are the first ``N`` of one long list, so a network's weights grow
by Hebbian increments), start the asynchronous dynamics
(:func:`~seqbook.hopfield.async_relax`, or from ``d = 1600`` on the same law with fewer
random numbers, ``relax="counts"``) at each of the first ``Q`` patterns and count, for
every tolerance, the patterns whose fixed point differs from them in at most that
fraction of spins.

The analysis helpers (:func:`logistic_crossing`, :func:`bootstrap_crossings`,
:func:`fit_finite_size`) turn the counts into crossing loads with bootstrap intervals
over networks, and into a finite-size extrapolation with a fitted exponent.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import check_choice, check_positive_int, check_real
from seqbook.hopfield.capacity import _check_sizes, bit_errors, random_patterns
from seqbook.hopfield.classical import async_relax
from seqbook.provenance import record
from seqbook.utils import seeded_generator, shifted_seed

__all__ = [
    "SWEEP",
    "TOLERANCES",
    "CapacitySweep",
    "bootstrap_crossings",
    "fit_finite_size",
    "load_sweep",
    "logistic_crossing",
    "main",
    "nested_retrieval_errors",
    "write_sweep",
    "sweep_crossing",
]

SWEEP = Path(__file__).with_name("capacity_sweep.json")
TOLERANCES = (0.025, 0.05, 0.10)  # largest fraction of wrong spins that counts as retrieved

# The committed sweep: networks per dimension and the loads N / d tried.
NETWORKS = {100: 400, 200: 200, 400: 100, 800: 24, 1600: 50, 3200: 12, 6400: 6}
QUERIES = {6400: 50}  # patterns queried per network where not 100 (at most a tenth of d)
WIDE_LOADS = [round(0.10 + 0.01 * k, 3) for k in range(17)]  # 0.10 ... 0.26
NARROW_LOADS = [round(0.13 + 0.005 * k, 3) for k in range(11)]  # 0.13 ... 0.18
CLOSE_LOADS = [round(0.135 + 0.005 * k, 3) for k in range(8)]  # 0.135 ... 0.17 (0.16 at 6400)
# How the dynamics picks the spin to flip: "keys" (async_relax: one random key per spin
# when the quick draws miss) for the rows made first, "counts" (the same law, one random
# number per state) for the large networks, where the keys cost most of the time.
RELAX = {100: "keys", 200: "keys", 400: "keys", 800: "keys"}
# a dimension d of the table (a key of its dicts), also as read from a NumPy array
Dim: TypeAlias = int | np.integer


def plan_loads(dim: int) -> list[float]:
    """The loads of the committed sweep: wide for small ``d``, narrow where the transition is
    sharp, and closer still for the largest networks (the loads past the transition cost
    the most)."""
    if dim <= 1600:
        return WIDE_LOADS if dim <= 800 else NARROW_LOADS
    return CLOSE_LOADS if dim <= 3200 else CLOSE_LOADS[:6]


def _relax_counts(
    xi: Float[Tensor, "T B d"],
    W: Float[Tensor, "T d d"],
    generator: torch.Generator | None,
    max_flips: int,
) -> Float[Tensor, "T B d"]:
    """:func:`~seqbook.hopfield.async_relax` with zero thresholds, cheaper where it scans.

    The same law: every step flips, in each state, one spin chosen uniformly among its
    unstable spins, first by eight uniform draws (the first unstable one), and for a state
    whose draws all miss, by its rank among the unstable spins, one uniform number per
    state instead of a random key per spin (most of ``async_relax``'s time at large ``d``).
    The random numbers drawn differ, so the runs differ from ``async_relax``'s run by run.
    """
    T, B, d = xi.shape
    out = xi.clone().reshape(T * B, d)  # (T * B, d)
    trial = torch.arange(T).repeat_interleave(B)  # (A,) the network of each state
    ids = torch.arange(T * B)  # (A,) the states still moving
    x = out.clone()  # (A, d)
    h = (xi @ W).reshape(T * B, d)  # (A, d) local fields (W symmetric)
    for _ in range(max_flips):
        A = ids.numel()
        if A == 0:
            break
        draws = torch.randint(0, d, (A, 8), generator=generator)  # (A, 8) candidate spins
        unstable = h.gather(1, draws) * x.gather(1, draws) < 0  # (A, 8)
        i = draws.gather(1, unstable.to(torch.uint8).argmax(1, keepdim=True)).squeeze(1)
        moving = torch.ones(A, dtype=torch.bool)
        missed = (~unstable.any(1)).nonzero().squeeze(1)  # states to scan in full
        if missed.numel():
            all_unstable = h[missed] * x[missed] < 0  # (m, d)
            count = all_unstable.sum(-1)  # (m,)
            u = torch.rand(len(missed), generator=generator, dtype=torch.float64)
            rank = torch.minimum((u * count).long(), (count - 1).clamp(min=0))  # uniform
            # the (rank + 1)-th unstable spin: the first whose running count exceeds rank
            i[missed] = (all_unstable.cumsum(-1) > rank.unsqueeze(1)).to(torch.uint8).argmax(-1)
            moving[missed] = count > 0  # none unstable: a fixed point
        rows = torch.arange(A)
        delta = -2.0 * x[rows, i] * moving  # (A,) the flip (none for settled states)
        x[rows, i] += delta  # (eq-hopfield-rule)
        h.addcmul_(delta.unsqueeze(-1), W[trial, i])  # (A, d) rank-one update of the fields
        if not moving.all():  # write back the settled states, drop them
            settled = ~moving
            out[ids[settled]] = x[settled]
            x, h, ids, trial = x[moving], h[moving], ids[moving], trial[moving]
    out[ids] = x  # states stopped by max_flips
    return out.reshape(T, B, d)


def nested_retrieval_errors(
    dim: int,
    num_patterns: Sequence[int],
    num_networks: int,
    num_queries: int,
    generator: torch.Generator | None = None,
    batch: int = 1,
    relax: str = "keys",
) -> Float[Tensor, "{num_networks} L {num_queries}"]:
    r"""Final bit errors of the first ``Q`` patterns, started at themselves, at every load.

    Each network stores the first ``N`` patterns of one list of ``max(num_patterns)``
    random patterns, for every ``N`` in ``num_patterns`` (increasing): the weights
    grow by Hebbian increments, and the same ``Q`` patterns are queried at every load.
    ``batch`` networks run side by side. ``relax`` picks the dynamics' sampler:
    ``"keys"`` runs :func:`~seqbook.hopfield.async_relax`, ``"counts"`` the same law with
    fewer random numbers (faster at large ``d``; other draws, so other runs).

    Shapes:
        returns: ``(num_networks, L, Q)`` with ``L = len(num_patterns)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> errors = nested_retrieval_errors(100, [5, 40], 3, 5, g)
        >>> tuple(errors.shape), bool((errors[:, 0] == 0).all())
        ((3, 2, 5), True)
    """
    check_positive_int("dim", dim), check_positive_int("num_networks", num_networks)
    check_positive_int("num_queries", num_queries), check_positive_int("batch", batch)
    check_choice("relax", relax, ("keys", "counts"))
    d = dim
    sizes = _check_sizes("num_patterns", num_patterns)
    if sizes != sorted(set(sizes)):
        raise ValueError(f"num_patterns must be a non-empty increasing list, got {sizes}")
    T = num_networks
    Q = num_queries
    if Q > sizes[0]:
        raise ValueError(f"num_queries must be at most the smallest number of patterns "
                         f"({sizes[0]}), got {Q}")
    out = torch.empty(T, len(sizes), Q)
    for first in range(0, T, batch):
        b = min(batch, T - first)
        X = random_patterns(sizes[-1], d, num_trials=b, generator=generator)  # (b, N_max, d)
        W = torch.zeros(b, d, d)
        stored = 0
        for k, N in enumerate(sizes):
            W += X[:, stored:N].transpose(1, 2) @ X[:, stored:N]  # Hebbian increments  (b, d, d)
            stored = N
            W_N = W.clone()
            W_N.diagonal(dim1=1, dim2=2).zero_()  # (eq-hopfield-hebb): no self-coupling
            if relax == "keys":
                final, _ = async_relax(X[:, :Q], W_N, torch.zeros(b, d), generator, 10 * d)
            else:
                final = _relax_counts(X[:, :Q], W_N, generator, 10 * d)  # (b, Q, d)
            out[first : first + b, k] = bit_errors(final, X[:, :Q])
    return out


@dataclass
class CapacitySweep:
    """The counts of a sweep: for every dimension, load and network, the patterns retrieved.

    For a dimension ``d`` with ``L`` loads: ``loads[d]`` ``(L,)`` the loads ``N / d``;
    ``queries[d]`` the patterns queried per network (the same at every load);
    ``retrieved[d]`` ``(networks, L)`` the patterns retrieved (at most 5% of their spins
    wrong) per network; ``by_tolerance[d]`` ``(len(TOLERANCES), L)`` the totals over
    the networks for every tolerance; ``between[d]`` ``(L,)`` the totals of patterns
    that ended with between 5% and 15% of their spins wrong; ``seconds[d]`` the CPU
    seconds the dimension took.
    """

    loads: dict[int, np.ndarray]
    queries: dict[int, int]
    retrieved: dict[int, np.ndarray]
    by_tolerance: dict[int, np.ndarray]
    between: dict[int, np.ndarray]
    seconds: dict[int, float]

    @property
    def dims(self) -> list[int]:
        """The dimensions measured, increasing."""
        return sorted(self.loads)

    def networks(self, dim: Dim) -> int:
        """The number of networks of one dimension."""
        return self.retrieved[int(dim)].shape[0]

    def fraction(self, dim: Dim, tolerance: float = 0.05) -> np.ndarray:
        """Fraction retrieved at every load, pooled over networks, shape ``(L,)``."""
        d = int(dim)
        totals = self.by_tolerance[d][TOLERANCES.index(tolerance)]
        return totals / (self.networks(d) * self.queries[d])


def _entry(loads: Sequence[float], errors: torch.Tensor, seconds: float) -> dict:
    """The table's entry for one dimension, from the final bit errors ``(networks, L, Q)``."""
    return {
        "loads": [float(a) for a in loads],
        "queries": int(errors.shape[-1]),
        "cpu_seconds": round(seconds, 1),
        "retrieved": (errors <= 0.05).sum(-1).tolist(),  # (networks, L) per network
        "by_tolerance": {f"{t:g}": (errors <= t).sum((0, 2)).tolist() for t in TOLERANCES},
        "between_5_15": ((errors > 0.05) & (errors < 0.15)).sum((0, 2)).tolist(),
    }


def load_sweep(path: Path | str = SWEEP) -> CapacitySweep:
    """Read a sweep table (by default the committed one) into a :class:`CapacitySweep`.

    Example:
        >>> sweep = load_sweep()
        >>> sweep.dims[0], bool(sweep.fraction(100)[0] > 0.9)
        (100, True)
    """
    table = json.loads(Path(path).read_text())
    if not table.get("dims"):
        raise ValueError(f"path must name a sweep table with at least one dimension, got {path}")
    loads, queries, retrieved, by_tolerance, between, seconds = {}, {}, {}, {}, {}, {}
    for key, entry in table["dims"].items():
        d = int(key)
        loads[d] = np.array(entry["loads"])
        queries[d] = int(entry["queries"])
        retrieved[d] = np.array(entry["retrieved"], dtype=np.int64)
        by_tolerance[d] = np.array(
            [entry["by_tolerance"][f"{t:g}"] for t in TOLERANCES], dtype=np.int64
        )
        between[d] = np.array(entry["between_5_15"], dtype=np.int64)
        seconds[d] = float(entry["cpu_seconds"])
    return CapacitySweep(loads, queries, retrieved, by_tolerance, between, seconds)


def logistic_crossing(
    loads: np.ndarray,
    retrieved: np.ndarray,
    queries: np.ndarray | int | np.integer,
    level: float = 0.5,
) -> float:
    r"""The load where a logistic fit of the fraction retrieved crosses ``level``.

    Fits :math:`\operatorname{logit} f(\alpha) = a + b\,\alpha` by binomial maximum
    likelihood (iteratively reweighted least squares) to ``retrieved`` successes out of
    ``queries`` at each load, and solves :math:`f(\alpha) = \text{level}`.

    Shapes:
        loads, retrieved: ``(L,)``; queries: ``(L,)`` or a number.

    Example:
        >>> loads = np.array([0.1, 0.2, 0.3])
        >>> round(logistic_crossing(loads, np.array([90, 50, 10]), 100), 3)
        0.2
    """
    check_real("level", level, min_value=0.0, max_value=1.0, strict_min=True)
    x = np.asarray(loads, dtype=float)
    k = np.asarray(retrieved, dtype=float)
    n = np.broadcast_to(np.asarray(queries, dtype=float), x.shape)
    if x.ndim != 1 or k.shape != x.shape or len(x) < 2:
        raise ValueError(f"loads and retrieved must be 1-D of the same length >= 2, "
                         f"got {x.shape} and {k.shape}")
    if np.any(k < 0) or np.any(k > n):
        raise ValueError("retrieved must lie between 0 and queries at every load")
    center = x.mean()
    A = np.stack([np.ones_like(x), x - center], 1)  # (L, 2)
    theta = np.zeros(2)
    for _ in range(100):  # Newton steps on the binomial log-likelihood
        f = 1.0 / (1.0 + np.exp(-(A @ theta)))
        gradient = A.T @ (k - n * f)
        hessian = (A * (n * f * (1 - f))[:, None]).T @ A + 1e-9 * np.eye(2)
        step = np.linalg.solve(hessian, gradient)
        theta = theta + step
        if np.abs(step).max() < 1e-12:
            break
    a, b = theta
    if b >= 0:
        raise ValueError("the fraction retrieved does not fall with the load: no crossing to fit")
    return float(center + (math.log(level / (1 - level)) - a) / b)


def _window(fraction: np.ndarray, low: float = 0.05, high: float = 0.95) -> slice:
    """The loads around the transition: fraction within [low, high], one more on each side."""
    inside = np.nonzero((fraction >= low) & (fraction <= high))[0]
    if len(inside) == 0:
        inside = np.array([int(np.argmin(np.abs(fraction - 0.5)))])
    return slice(max(inside[0] - 1, 0), min(inside[-1] + 2, len(fraction)))


def sweep_crossing(
    sweep: CapacitySweep, dim: Dim, tolerance: float = 0.05, networks: np.ndarray | None = None
) -> float:
    """The crossing load of one dimension, from the loads around its transition.

    ``networks`` (indices, with repetitions) resamples the networks; it needs the 5%
    tolerance, the only one whose counts the table keeps per network.
    """
    d = int(dim)
    window = _window(sweep.fraction(d, tolerance))
    if networks is None:
        totals = sweep.by_tolerance[d][TOLERANCES.index(tolerance)]
        n = sweep.networks(d) * sweep.queries[d]
    elif tolerance != 0.05:
        raise ValueError(f"tolerance must be 0.05 to resample networks, got {tolerance}")
    else:
        totals = sweep.retrieved[d][networks].sum(0)
        n = len(networks) * sweep.queries[d]
    x = np.asarray(sweep.loads[d][window], dtype=np.float64)  # (L,)
    k = np.asarray(totals[window], dtype=float)  # (L,)
    return logistic_crossing(x, k, n)


def bootstrap_crossings(
    sweep: CapacitySweep, dim: Dim, num_resamples: int = 1000, seed: Dim = 0
) -> np.ndarray:
    """Crossing loads of ``num_resamples`` resamples of the networks (with replacement).

    Shapes:
        returns: ``(num_resamples,)``.
    """
    check_positive_int("num_resamples", num_resamples)
    rng = np.random.default_rng(shifted_seed(int(seed)))
    T = sweep.networks(dim)
    return np.array(
        [sweep_crossing(sweep, dim, networks=rng.integers(0, T, T)) for _ in range(num_resamples)]
    )


def fit_finite_size(
    dims: np.ndarray,
    crossings: np.ndarray,
    sigma: np.ndarray | None = None,
    exponent: float | None = None,
) -> tuple[float, float, float, float]:
    r"""Fit :math:`\alpha(d) = \alpha_\infty + c\,d^{-\nu}` to crossing loads.

    With ``exponent`` the law is fixed (:math:`\nu` = ``exponent``) and the fit is a
    weighted linear least squares for :math:`\alpha_\infty, c`; without, :math:`\nu` is
    fitted too, by profiling the weighted squared error over :math:`\nu \in [0.05, 2]`.
    ``sigma`` are the crossings' standard errors (weights :math:`1/\sigma^2`).

    Returns:
        ``(alpha_inf, c, nu, chi2)``, ``chi2`` the weighted sum of squared residuals.

    Example:
        >>> d = np.array([100.0, 400, 1600, 6400])
        >>> [round(v, 4) for v in fit_finite_size(d, 0.14 + 0.5 / d**0.5)[:3]]
        [0.14, 0.5, 0.5]
    """
    if exponent is not None:
        check_real("exponent", exponent, min_value=0.0, strict_min=True)
    d = np.asarray(dims, dtype=float)
    y = np.asarray(crossings, dtype=float)
    w = np.ones_like(y) if sigma is None else 1.0 / np.asarray(sigma, dtype=float) ** 2
    if d.ndim != 1 or y.shape != d.shape or len(d) < 3:
        raise ValueError(f"dims and crossings must be 1-D of the same length >= 3, "
                         f"got {d.shape} and {y.shape}")

    def linear(nu: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Weighted least squares for alpha, c at every exponent of ``nu`` at once."""
        u = d[None, :] ** -nu[:, None]  # (G, n)
        S, Su, Suu = w.sum(), (w * u).sum(1), (w * u * u).sum(1)
        Sy, Suy = (w * y).sum(), (w * u * y).sum(1)
        c = (S * Suy - Su * Sy) / (S * Suu - Su**2)
        alpha = (Sy - c * Su) / S
        chi2 = (w * (y - alpha[:, None] - c[:, None] * u) ** 2).sum(1)
        return alpha, c, chi2

    if exponent is not None:
        nu = np.array([exponent])
    else:
        nu = np.arange(0.05, 2.0001, 0.005)
    alpha, c, chi2 = linear(nu)
    best = int(np.argmin(chi2))
    return float(alpha[best]), float(c[best]), float(nu[best]), float(chi2[best])


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (see ``python -m seqbook.hopfield.capacity_sweep --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.hopfield.capacity_sweep",
        description=(
            "Measure the classical Hopfield network's retrieval at many loads and dimensions."
        ),
    )
    parser.add_argument(
        "--dims", type=int, nargs="+", default=sorted(NETWORKS), help="dimensions d"
    )
    parser.add_argument(
        "--queries", type=int, default=None,
        help="patterns queried per network, at most (default: QUERIES[d], else 100)",
    )
    parser.add_argument(
        "--networks", type=int, nargs="+", default=None,
        help="networks per dimension: one number for all of --dims, or one per dimension "
        "(default: the committed sweep's, NETWORKS; 10 for other dimensions)",
    )
    parser.add_argument(
        "--loads", type=float, nargs="+", default=None,
        help="the loads N / d for every dimension of --dims (default: plan_loads(d))",
    )
    parser.add_argument(
        "--relax", choices=("keys", "counts"), default=None,
        help="the dynamics' sampler (default: RELAX[d], 'counts' for d >= 1600)",
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="the generator of dimension d is seeded seed + d"
    )
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument(
        "--out", type=Path, default=SWEEP, help="the table (rows of other dims are kept)"
    )
    parser.add_argument(
        "--smoke", action="store_true", help="a fast test: d = 50 and 100, 4 networks"
    )
    args = parser.parse_args(argv)
    if args.networks is not None and len(args.networks) not in (1, len(args.dims)):
        parser.error(f"--networks must give one number or one per dimension "
                     f"({len(args.dims)}), got {len(args.networks)}")
    return args


def write_sweep(entries: dict[int, dict], path: Path | str) -> Path:
    """Write the table (entries by dimension) as JSON, keeping the entries of other dimensions."""
    path = Path(path)
    table = json.loads(path.read_text()) if path.exists() else {}
    dims = {int(k): v for k, v in table.get("dims", {}).items()}
    dims.update(entries)
    table = {
        "made_by": "nice -n 10 python -m seqbook.hopfield.capacity_sweep --threads 1",
        "torch": torch.__version__,
        "dims": {str(d): dims[d] for d in sorted(dims)},
    }
    text = json.dumps(table, indent=1)
    # one line per list of numbers: a small file that diffs well
    text = re.sub(
        r"\[\s+([-\d.eE,\s]+?)\s+\]", lambda m: "[" + " ".join(m.group(1).split()) + "]", text
    )
    path.write_text(text + "\n")
    return path


def main(argv: Sequence[str] | None = None) -> Path:
    """Run the sweep for the chosen dimensions and write (or update) the table."""
    args = parse_args(argv)
    if args.threads:
        torch.set_num_threads(args.threads)
    dims = [50, 100] if args.smoke else args.dims
    entries = {}
    for k, d in enumerate(dims):
        planned = WIDE_LOADS if args.smoke else args.loads or plan_loads(d)
        sizes = sorted({round(a * d) for a in planned})
        loads = [round(N / d, 6) for N in sizes]
        if args.smoke:
            networks = 4
        elif args.networks is not None:
            networks = args.networks[k if len(args.networks) > 1 else 0]
        else:
            networks = NETWORKS.get(d, 10)
        relax = args.relax or RELAX.get(d, "counts")
        Q = min(args.queries or QUERIES.get(d, 100), sizes[0])
        generator = seeded_generator(args.seed + d)
        start = time.process_time()
        errors = nested_retrieval_errors(
            d, sizes, networks, Q, generator, batch=max(1, 4_000_000 // d**2), relax=relax
        )
        seconds = time.process_time() - start
        entries[d] = _entry(loads, errors, seconds) | {"relax": relax}
        write_sweep({d: entries[d]}, args.out)  # after every dimension: a long run keeps its work
        record(args.out, "seqbook.hopfield.capacity_sweep", argv, rows=f"dimension {d}")
        print(
            f"d = {d}: {networks} networks x {len(loads)} loads x {Q} queries ({relax}), "
            f"{seconds:.0f} CPU s",
            flush=True,
        )
    return args.out


if __name__ == "__main__":
    main()
