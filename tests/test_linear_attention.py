"""Linear attention and its memory, against trusted twins: torch's softmax attention
with the same kernel, a direct sum, and autograd for the delta rule."""

import pytest
import torch
import torch.nn.functional as F

from seqbook.linear_attention import (
    associative_memory,
    delta_rule_attention,
    elu_feature_map,
    linear_attention,
    linear_attention_chunked,
    linear_attention_recurrent,
)


def _qkv(B=2, T=37, d_k=5, d_v=3, seed=0, dtype=torch.float64):
    g = torch.Generator().manual_seed(seed)
    Q, K = elu_feature_map(torch.randn(2, B, T, d_k, generator=g, dtype=dtype))
    return Q, K, torch.randn(B, T, d_v, generator=g, dtype=dtype)


def test_the_three_forms_agree_in_float64():
    Q, K, V = _qkv()
    parallel = linear_attention(Q, K, V)
    assert (linear_attention_recurrent(Q, K, V) - parallel).abs().max() < 1e-12
    for chunk in (1, 4, 16, 37, 100):
        assert (linear_attention_chunked(Q, K, V, chunk) - parallel).abs().max() < 1e-12


def test_parallel_form_is_torch_attention_with_the_kernel_as_its_weights():
    # softmax(log sim) = sim / sum(sim): torch's attention with the log-kernel as an
    # additive mask and zero scores computes kernel-weighted causal attention
    Q, K, V = _qkv()
    T = Q.shape[1]
    log_sim = torch.log(Q @ K.transpose(1, 2))
    log_sim = log_sim.masked_fill(~torch.ones(T, T, dtype=torch.bool).tril(), float("-inf"))
    zeros = torch.zeros_like(Q)
    twin = F.scaled_dot_product_attention(zeros, zeros, V, attn_mask=log_sim)
    assert (linear_attention(Q, K, V) - twin).abs().max() < 1e-12


def test_state_is_the_sum_of_outer_products():
    Q, K, V = _qkv()
    S = associative_memory(K, V, "hebbian")
    assert (S - V.transpose(1, 2) @ K).abs().max() < 1e-12


def test_delta_rule_is_one_gradient_step_on_the_squared_error():
    _, K, V = _qkv(T=6)
    K = F.normalize(K, dim=-1)
    S = torch.zeros(2, 3, 5, dtype=torch.float64)
    for t in range(6):
        S = S.detach().requires_grad_()
        loss = 0.5 * ((S @ K[:, t, :, None])[:, :, 0] - V[:, t]).pow(2).sum()
        (grad,) = torch.autograd.grad(loss, S)
        S = S - 0.7 * grad
    assert (associative_memory(K, V, "delta", beta=0.7) - S).abs().max() < 1e-12


def test_delta_rule_attention_reads_the_memory_after_each_write():
    Q, K, V = _qkv(T=9)
    K = F.normalize(K, dim=-1)
    Y = delta_rule_attention(Q, K, V, beta=0.5)
    for t in range(9):
        S = associative_memory(K[:, : t + 1], V[:, : t + 1], "delta", beta=0.5)
        assert (Y[:, t] - (S @ Q[:, t, :, None])[:, :, 0]).abs().max() < 1e-12


def test_unit_keys_and_beta_one_store_the_last_pair_exactly():
    _, K, V = _qkv(T=50, d_k=8)
    K = F.normalize(K, dim=-1)
    S = associative_memory(K, V, "delta")
    assert torch.allclose((S @ K[:, -1, :, None])[:, :, 0], V[:, -1], atol=1e-12)


def test_forms_run_in_float32_and_keep_the_dtype():
    Q, K, V = _qkv(dtype=torch.float32)
    for form in (linear_attention, linear_attention_recurrent, linear_attention_chunked):
        assert form(Q, K, V).dtype == torch.float32


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        ({"phi_Q": torch.ones(2, 3)}, TypeError, r"^phi_Q must be Float\[Tensor, 'B T d_k'\]"),
        ({"phi_K": torch.ones(1, 4, 2)}, TypeError,
         r"^phi_K must be .*the size of dimension T is 4 which does not equal the existing "
         r"value of 3"),
        ({"V": torch.ones(1, 4, 3)}, TypeError, r"^V must be .*dimension T is 4"),
        ({"V": torch.ones(1, 3, 2, dtype=torch.float64)}, TypeError, "^V has dtype torch.float64"),
        ({"phi_K": torch.ones(1, 3, 2, dtype=torch.int64)}, TypeError,
         r"^phi_K must be .*dtype int64"),
        ({"phi_Q": [[1.0]]}, TypeError, "^phi_Q must be"),
    ],
)
def test_bad_input_names_the_argument(kwargs, error, match):
    args = {"phi_Q": torch.ones(1, 3, 2), "phi_K": torch.ones(1, 3, 2), "V": torch.ones(1, 3, 2)}
    args.update(kwargs)
    for form in (linear_attention, linear_attention_recurrent, linear_attention_chunked):
        with pytest.raises(error, match=match):
            form(**args)


def test_bad_memory_arguments():
    K, V = torch.ones(1, 3, 2), torch.ones(1, 3, 2)
    with pytest.raises(ValueError, match="rule must be"):
        associative_memory(K, V, "oja")
    with pytest.raises(ValueError, match="beta must be > 0"):
        associative_memory(K, V, "delta", beta=0.0)
    with pytest.raises(TypeError, match="^chunk_size must be int"):
        linear_attention_chunked(K, K, V, chunk_size=2.0)
    with pytest.raises(TypeError, match=r"^K must be .*dimension T is 3 which does not equal "
                       r"the existing value of 2"):
        delta_rule_attention(torch.ones(1, 2, 2), K, V)
    with pytest.raises(TypeError, match="^K has dtype torch.float32 but Q has dtype torch.float64"):
        delta_rule_attention(K.double(), K, V)
    with pytest.raises(TypeError, match=r"^V must be .*dimension B is 2"):
        associative_memory(K, torch.ones(2, 3, 2))
    with pytest.raises(TypeError, match="^beta must be float"):
        delta_rule_attention(K, K, V, beta="1")
    empty = torch.ones(1, 0, 2)  # no steps to loop over
    with pytest.raises(ValueError, match=r"Q must have shape \(B, T, d_k\) with T >= 1"):
        delta_rule_attention(empty, empty, empty)
    for form in (linear_attention_recurrent, linear_attention_chunked):
        with pytest.raises(ValueError, match=r"phi_Q must have shape \(B, T, d_k\) with "
                           r"T >= 1, got \(1, 0, 2\)"):
            form(empty, empty, empty)
    assert linear_attention(empty, empty, empty).shape == (1, 0, 2)  # no loop: fine
