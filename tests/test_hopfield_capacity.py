"""seqbook.hopfield.capacity: random patterns, corruption, retrieval and capacity curves."""

import math

import pytest
import torch

from seqbook.hopfield import (
    CapacityCurve,
    bit_errors,
    capacity_curve,
    corrupt,
    random_patterns,
    retrieval_errors,
    retrieved_fraction,
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_random_patterns_are_unbiased_spins():
    X = random_patterns(200, 100, num_trials=3, generator=_gen())
    assert X.shape == (3, 200, 100)
    assert set(X.unique().tolist()) == {-1.0, 1.0}
    assert abs(X.mean().item()) < 0.01
    assert torch.equal(X, random_patterns(200, 100, num_trials=3, generator=_gen()))


def test_corrupt_flips_exactly_the_requested_number_of_spins():
    X = random_patterns(50, 40, generator=_gen())
    noisy = corrupt(X, 0.25, _gen(1))
    assert ((noisy != X).sum(-1) == 10).all()
    assert torch.equal(corrupt(X, 0.0, _gen(1)), X)
    assert torch.equal(corrupt(X, 1.0, _gen(1)), -X)


def test_bit_errors_compare_signs():
    states = torch.tensor([[0.2, -3.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0]])
    patterns = torch.tensor([1.0, -1.0, -1.0, 1.0])
    assert bit_errors(states, patterns).tolist() == [0.25, 0.5]


@pytest.mark.parametrize("memory", ["classical", "poly", "exp", "modern"])
def test_few_patterns_are_all_retrieved(memory):
    X = random_patterns(4, 64, num_trials=2, generator=_gen())
    fraction = retrieved_fraction(memory, X, corruption=0.1, tolerance=0.0, generator=_gen(1))
    assert fraction.tolist() == [1.0, 1.0]


def test_overloaded_classical_memory_fails_and_dense_ones_do_not():
    X = random_patterns(60, 64, num_trials=2, generator=_gen())  # load 0.94 >> 0.138
    kwargs = dict(corruption=0.1, num_queries=20, generator=_gen(1))
    assert retrieved_fraction("classical", X, **kwargs).max() < 0.2
    assert retrieved_fraction("exp", X, **kwargs).min() == 1.0
    assert retrieved_fraction("poly", X, degree=4, **kwargs).min() == 1.0
    errors = retrieval_errors("classical", X[0], num_queries=5)
    assert errors.shape == (5,)


def test_capacity_curve_and_its_transition():
    curve = capacity_curve(
        "classical", 100, [5, 10, 20, 30, 40], num_trials=4, num_queries=5, generator=_gen()
    )
    assert curve.errors.shape == (5, 4, 5)
    assert curve.fraction.shape == (5, 4)
    assert torch.allclose(curve.load, torch.tensor([0.05, 0.1, 0.2, 0.3, 0.4], dtype=torch.float64))
    assert curve.mean[0] == 1.0 and curve.mean[-1] < 0.5
    assert 10 < curve.capacity() < 40
    strict = curve.with_tolerance(0.0)
    assert (strict.mean <= curve.mean).all()


def test_capacity_interpolation_and_logistic_fit():
    errors = torch.tensor([0.0, 0.0, 0.0, 0.0])
    # fractions 1, 0.75, 0.25, 0 at N = 10, 20, 30, 40: crossing at 25
    fractions = [1.0, 0.75, 0.25, 0.0]
    errs = torch.stack([(torch.arange(4) >= round(4 * f)).float().unsqueeze(0) for f in fractions])
    curve = CapacityCurve("classical", 100, torch.tensor([10, 20, 30, 40]), errs, tolerance=0.5)
    assert curve.mean.tolist() == fractions
    assert math.isclose(curve.capacity(0.5), 25.0)
    assert math.isclose(curve.capacity(0.5, method="logistic"), 25.0, rel_tol=1e-6)
    never = CapacityCurve("exp", 10, torch.tensor([1, 2]), errors.reshape(2, 1, 2), tolerance=0.5)
    assert never.capacity() == math.inf
    with pytest.raises(ValueError, match="logistic fit needs at least two points"):
        never.capacity(method="logistic")


def test_bad_input_is_rejected():
    X = random_patterns(4, 10, generator=_gen())
    with pytest.raises(ValueError, match="memory must be one of"):
        retrieved_fraction("boltzmann", X)
    with pytest.raises(ValueError, match="tolerance must be <= 1.0"):
        retrieved_fraction("classical", X, tolerance=2.0)
    with pytest.raises(ValueError, match=r"^num_queries must be <= 4, got 5"):
        retrieval_errors("classical", X, num_queries=5)
    with pytest.raises(ValueError, match="beta must be > 0"):
        retrieval_errors("modern", X, beta=0.0)
    with pytest.raises(ValueError, match="patterns must contain only -1 and \\+1"):
        retrieval_errors("exp", X * 0.5)
    with pytest.raises(ValueError, match="fraction must be <= 1.0"):
        corrupt(X, 1.5)
    with pytest.raises(TypeError, match=r"^patterns must be Shaped\[Tensor, '\*#batch d'\], "
                                        r"got f32\[4\].*existing value of 3"):
        bit_errors(torch.ones(3), torch.ones(4))
    with pytest.raises(ValueError, match="num_patterns must list at least one"):
        capacity_curve("classical", 10, [])
    with pytest.raises(
        ValueError, match="num_queries must be at most the smallest number of patterns"
    ):
        capacity_curve("classical", 10, [2, 5], num_queries=3)
