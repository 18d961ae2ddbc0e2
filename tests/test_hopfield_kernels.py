"""The functions the hopfield chapter shows compute what their equations say, and the
models built from them (the memories, the Hopfield layer) compute what the functions do."""

import torch
import torch.nn.functional as F

from seqbook.hopfield import (
    ClassicalHopfield,
    DenseAssociativeMemory,
    HopfieldLayer,
    ModernHopfield,
    async_sweep,
    classical_energy,
    dense_async_sweep,
    hebbian_weights,
    hopfield_association,
    modern_energy,
    modern_update,
    random_patterns,
    sync_step,
)
from seqbook.hopfield.recognition import dam_class_scores


def _spins(seed=0):
    g = torch.Generator().manual_seed(seed)
    X = random_patterns(5, 12, generator=g)  # (5, 12)
    xi = random_patterns(3, 12, generator=g)  # (3, 12)
    return X, xi, torch.randperm(12, generator=g)


def test_classical_functions_follow_their_equations():
    X, xi, order = _spins()
    W, U = hebbian_weights(X), 0.5 * torch.randn(12)
    assert torch.equal(W, X.T @ X - 5 * torch.eye(12))
    expected = torch.stack([-0.5 * x @ W @ x + x @ U for x in xi])
    assert torch.allclose(classical_energy(xi, W, U), expected, atol=1e-5)
    h = xi @ W.T - U
    assert torch.equal(sync_step(xi, W, U), torch.where(h > 0, 1.0, torch.where(h < 0, -1.0, xi)))
    one_at_a_time = xi.clone()
    for i in order.tolist():
        h_i = one_at_a_time @ W[i] - U[i]
        one_at_a_time[:, i] = torch.where(h_i > 0, 1.0, torch.where(h_i < 0, -1.0,
                                                                   one_at_a_time[:, i]))
    assert torch.equal(async_sweep(xi, W, U, order), one_at_a_time)
    net = ClassicalHopfield(X, threshold=U)
    assert torch.equal(net.energy(xi), classical_energy(xi, W, U))
    assert torch.equal(net.update(xi, mode="sync"), sync_step(xi, W, U))


def test_async_sweep_leaves_its_input_alone():
    X, xi, order = _spins(1)
    before = xi.clone()
    async_sweep(xi, hebbian_weights(X), torch.zeros(12), order)
    assert torch.equal(xi, before)


def test_dense_sweep_runs_in_float64_and_returns_the_states_dtype():
    X, xi, order = _spins(2)
    for F_ in ("poly", "exp"):
        out = dense_async_sweep(xi, X, F_, 3, order)
        assert out.dtype == torch.float32
        assert torch.equal(out.double(), dense_async_sweep(xi.double(), X.double(), F_, 3, order))
        memory = DenseAssociativeMemory(X, F=F_, degree=3)
        assert torch.equal(memory.update_neuron(xi, 4), dense_async_sweep(
            xi, X, F_, 3, torch.tensor([4])))


def test_modern_functions_follow_their_equations():
    g = torch.Generator().manual_seed(3)
    X, xi = torch.randn(6, 4, generator=g), torch.randn(2, 4, generator=g)
    values = torch.randn(6, 3, generator=g)
    p = torch.softmax(2.0 * xi @ X.T, -1)
    assert torch.allclose(modern_update(xi, X, 2.0), p @ X)
    assert torch.allclose(modern_update(xi, X, 2.0, values), p @ values)
    M = X.norm(dim=-1).max()
    expected = (-torch.logsumexp(2.0 * xi @ X.T, -1) / 2.0 + 0.5 * (xi * xi).sum(-1)
                + torch.log(torch.tensor(6.0)) / 2.0 + 0.5 * M**2)
    assert torch.allclose(modern_energy(xi, X, 2.0), expected)
    net = ModernHopfield(X, 2.0)
    assert torch.equal(net.update(xi), modern_update(xi, X, 2.0))
    assert torch.equal(net.energy(xi), modern_energy(xi, X, 2.0))


def test_the_layer_is_its_projections_then_the_association():
    g = torch.Generator().manual_seed(4)
    Q, K = torch.randn(2, 1, 3, 4, generator=g), torch.randn(2, 1, 5, 4, generator=g)
    mask = torch.rand(2, 1, 1, 5, generator=g) > 0.3
    mask[..., 0] = True
    scores = (0.5 * Q @ K.transpose(-1, -2)).masked_fill(~mask, float("-inf"))
    assert torch.allclose(hopfield_association(Q, K, 0.5, 0, 1e-4, mask), scores.softmax(-1))
    layer = HopfieldLayer(4, 5, 3)
    R, Y = torch.randn(2, 3, 4, generator=g), torch.randn(2, 6, 5, generator=g)
    Q, K, V = layer.queries_keys_values(R, Y, Y)
    A = hopfield_association(Q, K, layer.beta)
    Z, A_layer = layer(R, Y, return_weights=True)
    assert torch.equal(A, A_layer)
    assert torch.equal(Z, (A @ V).transpose(1, 2).reshape(2, 3, -1))
    assert torch.allclose(Z, F.scaled_dot_product_attention(Q, K, V, scale=layer.beta)[:, 0],
                          atol=1e-6)


def test_dam_class_scores_follow_their_equation():
    g = torch.Generator().manual_seed(5)
    memories = 2 * torch.rand(7, 10 + 3, generator=g) - 1
    pixels = 2 * torch.rand(4, 10, generator=g) - 1
    xi_v, xi_c = memories[:, :10], memories[:, 10:]
    u = pixels @ xi_v.T - xi_c.sum(1)  # (B, K): every classification neuron at -1
    on = torch.relu(u[:, :, None] + 2 * xi_c) ** 3  # (B, K, N_c): neuron alpha at +1
    expected = torch.tanh(((on - torch.relu(u)[:, :, None] ** 3) / 0.7**3).sum(1))
    assert torch.allclose(dam_class_scores(memories, pixels, 3, 0.7), expected, atol=1e-6)
