"""The private kernels the hopfield chapter shows compute exactly what the public
functions return (the public functions only validate their arguments first)."""

import torch

from seqbook.hopfield import (
    HopfieldLayer,
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
from seqbook.hopfield.classical import (
    _async_sweep,
    _classical_energy,
    _hebbian_weights,
    _sync_step,
)
from seqbook.hopfield.dense import _dense_async_sweep
from seqbook.hopfield.layers import _hopfield_association
from seqbook.hopfield.modern import _modern_energy, _modern_update
from seqbook.hopfield.recognition import _dam_class_scores, dam_class_scores


def _spins(seed=0):
    g = torch.Generator().manual_seed(seed)
    X = random_patterns(5, 12, generator=g)  # (5, 12)
    xi = random_patterns(3, 12, generator=g)  # (3, 12)
    return X, xi, torch.randperm(12, generator=g)


def test_classical_kernels_equal_the_public_functions():
    X, xi, order = _spins()
    W, U = hebbian_weights(X), 0.5 * torch.randn(12)
    assert torch.equal(_hebbian_weights(X), W)
    assert torch.equal(_classical_energy(xi, W, U), classical_energy(xi, W, U))
    assert torch.equal(_async_sweep(xi, W, U, order), async_sweep(xi, W, U, order))
    assert torch.equal(_sync_step(xi, W, U), sync_step(xi, W, U))


def test_async_sweep_kernel_leaves_its_input_alone():
    X, xi, order = _spins(1)
    before = xi.clone()
    _async_sweep(xi, hebbian_weights(X), torch.zeros(12), order)
    assert torch.equal(xi, before)


def test_dense_kernel_equals_the_public_sweep_and_returns_float64():
    X, xi, order = _spins(2)
    for F in ("poly", "exp"):
        out = _dense_async_sweep(xi, X.double(), F, 3, order)
        assert out.dtype == torch.float64
        assert torch.equal(out.float(), dense_async_sweep(xi, X, F, 3, order))


def test_modern_kernels_equal_the_public_functions():
    g = torch.Generator().manual_seed(3)
    X, xi = torch.randn(6, 4, generator=g), torch.randn(2, 4, generator=g)
    values = torch.randn(6, 3, generator=g)
    assert torch.equal(_modern_energy(xi, X, 2.0), modern_energy(xi, X, 2.0))
    assert torch.equal(_modern_update(xi, X, 2.0), modern_update(xi, X, 2.0))
    assert torch.equal(_modern_update(xi, X, 2.0, values), modern_update(xi, X, 2.0, values))


def test_association_and_layer_kernels_equal_the_public_calls():
    g = torch.Generator().manual_seed(4)
    Q, K = torch.randn(2, 1, 3, 4, generator=g), torch.randn(2, 1, 5, 4, generator=g)
    mask = torch.rand(2, 1, 1, 5, generator=g) > 0.3
    mask[..., 0] = True
    for steps in (0, 2, None):
        assert torch.equal(_hopfield_association(Q, K, 0.5, steps, 1e-4, mask),
                           hopfield_association(Q, K, 0.5, steps, 1e-4, mask))
    layer = HopfieldLayer(4, 5, 3)
    R, Y = torch.randn(2, 3, 4, generator=g), torch.randn(2, 6, 5, generator=g)
    Z, A = layer._associate(R, Y, Y, None)
    Z_public, A_public = layer(R, Y, return_weights=True)
    assert torch.equal(Z, Z_public) and torch.equal(A, A_public)


def test_dam_class_scores_kernel_equals_the_public_function():
    g = torch.Generator().manual_seed(5)
    memories = 2 * torch.rand(7, 10 + 3, generator=g) - 1
    pixels = 2 * torch.rand(4, 10, generator=g) - 1
    assert torch.equal(_dam_class_scores(memories, pixels, 3, 0.7),
                       dam_class_scores(memories, pixels, 3, 0.7))
