"""seqbook.hopfield.dense: dense associative memory with polynomial and exponential F."""

import itertools

import pytest
import torch

from seqbook.hopfield import ClassicalHopfield, DenseAssociativeMemory, corrupt, random_patterns


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


@pytest.mark.parametrize("F", ["poly", "exp"])
def test_energy_matches_the_definition(F):
    X = random_patterns(4, 10, generator=_gen())
    memory = DenseAssociativeMemory(X, F=F, degree=3)
    xi = random_patterns(5, 10, generator=_gen(1))
    overlaps = (xi @ X.T).double()
    expected = -(overlaps.exp() if F == "exp" else overlaps**3).sum(-1)
    assert torch.allclose(memory.energy(xi), expected)
    assert memory.energy(xi).dtype == torch.float64


@pytest.mark.parametrize("F,degree", [("poly", 2), ("poly", 3), ("poly", 4), ("exp", 3)])
def test_each_update_picks_the_sign_of_lower_energy(F, degree):
    X = random_patterns(6, 12, generator=_gen())
    memory = DenseAssociativeMemory(X, F=F, degree=degree)
    xi = random_patterns(40, 12, generator=_gen(1))
    for l in range(12):
        plus, minus = xi.clone(), xi.clone()
        plus[:, l], minus[:, l] = 1.0, -1.0
        e_plus, e_minus = memory.energy(plus), memory.energy(minus)
        expected = torch.where(e_plus < e_minus, 1.0, torch.where(e_plus > e_minus, -1.0, xi[:, l]))
        new = memory.update_neuron(xi, l)
        # exact ties (equal energies) are decided by rounding for F = exp: skip them
        clear = (e_plus - e_minus).abs() > 1e-9 * e_plus.abs()
        assert clear.float().mean() > 0.5
        assert torch.equal(new[clear, l], expected[clear])
        assert torch.equal(new[:, :l], xi[:, :l]) and torch.equal(new[:, l + 1 :], xi[:, l + 1 :])
        assert (memory.energy(new) <= memory.energy(xi)).all()


def test_degree_two_makes_the_classical_decisions():
    # -sum (x . xi)^2 = -xi^T W xi - N d: the same energy differences as the classical net
    X = random_patterns(5, 16, generator=_gen())
    dense = DenseAssociativeMemory(X, F="poly", degree=2)
    classical = ClassicalHopfield(X)
    xi = random_patterns(30, 16, generator=_gen(1))
    for l in range(16):
        assert torch.equal(dense.update_neuron(xi, l), classical.update_neuron(xi, l))


def test_exponential_memory_is_stable_in_high_dimension():
    # overlaps of 2000 overflow exp() even in float64; the update compares log-sum-exps
    X = random_patterns(50, 2000, generator=_gen())
    memory = DenseAssociativeMemory(X, F="exp")
    noisy = corrupt(X[:4], 0.3, _gen(1))
    out = memory.update(noisy, generator=_gen(2))
    assert torch.equal(out, X[:4])


def test_exponential_memory_stores_many_more_patterns_than_dimensions():
    X = random_patterns(400, 40, generator=_gen())
    memory = DenseAssociativeMemory(X, F="exp")
    noisy = corrupt(X[:20], 0.1, _gen(1))
    out = memory.retrieve(noisy, generator=_gen(2))
    assert torch.equal(out.final, X[:20])
    assert bool(out.converged.all())
    assert (out.energies[1:] <= out.energies[:-1]).all()


def test_the_update_is_a_descent_over_all_states_of_a_tiny_memory():
    X = torch.tensor([[1.0, -1.0, 1.0, 1.0], [-1.0, -1.0, 1.0, -1.0]])
    memory = DenseAssociativeMemory(X, F="poly", degree=3)
    states = torch.tensor(list(itertools.product([-1.0, 1.0], repeat=4)))
    after = memory.update(states, generator=_gen())
    assert (memory.energy(after) <= memory.energy(states)).all()


def test_bad_input_is_rejected():
    X = torch.ones(2, 4)
    with pytest.raises(ValueError, match="F must be one of 'poly', 'exp'"):
        DenseAssociativeMemory(X, F="tanh")
    with pytest.raises(ValueError, match="degree must be >= 2"):
        DenseAssociativeMemory(X, degree=1)
    with pytest.raises(TypeError, match="^degree must be int, got 2.5"):
        DenseAssociativeMemory(X, degree=2.5)
    with pytest.raises(ValueError, match="patterns must contain only -1 and \\+1"):
        DenseAssociativeMemory(torch.tensor([[0.0, 1.0]]))
    memory = DenseAssociativeMemory(X)
    with pytest.raises(ValueError, match="xi must have last dimension d = 4"):
        memory.update(torch.ones(3))
    with pytest.raises(ValueError, match="xi must contain only -1 and \\+1"):
        memory.energy(torch.zeros(4))
    with pytest.raises(ValueError, match=r"^l must be <= 3, got 7"):
        memory.update_neuron(torch.ones(4), 7)


def test_log_neg_energy_is_finite_where_the_energy_overflows():
    X = random_patterns(20, 1000, generator=_gen())
    memory = DenseAssociativeMemory(X, F="exp")
    noisy = corrupt(X[:3], 0.2, _gen(1))
    assert torch.isinf(memory.energy(X[:3])).all()  # exp(1000) overflows float64
    log_neg = memory.log_neg_energy(noisy)
    assert torch.isfinite(log_neg).all()
    assert torch.allclose(log_neg, torch.logsumexp((noisy @ X.T).double(), -1))
    small = DenseAssociativeMemory(X[:, :50], F="exp")  # no overflow: compare with log(-E)
    xi = X[:3, :50]
    assert torch.allclose(small.log_neg_energy(xi), torch.log(-small.energy(xi)))
    after = memory.update(noisy, generator=_gen(2))
    assert (memory.log_neg_energy(after) > log_neg).all()  # the energy fell
