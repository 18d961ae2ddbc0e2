"""seqbook.hopfield.classical: Hebbian storage, energy descent, (a)synchronous updates."""

import pytest
import torch

from seqbook.hopfield import (
    ClassicalHopfield,
    async_relax,
    async_sweep,
    hebbian_weights,
    random_patterns,
    sync_step,
)


def _gen(seed=0):
    return torch.Generator().manual_seed(seed)


def test_hebbian_weights_are_symmetric_with_zero_diagonal():
    X = random_patterns(5, 12, generator=_gen())
    W = hebbian_weights(X)
    assert torch.equal(W, W.T)
    assert torch.equal(W.diagonal(), torch.zeros(12))
    expected = sum(torch.outer(x, x) for x in X) - 5 * torch.eye(12)
    assert torch.equal(W, expected)


def test_hebbian_weights_batch_of_networks():
    X = random_patterns(3, 8, num_trials=4, generator=_gen())
    W = hebbian_weights(X)
    assert W.shape == (4, 8, 8)
    for t in range(4):
        assert torch.equal(W[t], hebbian_weights(X[t]))


def test_energy_matches_the_formula_and_thresholds():
    X = random_patterns(3, 10, generator=_gen())
    U = torch.randn(10, generator=_gen(1))
    net = ClassicalHopfield(X, threshold=U)
    xi = random_patterns(6, 10, generator=_gen(2))
    expected = torch.stack([-0.5 * x @ net.W @ x + x @ U for x in xi])
    assert torch.allclose(net.energy(xi), expected, atol=1e-5)
    assert net.energy(xi[0]).shape == ()


def test_local_field_is_minus_the_energy_gradient():
    X = random_patterns(4, 9, generator=_gen())
    net = ClassicalHopfield(X, threshold=0.3)
    xi = random_patterns(1, 9, generator=_gen(3))[0].requires_grad_(True)
    energy = -0.5 * xi @ net.W @ xi + xi @ net.U
    (grad,) = torch.autograd.grad(energy, xi)
    assert torch.allclose(net.local_field(xi.detach()), -grad, atol=1e-6)


def test_few_stored_patterns_are_fixed_points_and_attract_corrupted_copies():
    X = random_patterns(3, 200, generator=_gen())
    net = ClassicalHopfield(X)
    assert torch.equal(net.update(X, mode="sync"), X)
    assert torch.equal(net.update(X, mode="async", generator=_gen()), X)
    noisy = X.clone()
    noisy[:, :20] *= -1
    out = net.retrieve(noisy, generator=_gen())
    assert torch.equal(out.final, X)
    assert bool(out.converged.all())
    assert out.states.shape == (out.sweeps + 1, 3, 200)
    assert out.energies.shape == (out.sweeps + 1, 3)


def test_every_single_asynchronous_update_lowers_or_keeps_the_energy():
    X = random_patterns(8, 30, generator=_gen())
    net = ClassicalHopfield(X, threshold=torch.randn(30, generator=_gen(5)))
    xi = random_patterns(50, 30, generator=_gen(1))
    energy = net.energy(xi)
    g = _gen(2)
    for _ in range(3):
        for i in torch.randperm(30, generator=g).tolist():
            xi = net.update_neuron(xi, i)
            new = net.energy(xi)
            assert (new <= energy + 1e-4).all()
            energy = new


def test_synchronous_updates_can_oscillate_where_asynchronous_ones_settle():
    net = ClassicalHopfield(torch.tensor([[1.0, 1.0]]))
    start = torch.tensor([1.0, -1.0])
    one = net.update(start, mode="sync")
    assert torch.equal(one, -start)
    assert torch.equal(net.update(one, mode="sync"), start)  # a 2-cycle
    sync = net.retrieve(start, mode="sync", max_sweeps=10)
    assert not bool(sync.converged)
    assert torch.equal(sync.energies, torch.ones(11))
    settled = net.retrieve(start, mode="async", generator=_gen())
    assert bool(settled.converged)
    assert settled.energies[-1].item() == -1.0


