"""Gated (decaying) linear attention against a naive quadratic form (the decay as a
causal mask of products of gates), and against ungated linear attention at gamma = 1."""

import pytest
import torch

from seqbook.linear_attention import (
    elu_feature_map,
    gated_linear_attention,
    gated_linear_attention_step,
    linear_attention,
)


def _qkv_gamma(B=2, T=23, d_k=5, d_v=3, per_key=True, seed=0):
    g = torch.Generator().manual_seed(seed)
    dt = torch.float64
    Q, K = elu_feature_map(torch.randn(2, B, T, d_k, generator=g, dtype=dt))
    V = torch.randn(B, T, d_v, generator=g, dtype=dt)
    gamma = 0.5 + 0.5 * torch.rand(B, T, d_k if per_key else 1, generator=g, dtype=dt)
    return Q, K, V, gamma


def _quadratic(Q, K, V, gamma):
    """y_i = sum_{j <= i} v_j (q_i * gamma_{j+1} * ... * gamma_i)^T k_j, the products
    taken directly (no logarithms, no recurrence)."""
    B, T, d_k = K.shape
    Y = torch.zeros(B, T, V.shape[2], dtype=V.dtype)
    for i in range(T):
        for j in range(i + 1):
            D_ij = gamma[:, j + 1 : i + 1].prod(dim=1)  # (B, d_k) or (B, 1); 1 if j = i
            weight = (Q[:, i] * D_ij * K[:, j]).sum(-1)  # (B,)
            Y[:, i] += weight[:, None] * V[:, j]
    return Y


@pytest.mark.parametrize("per_key", [True, False])
def test_recurrence_equals_the_quadratic_form(per_key):
    Q, K, V, gamma = _qkv_gamma(per_key=per_key)
    gap = (gated_linear_attention(Q, K, V, gamma) - _quadratic(Q, K, V, gamma)).abs().max()
    assert gap < 1e-12


def test_scalar_decay_is_the_mask_of_products_of_gammas():
    Q, K, V, gamma = _qkv_gamma(per_key=False)
    T = Q.shape[1]
    log_cum = gamma[..., 0].log().cumsum(-1)  # (B, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    D = torch.exp((log_cum[:, :, None] - log_cum[:, None, :]).masked_fill(~causal, -torch.inf))
    twin = ((Q @ K.transpose(1, 2)) * D) @ V
    assert (gated_linear_attention(Q, K, V, gamma) - twin).abs().max() < 1e-12


def test_gamma_one_is_linear_attention_with_its_normaliser_as_a_value_of_one():
    Q, K, V, _ = _qkv_gamma()
    ones = torch.ones(*V.shape[:2], 1, dtype=V.dtype)
    out = gated_linear_attention(Q, K, torch.cat([V, ones], -1), torch.ones_like(Q))
    numerator, normaliser = out[..., :-1], out[..., -1:]
    assert (numerator / normaliser - linear_attention(Q, K, V)).abs().max() < 1e-12


def test_a_decay_near_zero_keeps_only_the_current_pair():
    Q, K, V, gamma = _qkv_gamma()
    tiny = torch.full_like(gamma, 1e-30)  # the state forgets everything before t
    Y = gated_linear_attention(Q, K, V, tiny)
    expected = (Q * K).sum(-1, keepdim=True) * V
    assert (Y - expected).abs().max() < 1e-12


def test_step_decays_each_key_column():
    S = torch.arange(6.0).reshape(1, 2, 3)
    gamma = torch.tensor([[1.0, 0.5, 0.0]])
    zero_k, q = torch.zeros(1, 3), torch.tensor([[0.0, 1.0, 0.0]])
    S_new, y = gated_linear_attention_step(S, q, zero_k, torch.zeros(1, 2), gamma)
    assert torch.equal(S_new, S * gamma[:, None, :])
    assert torch.equal(y, S_new[:, :, 1])


def test_bad_input_names_the_argument():
    Q, K, V, gamma = _qkv_gamma(B=1, T=4, d_k=2, d_v=2)
    with pytest.raises(ValueError, match=r"^gamma must be in \(0, 1\]"):
        gated_linear_attention(Q, K, V, torch.zeros_like(gamma))
    with pytest.raises(ValueError, match=r"^gamma must be in \(0, 1\]"):
        gated_linear_attention(Q, K, V, 1.5 * torch.ones_like(gamma))
    with pytest.raises(TypeError, match=r"^gamma must be Float\[Tensor, 'B T #d_k'\]"):
        gated_linear_attention(Q, K, V, torch.ones(1, 4, 3, dtype=Q.dtype))
    with pytest.raises(TypeError, match=r"^gamma must be .*dimension T is 5"):
        gated_linear_attention(Q, K, V, torch.ones(1, 5, 1, dtype=Q.dtype))
    with pytest.raises(TypeError, match="^V must be"):
        gated_linear_attention(Q, K, V[:, :3], gamma)
    empty = torch.ones(1, 0, 2)
    with pytest.raises(ValueError, match=r"phi_Q must have shape \(B, T, d_k\) with T >= 1"):
        gated_linear_attention(empty, empty, empty, torch.ones(1, 0, 1))
