"""seqbook.hopfield.capacity_sweep: the offline capacity sweep and its analysis."""

import math

import numpy as np
import pytest
import torch

from seqbook.hopfield import async_relax, bit_errors, hebbian_weights, random_patterns
from seqbook.hopfield.capacity_sweep import (
    NETWORKS,
    SWEEP,
    TOLERANCES,
    bootstrap_crossings,
    fit_finite_size,
    load_sweep,
    logistic_crossing,
    main,
    nested_retrieval_errors,
    plan_loads,
    sweep_crossing,
)


def test_logistic_crossing_recovers_a_logistic_curve():
    loads = np.linspace(0.10, 0.26, 17)
    f = 1 / (1 + np.exp((loads - 0.173) / 0.012))
    n = 10_000
    assert math.isclose(logistic_crossing(loads, np.round(f * n), n), 0.173, abs_tol=2e-4)
    assert math.isclose(logistic_crossing(loads, np.round(f * n), n, level=0.9),
                        0.173 - 0.012 * math.log(9), abs_tol=5e-4)
    with pytest.raises(ValueError, match="does not fall with the load"):
        logistic_crossing(loads, np.round((1 - f) * n), n)
    with pytest.raises(ValueError, match="between 0 and queries"):
        logistic_crossing(loads, np.full(17, 11), 10)


def test_fit_finite_size_recovers_alpha_c_and_nu():
    d = np.array([100.0, 200, 400, 800, 1600, 3200, 6400])
    for nu in (0.5, 0.8, 1.0):
        alpha, c, fitted, chi2 = fit_finite_size(d, 0.138 + 0.4 * d**-nu)
        assert math.isclose(alpha, 0.138, abs_tol=1e-4) and math.isclose(fitted, nu, abs_tol=0.006)
    alpha, c, nu, chi2 = fit_finite_size(d, 0.14 + 0.3 / np.sqrt(d), exponent=1.0)
    assert nu == 1.0 and chi2 > 0  # the wrong law leaves residuals
    with pytest.raises(ValueError, match="length >= 3"):
        fit_finite_size(d[:2], d[:2])


def test_nested_loads_query_the_same_patterns_of_one_growing_network():
    g = torch.Generator().manual_seed(0)
    errors = nested_retrieval_errors(100, [4, 8, 60], 3, 4, g, batch=2)
    assert errors.shape == (3, 3, 4)
    assert (errors[:, 0] == 0).all()  # 4 patterns: every one is a fixed point
    assert (errors[:, 2] > 0.05).float().mean() > 0.5  # load 0.6: most are lost
    # the first load by hand: the same patterns, the same generator draws
    g1, g2 = torch.Generator().manual_seed(1), torch.Generator().manual_seed(1)
    nested = nested_retrieval_errors(50, [10, 20], 1, 5, g1)[:, 0]
    X = random_patterns(20, 50, num_trials=1, generator=g2)
    final, _ = async_relax(X[:, :5], hebbian_weights(X[:, :10]), torch.zeros(1, 50), g2)
    assert torch.equal(nested, bit_errors(final, X[:, :5]))
    with pytest.raises(ValueError, match="increasing list"):
        nested_retrieval_errors(100, [8, 4], 1, 2)
    with pytest.raises(
        ValueError, match="num_queries must be at most the smallest number of patterns"
    ):
        nested_retrieval_errors(100, [4, 8], 1, 5)


def test_the_script_writes_a_table_that_loads(tmp_path):
    out = main(["--smoke", "--threads", "1", "--out", str(tmp_path / "sweep.json")])
    sweep = load_sweep(out)
    assert sweep.dims == [50, 100]
    assert sweep.retrieved[100].shape == (4, len(sweep.loads[100]))
    assert np.array_equal(
        sweep.retrieved[100].sum(0), sweep.by_tolerance[100][TOLERANCES.index(0.05)]
    )
    # looser tolerance, more
    assert (sweep.by_tolerance[100][0] <= sweep.by_tolerance[100][2]).all()
    # rerunning one dimension replaces its entry and keeps the others
    main(["--smoke", "--threads", "1", "--out", str(out), "--dims", "50"])
    assert load_sweep(out).dims == [50, 100]
    crossings = bootstrap_crossings(sweep, 100, num_resamples=20)
    assert crossings.shape == (20,) and crossings.std() > 0
    with pytest.raises(ValueError, match="tolerance must be 0.05 to resample"):
        sweep_crossing(sweep, 100, 0.1, networks=np.arange(4))


def test_the_committed_table_is_the_planned_sweep():
    sweep = load_sweep(SWEEP)
    assert sweep.dims == sorted(NETWORKS)
    for d in sweep.dims:
        assert sweep.networks(d) == NETWORKS[d]
        planned = sorted({round(a * d) for a in plan_loads(d)})
        assert np.allclose(sweep.loads[d] * d, planned)
        assert sweep.fraction(d)[0] > 0.9 and sweep.fraction(d)[-1] < 0.5  # the crossing is inside
    assert SWEEP.stat().st_size < 200_000


def test_the_counts_sampler_flips_a_uniform_unstable_spin_and_settles():
    from seqbook.hopfield.capacity_sweep import _relax_counts

    g = torch.Generator().manual_seed(3)
    X = random_patterns(30, 100, num_trials=1, generator=g)  # (1, 30, 100): load 0.3
    W = hebbian_weights(X)
    start = X[:, :1].clone()  # (1, 1, 100)
    start[..., :8] *= -1  # a pattern with 8 spins wrong
    unstable = ((start @ W) * start < 0).squeeze()  # (100,) the spins that may flip
    k = int(unstable.sum())
    assert 1 < k < 30  # a few: most eight-draw tries miss, so both paths run
    B = 6000
    first = _relax_counts(start.expand(1, B, 100), W, g, max_flips=1)  # one flip each
    flipped = (first != start).squeeze(0)  # (B, 100)
    assert (flipped.sum(-1) == 1).all() and not flipped[:, ~unstable].any()
    counts = flipped.sum(0)[unstable].double()  # uniform: B / k each, binomial spread
    assert ((counts - B / k).abs() < 5 * math.sqrt(B / k)).all()
    final = _relax_counts(X[:, :10], W, g, max_flips=1000)  # run to the end
    assert ((final @ W) * final >= 0).all()  # a fixed point: no spin unstable
    with pytest.raises(ValueError, match="relax"):
        nested_retrieval_errors(100, [4, 8], 1, 2, relax="fast")
