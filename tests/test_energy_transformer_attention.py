"""Energy attention: its energy written out, its closed-form update against autograd and SDPA."""

from __future__ import annotations

import math

import pytest
import torch
import torch.nn.functional as F

from seqbook.energy_transformer import EnergyAttention


def _attention(D=6, H=3, Y=4, seed=0, std=0.5):
    g = torch.Generator().manual_seed(seed)
    attention = EnergyAttention(D, H, Y, init_std=std, generator=g).double()
    with torch.no_grad():  # keys start equal to queries; make them independent
        attention.W_K.normal_(0, std, generator=g)
    return attention


def _tokens(B=2, N=5, D=6, seed=1):
    return torch.randn(B, N, D, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))


def test_energy_is_the_papers_double_sum():
    attention = _attention()
    g = _tokens()
    beta = attention.beta
    expected = torch.zeros(g.shape[0], dtype=torch.float64)
    for b in range(g.shape[0]):
        for h in range(3):
            K = g[b] @ attention.W_K[h].T  # (N, Y)
            Q = g[b] @ attention.W_Q[h].T
            for C in range(g.shape[1]):
                terms = [math.exp(beta * float(K[B] @ Q[C])) for B in range(g.shape[1]) if B != C]
                expected[b] -= math.log(sum(terms)) / beta
    torch.testing.assert_close(attention.energy(g), expected, atol=1e-12, rtol=0)


def test_default_beta_is_one_over_sqrt_head_dim():
    assert math.isclose(EnergyAttention(8, 2, 16).beta, 0.25)
    assert EnergyAttention(8, 2, 16, beta=2.0).beta == 2.0


@pytest.mark.parametrize("seed", range(3))
def test_closed_form_update_is_minus_the_autograd_gradient(seed):
    attention = _attention(seed=seed, std=1.0)
    g = _tokens(seed=seed + 10).requires_grad_(True)
    (grad,) = torch.autograd.grad(attention.energy(g).sum(), g)
    gap = (attention(g) + grad).abs().max().item()
    assert gap < 1e-10, gap
    assert grad.abs().max() > 1e-2  # a non-trivial gradient


def test_weights_are_a_softmax_over_the_other_tokens():
    attention = _attention()
    omega = attention.weights(_tokens())
    assert omega.shape == (2, 3, 5, 5)
    torch.testing.assert_close(omega.sum(-1), torch.ones(2, 3, 5, dtype=torch.float64))
    assert omega.diagonal(dim1=-2, dim2=-1).abs().max() == 0


def test_first_term_is_standard_attention_with_values_from_the_keys():
    # sum_B omega_AB k_B is scaled dot-product attention with the keys as values
    # (torch's twin), then mapped back to token space by W_Q^T.
    attention = _attention()
    g = _tokens()
    K = torch.einsum("bnd,hyd->bhny", g, attention.W_K)
    Q = torch.einsum("bnd,hyd->bhny", g, attention.W_Q)
    not_self = ~torch.eye(5, dtype=torch.bool)
    first = F.scaled_dot_product_attention(Q, K, K, attn_mask=not_self, scale=attention.beta)
    second = F.scaled_dot_product_attention(
        K, Q, Q, attn_mask=not_self, scale=attention.beta
    )  # not the update's second term: that one uses omega^T (below)
    omega = attention.weights(g)
    from_queries = omega.transpose(-1, -2) @ Q
    expected = torch.einsum("bhny,hyd->bnd", first, attention.W_Q) + torch.einsum(
        "bhny,hyd->bnd", from_queries, attention.W_K
    )
    torch.testing.assert_close(attention(g), expected, atol=1e-12, rtol=0)
    # the second term is NOT an attention of the keys over the queries: the weights
    # are normalised over keys for each query, not over queries for each key
    assert (from_queries - second).abs().max() > 1e-3


def test_float32_agrees_with_float64():
    attention = _attention()
    g = _tokens()
    single = EnergyAttention(6, 3, 4)
    single.load_state_dict({k: v.float() for k, v in attention.state_dict().items()})
    torch.testing.assert_close(single(g.float()), attention(g).float(),
                               atol=1e-5, rtol=1e-5)
    assert attention(g).dtype == torch.float64


def test_keys_start_equal_to_queries_so_similar_tokens_attend_to_each_other():
    attention = EnergyAttention(6, 2, 4, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(attention.W_K, attention.W_Q)
    assert attention.W_K.data_ptr() != attention.W_Q.data_ptr()  # trained separately
    W = attention.W_Q.detach()
    coupling = torch.einsum("hyd,hye->hde", W, W)  # W_Q^T W_K, per head
    assert torch.linalg.eigvalsh(coupling).min() > -1e-6


def test_scores_are_the_keys_the_queries_and_their_scaled_products_off_the_diagonal():
    attention = _attention()
    g = _tokens()
    K, Q, S = attention.scores(g)
    assert K.shape == Q.shape == (2, 3, 5, 4) and S.shape == (2, 3, 5, 5)
    torch.testing.assert_close(K[0, 1], g[0] @ attention.W_K[1].T)
    torch.testing.assert_close(Q[0, 1], g[0] @ attention.W_Q[1].T)
    off = ~torch.eye(5, dtype=torch.bool)
    products = attention.beta * Q @ K.transpose(-1, -2)
    torch.testing.assert_close(S[..., off], products[..., off])
    assert torch.isneginf(S.diagonal(dim1=-2, dim2=-1)).all()