def test_ties_keep_the_spin():
    # a zero local field must leave the spin as it is
    net = ClassicalHopfield(torch.tensor([[1.0, 1.0, 1.0], [1.0, -1.0, -1.0]]))
    # W = [[0, 0, 0], [0, 0, 2], [0, 2, 0]]: spin 0 has zero field whatever the state
    for s in (-1.0, 1.0):
        xi = torch.tensor([s, 1.0, 1.0])
        assert net.update_neuron(xi, 0)[0].item() == s


def test_async_relax_reaches_a_fixed_point_of_the_same_network():
    X = random_patterns(30, 100, num_trials=3, generator=_gen())
    W = hebbian_weights(X)
    U = torch.zeros(3, 100)
    final, flips = async_relax(X, W, U, generator=_gen(1))
    assert final.shape == X.shape and flips.shape == (3, 30)
    fields = final @ W
    assert ((fields * final) >= 0).all()  # no unstable spin left
    for t in range(3):
        net = ClassicalHopfield(X[t])
        assert torch.equal(net.update(final[t], mode="sync"), final[t])
        assert (net.energy(final[t]) <= net.energy(X[t]) + 1e-3).all()


def test_bad_input_is_rejected_with_clear_errors():
    with pytest.raises(ValueError, match="patterns must contain only -1 and \\+1"):
        ClassicalHopfield(torch.tensor([[0.0, 1.0, 1.0]]))
    with pytest.raises(TypeError, match=r"^patterns must be Real\[Tensor, 'N d'\], got f32\[4\]"):
        ClassicalHopfield(torch.ones(4))
    with pytest.raises(ValueError, match="at least one pattern"):
        ClassicalHopfield(torch.ones(0, 4))
    with pytest.raises(TypeError, match=r"^patterns must be Real\[Tensor, 'N d'\], got"):
        ClassicalHopfield([[1.0, -1.0]])
    with pytest.raises(TypeError,
                       match=r"^threshold must be float \| Float\[Tensor, 'd'\], got f32\[4\]"):
        ClassicalHopfield(torch.ones(1, 3), threshold=torch.zeros(4))
    net = ClassicalHopfield(torch.ones(2, 3))
    with pytest.raises(ValueError, match="xi must have last dimension d = 3"):
        net.energy(torch.ones(4))
    with pytest.raises(ValueError, match="xi must contain only -1 and \\+1"):
        net.update(torch.tensor([0.5, 1.0, 1.0]))
    with pytest.raises(ValueError, match="mode must be one of"):
        net.update(torch.ones(3), mode="parallel")
    with pytest.raises(ValueError, match="steps must be >= 1"):
        net.update(torch.ones(3), steps=0)
    with pytest.raises(ValueError, match=r"^i must be <= 2, got 3"):
        net.update_neuron(torch.ones(3), 3)


def test_updates_read_row_i_of_a_non_symmetric_W():
    # spin i's field is sum_j W_ij xi_j: with W_{i, i-1} = 1 every spin copies its left neighbour
    ring = torch.roll(torch.eye(4), 1, dims=0)
    xi = torch.tensor([[1.0, -1.0, -1.0, -1.0]])
    assert torch.equal(sync_step(xi, ring, torch.zeros(4)), torch.tensor([[-1.0, 1.0, -1.0, -1.0]]))
    swept = async_sweep(xi, ring, torch.zeros(4), torch.tensor([1]))
    assert torch.equal(swept, torch.tensor([[1.0, 1.0, -1.0, -1.0]]))


def test_async_relax_needs_symmetric_weights():
    ring = torch.roll(torch.eye(4), 1, dims=0)[None]
    with pytest.raises(ValueError, match="W must be symmetric"):
        async_relax(torch.ones(1, 2, 4), ring, torch.zeros(1, 4))
