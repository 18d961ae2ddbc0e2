"""seqbook.hopfield.layers: Hopfield layers are attention; Hopfield pooling is pooling."""

import math

import pytest
import torch
import torch.nn.functional as F

from seqbook.attention import scaled_dot_product_attention
from seqbook.hopfield import HopfieldLayer, HopfieldPooling


def _layer(**kwargs):
    torch.manual_seed(0)
    return HopfieldLayer(state_size=6, stored_size=5, hidden_size=8, value_size=3, **kwargs)


def test_hopfield_layer_equals_scaled_dot_product_attention():
    layer = _layer()
    R, Y = torch.randn(2, 4, 6), torch.randn(2, 7, 5)
    Z, A = layer(R, Y, return_weights=True)
    Q, K = R @ layer.W_Q, Y @ layer.W_K
    V = K @ layer.W_V
    assert math.isclose(layer.beta, 1 / math.sqrt(8))
    assert torch.allclose(Z, F.scaled_dot_product_attention(Q, K, V), atol=1e-6)
    out, weights = scaled_dot_product_attention(Q, K, V)
    assert torch.allclose(Z, out, atol=1e-6)
    assert torch.allclose(A, weights, atol=1e-6)


def test_masked_stored_patterns_are_ignored():
    layer = _layer()
    R, Y = torch.randn(2, 4, 6), torch.randn(2, 7, 5)
    mask = torch.ones(2, 7, dtype=torch.bool)
    mask[0, 5:] = False
    Z = layer(R, Y, mask=mask)
    assert torch.allclose(Z[0], layer(R[:1], Y[:1, :5])[0], atol=1e-6)
    Q, K = R @ layer.W_Q, Y @ layer.W_K
    reference = F.scaled_dot_product_attention(Q, K, K @ layer.W_V, attn_mask=mask[:, None, :])
    assert torch.allclose(Z, reference, atol=1e-6)


def test_more_steps_iterate_the_hopfield_update_in_key_space():
    layer = _layer(steps=3, beta=0.5)
    R, Y = torch.randn(1, 2, 6), torch.randn(1, 9, 5)
    Q, K = R @ layer.W_Q, Y @ layer.W_K
    for _ in range(3):
        Q = torch.softmax(0.5 * Q @ K.transpose(1, 2), -1) @ K
    assert torch.allclose(layer(R, Y), Q @ layer.W_V, atol=1e-6)


def test_hopfield_layer_trains():
    layer = _layer()
    R, Y = torch.randn(2, 4, 6), torch.randn(2, 7, 5)
    layer(R, Y).square().sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in layer.parameters())


def test_pooling_with_a_zero_query_is_mean_pooling():
    torch.manual_seed(0)
    pool = HopfieldPooling(input_size=5, hidden_size=4, value_size=3)
    with torch.no_grad():
        pool.query.zero_()
    Y = torch.randn(3, 11, 5)
    expected = (Y @ pool.W_K @ pool.W_V).mean(1)
    assert torch.allclose(pool(Y), expected, atol=1e-6)


def test_pooling_is_permutation_invariant_and_respects_the_mask():
    torch.manual_seed(0)
    pool = HopfieldPooling(input_size=5, hidden_size=4, num_queries=2)
    Y = torch.randn(3, 11, 5)
    z, A = pool(Y, return_weights=True)
    assert z.shape == (3, 8) and A.shape == (3, 2, 11)
    assert torch.allclose(z, pool(Y[:, torch.randperm(11)]), atol=1e-6)
    mask = torch.ones(3, 11, dtype=torch.bool)
    mask[1, 6:] = False
    padded = Y.clone()
    padded[1, 6:] = 100.0  # padding content must not matter
    assert torch.allclose(pool(padded, mask=mask)[1], pool(Y[1:2, :6])[0], atol=1e-5)


def test_pooling_is_a_special_case_of_the_layer():
    torch.manual_seed(0)
    pool = HopfieldPooling(input_size=5, hidden_size=4)
    layer = HopfieldLayer(state_size=4, stored_size=5, hidden_size=4)
    with torch.no_grad():
        layer.W_Q.copy_(torch.eye(4))
        layer.W_K.copy_(pool.W_K)
        layer.W_V.copy_(pool.W_V)
    Y = torch.randn(2, 6, 5)
    R = pool.query.detach().expand(2, 1, 4)
    assert torch.allclose(pool(Y), layer(R, Y)[:, 0], atol=1e-6)


def test_bad_input_is_rejected():
    with pytest.raises(ValueError, match="beta must be > 0"):
        HopfieldLayer(3, 3, 4, beta=0.0)
    with pytest.raises(ValueError, match="hidden_size must be >= 1"):
        HopfieldLayer(3, 3, 0)
    with pytest.raises(ValueError, match="beta must be > 0"):
        HopfieldPooling(3, 4, beta=-2.0)
    layer = HopfieldLayer(3, 2, 4)
    with pytest.raises(ValueError, match="R must have last dimension state_size = 3"):
        layer(torch.randn(1, 2, 4), torch.randn(1, 5, 2))
    with pytest.raises(ValueError, match="Y must have last dimension stored_size = 2"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 3))
    with pytest.raises(ValueError, match="same batch size"):
        layer(torch.randn(2, 2, 3), torch.randn(1, 5, 2))
    with pytest.raises(ValueError, match="R must have 3 dimensions"):
        layer(torch.randn(2, 3), torch.randn(1, 5, 2))
    with pytest.raises(TypeError, match="mask must be a bool tensor"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 2), mask=torch.ones(1, 5))
    with pytest.raises(ValueError, match="mask must have shape \\(1, 5\\) or \\(1, 2, 5\\)"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 2), mask=torch.ones(1, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="no stored pattern to attend to"):
        layer(torch.randn(1, 2, 3), torch.randn(1, 5, 2), mask=torch.zeros(1, 5, dtype=torch.bool))
    pool = HopfieldPooling(3, 4)
    with pytest.raises(ValueError, match="Y must have last dimension input_size = 3"):
        pool(torch.randn(2, 5, 4))
    with pytest.raises(ValueError, match="at least one instance"):
        pool(torch.randn(2, 0, 3))
