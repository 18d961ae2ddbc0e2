"""seqbook.hopfield.modern: the continuous modern Hopfield network."""

import math

import pytest
import torch

from seqbook.hopfield import ModernHopfield, lse, modern_energy, modern_update, separation


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_energy_matches_eq_6_6():
    X = torch.randn(7, 5, generator=_gen(), dtype=torch.float64)
    beta = 0.7
    net = ModernHopfield(X, beta)
    xi = torch.randn(4, 5, generator=_gen(1), dtype=torch.float64)
    M = X.norm(dim=1).max()
    expected = torch.tensor([
        -math.log(sum(math.exp(beta * float(x @ q)) for x in X)) / beta
        + 0.5 * float(q @ q) + math.log(7) / beta + 0.5 * float(M) ** 2
        for q in xi
    ], dtype=torch.float64)
    assert torch.allclose(net.energy(xi), expected)
    assert math.isclose(net.M, float(M))


def test_update_is_a_gradient_step_of_size_one():
    # xi_new = xi - grad E(xi) = X softmax(beta X^T xi): checked against autograd
    X = torch.randn(9, 6, generator=_gen(), dtype=torch.float64)
    net = ModernHopfield(X, beta=1.3)
    xi = torch.randn(3, 6, generator=_gen(1), dtype=torch.float64).requires_grad_(True)
    (grad,) = torch.autograd.grad(modern_energy(xi, X, 1.3).sum(), xi)
    assert torch.allclose(net.update(xi.detach()), xi.detach() - grad, atol=1e-12)
    weights = net.weights(xi.detach())
    assert torch.allclose(weights.sum(-1), torch.ones(3, dtype=torch.float64))
    assert torch.allclose(net.update(xi.detach()), weights @ X)


@pytest.mark.parametrize("beta", [0.05, 0.5, 5.0])
def test_energy_never_increases_and_is_non_negative(beta):
    X = torch.randn(20, 8, generator=_gen())
    net = ModernHopfield(X, beta)
    xi = 3 * torch.randn(64, 8, generator=_gen(1))
    out = net.retrieve(xi, max_steps=10)
    E = out.energies
    assert (E[1:] <= E[:-1] + 1e-5).all()
    assert (E >= -1e-5).all()  # E >= (|xi| - M)^2 / 2 >= 0


def test_large_beta_retrieves_a_stored_pattern_in_one_step():
    X = torch.randn(50, 64, generator=_gen())
    net = ModernHopfield(X, beta=2.0)
    noisy = X + 0.3 * torch.randn(50, 64, generator=_gen(1))
    assert torch.allclose(net.update(noisy), X, atol=1e-4)
    out = net.retrieve(noisy)
    assert bool(out.converged.all()) and out.sweeps <= 3


def test_small_beta_averages_all_patterns():
    X = torch.randn(10, 4, generator=_gen())
    net = ModernHopfield(X, beta=1e-6)
    assert torch.allclose(net.update(torch.randn(4, generator=_gen(1))), X.mean(0), atol=1e-4)


def test_values_associate_each_pattern_with_its_value():
    X = torch.eye(3) * 5
    values = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    net = ModernHopfield(X, beta=10.0)
    out = net.update(torch.tensor([[4.0, 0.5, 0.0], [0.0, 0.0, 4.5]]), values=values)
    assert torch.allclose(out, values[[0, 2]], atol=1e-6)


def test_lse_tends_to_max_and_min_is_bounded():
    z = torch.tensor([0.3, -1.0, 2.0])
    assert abs(lse(1e4, z).item() - 2.0) < 1e-3
    assert lse(1.0, z).item() >= 2.0


def test_bad_input_is_rejected():
    X = torch.randn(4, 3)
    with pytest.raises(ValueError, match="beta must be > 0"):
        ModernHopfield(X, beta=0.0)
    with pytest.raises(ValueError, match="beta must be > 0"):
        ModernHopfield(X, beta=-1.0)
    with pytest.raises(TypeError, match="^beta must be float, got '1'"):
        ModernHopfield(X, beta="1")
    with pytest.raises(ValueError, match="patterns must be finite"):
        ModernHopfield(torch.tensor([[float("nan"), 1.0]]), beta=1.0)
    with pytest.raises(TypeError, match=r"^patterns must be Real\[Tensor, 'N d'\], got f32\[3\]"):
        ModernHopfield(torch.randn(3), beta=1.0)
    net = ModernHopfield(X, beta=1.0)
    with pytest.raises(ValueError, match="xi must have last dimension d = 3"):
        net.update(torch.randn(2, 5))
    with pytest.raises(ValueError, match=r"^values must have one row per stored pattern "
                                         r"\(N = 4\), got shape \(5, 2\)"):
        net.update(torch.randn(3), values=torch.randn(5, 2))
    with pytest.raises(TypeError, match="^values has dtype torch.float64 but xi has dtype "
                                        "torch.float32"):
        net.update(torch.randn(3), values=torch.randn(4, 2, dtype=torch.float64))
    with pytest.raises(ValueError, match=r"^values need the patterns \(N, d\) of one memory"):
        modern_update(torch.randn(2, 1, 3), torch.randn(2, 4, 3), 1.0, values=torch.randn(4, 2))
    with pytest.raises(ValueError, match="steps must be 1 when values are given"):
        net.update(torch.randn(3), steps=2, values=torch.randn(4, 2))
    with pytest.raises(ValueError, match="beta must be > 0"):
        lse(0.0, torch.randn(3))


def test_separation_matches_its_definition():
    X = torch.randn(12, 5, generator=_gen(), dtype=torch.float64)
    delta = separation(X)
    for i in range(12):
        others = max(float(X[i] @ X[j]) for j in range(12) if j != i)
        assert math.isclose(float(delta[i]), float(X[i] @ X[i]) - others, rel_tol=1e-12)
    assert delta.dtype == torch.float64


def test_modern_update_accepts_a_batch_of_memories():
    X = torch.randn(3, 8, 4, generator=_gen())  # (T, N, d)
    xi = torch.randn(3, 5, 4, generator=_gen(1))  # (T, B, d)
    together = modern_update(xi, X, 0.7)
    for t in range(3):
        assert torch.allclose(together[t], ModernHopfield(X[t], 0.7).update(xi[t]), atol=1e-6)


def test_float64_stays_float64():
    X = torch.randn(6, 3, generator=_gen(), dtype=torch.float64)
    net = ModernHopfield(X, 1.0)
    xi = torch.randn(2, 3, generator=_gen(1), dtype=torch.float64)
    assert net.update(xi).dtype == net.energy(xi).dtype == torch.float64
