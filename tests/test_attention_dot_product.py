import math

import pytest
import torch
import torch.nn.functional as F

from seqbook.attention import causal_mask, scaled_dot_product_attention


@pytest.mark.parametrize("lead", [(), (3,), (2, 4)], ids=["unbatched", "B", "B-heads"])
def test_equals_torch_with_and_without_mask(lead):
    torch.manual_seed(0)
    Q, K, V = torch.randn(*lead, 5, 8), torch.randn(*lead, 7, 8), torch.randn(*lead, 7, 3)
    output, weights = scaled_dot_product_attention(Q, K, V)
    assert torch.allclose(output, F.scaled_dot_product_attention(Q, K, V), atol=1e-6)
    mask = torch.rand(*lead, 5, 7) > 0.3
    mask[..., 0] = True
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    assert torch.allclose(output, expected, atol=1e-6)
    assert torch.allclose(output, weights @ V, atol=1e-6)
    assert weights.shape == (*lead, 5, 7)


def test_causal_and_padding_masks_broadcast():
    torch.manual_seed(1)
    Q = K = V = torch.randn(2, 3, 6, 4)  # (B, heads, T, d)
    padding = torch.tensor([[True] * 6, [True] * 4 + [False] * 2])[:, None, None, :]
    mask = padding & causal_mask(6)
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    expected = F.scaled_dot_product_attention(Q, K, V, attn_mask=mask)
    assert torch.allclose(output, expected, atol=1e-6)
    assert (weights[1, :, :, 4:] == 0).all()
    assert (weights.triu(1) == 0).all()
    is_causal = F.scaled_dot_product_attention(Q, K, V, is_causal=True)
    assert torch.allclose(
        scaled_dot_product_attention(Q, K, V, causal_mask(6))[0], is_causal, atol=1e-6
    )


def test_weights_are_convex_and_fully_masked_rows_are_zero():
    torch.manual_seed(2)
    Q, K, V = torch.randn(2, 4, 5), torch.randn(2, 6, 5), torch.randn(2, 6, 2)
    mask = torch.ones(2, 4, 6, dtype=torch.bool)
    mask[0, 1] = False
    output, weights = scaled_dot_product_attention(Q, K, V, mask)
    assert (weights >= 0).all()
    sums = weights.sum(-1)
    assert torch.allclose(sums[mask.any(-1)], torch.ones(7), atol=1e-6)
    assert torch.equal(output[0, 1], torch.zeros(2))
    assert not torch.isnan(output).any()


def test_scale_and_gradients():
    torch.manual_seed(3)
    Q = torch.randn(3, 4, requires_grad=True)
    K, V = torch.randn(5, 4), torch.randn(5, 2)
    output, _ = scaled_dot_product_attention(Q, K, V, scale=0.7)
    expected = torch.softmax(0.7 * Q @ K.T, -1) @ V
    assert torch.allclose(output, expected, atol=1e-6)
    assert torch.allclose(output, F.scaled_dot_product_attention(Q, K, V, scale=0.7), atol=1e-6)
    output.sum().backward()
    assert Q.grad is not None and torch.isfinite(Q.grad).all()


def test_default_scale_is_one_over_sqrt_d_k():
    Q, K, V = torch.randn(2, 16), torch.randn(3, 16), torch.randn(3, 1)
    _, weights = scaled_dot_product_attention(Q, K, V)
    assert torch.allclose(weights, torch.softmax(Q @ K.T / math.sqrt(16), -1), atol=1e-6)


def test_dropout_zeroes_and_rescales_but_keeps_the_weights():
    torch.manual_seed(4)
    Q, K, V = torch.randn(50, 4), torch.randn(30, 4), torch.ones(30, 1)
    output, weights = scaled_dot_product_attention(Q, K, V, dropout_p=0.5)
    assert torch.allclose(weights.sum(-1), torch.ones(50), atol=1e-6)
    # with all values 1, the output is the sum of the surviving, rescaled weights
    assert not torch.allclose(output, torch.ones(50, 1), atol=1e-3)
    assert abs(output.mean().item() - 1.0) < 0.15


def test_works_in_float64():
    Q, K, V = (torch.randn(2, 3, 4, dtype=torch.float64) for _ in range(3))
    output, weights = scaled_dot_product_attention(Q, K, V)
    assert output.dtype == weights.dtype == torch.float64


@pytest.mark.parametrize(
    "shapes, match",
    [
        (((5, 8), (7, 6), (7, 3)), r"^K must be .*the size of dimension d_k is 6"),
        (((5, 8), (7, 8), (6, 3)), r"^V must be .*the size of dimension T_k is 6"),
        (((2, 5, 8), (3, 7, 8), (3, 7, 3)), r"^K must be .*broadcast"),
        (((8,), (7, 8), (7, 3)), r"^Q must be .*"),
    ],
)
def test_bad_shapes_are_rejected(shapes, match):
    Q, K, V = (torch.randn(*s) for s in shapes)
    with pytest.raises(TypeError, match=match):
        scaled_dot_product_attention(Q, K, V)


def test_bad_masks_and_arguments_are_rejected():
    Q, K, V = torch.randn(2, 5, 4), torch.randn(2, 7, 4), torch.randn(2, 7, 3)
    with pytest.raises(TypeError, match=r"^attn_mask must be "):
        scaled_dot_product_attention(Q, K, V, torch.ones(5, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"^attn_mask must be "):
        scaled_dot_product_attention(Q, K, V, torch.ones(3, 5, 7, dtype=torch.bool))
    with pytest.raises(TypeError, match=r"^attn_mask must be "):
        scaled_dot_product_attention(Q, K, V, torch.zeros(5, 7, dtype=torch.long))
    with pytest.raises(ValueError, match="dropout_p"):
        scaled_dot_product_attention(Q, K, V, dropout_p=1.0)
    with pytest.raises(ValueError, match="dropout_p"):
        scaled_dot_product_attention(Q, K, V, dropout_p=-0.1)
    with pytest.raises(TypeError, match=r"^Q must be "):
        scaled_dot_product_attention(Q.long(), K, V)
    with pytest.raises(TypeError, match=r"^K must be "):
        scaled_dot_product_attention(Q, K.numpy(), V)
    with pytest.raises(TypeError, match=r"^is_causal must be bool"):
        scaled_dot_product_attention(Q, K, V, is_causal=1)
    with pytest.raises(ValueError, match="either attn_mask or is_causal"):
        scaled_dot_product_attention(Q, K, V, causal_mask(5, 7), is_causal=True)


@pytest.mark.parametrize("which", ["K", "V"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float64])
def test_mixed_dtypes_name_both(which, dtype):
    Q, K, V = torch.randn(2, 5, 4), torch.randn(2, 7, 4), torch.randn(2, 7, 3)
    args = dict(Q=Q, K=K, V=V)
    args[which] = args[which].to(dtype)
    with pytest.raises(TypeError, match=rf"{which} has dtype {dtype} but Q has dtype"):
        scaled_dot_product_attention(**args)


def test_float64_equals_torch_with_float_bias_bool_mask_and_is_causal():
    torch.manual_seed(5)
    Q = torch.randn(2, 3, 5, 8, dtype=torch.float64)
    K = torch.randn(2, 3, 7, 8, dtype=torch.float64)
    V = torch.randn(2, 3, 7, 4, dtype=torch.float64)
    bias = torch.randn(3, 5, 7, dtype=torch.float64)  # a per-head position bias
    bias[0, 1] = float("-inf")  # head 0, query 1: sees nothing
    bias[1, :, 2] = float("-inf")
    cases = [
        (dict(), dict()),
        (dict(attn_mask=bias), dict(attn_mask=bias)),
        (dict(attn_mask=bias > 0), dict(attn_mask=bias > 0)),
        (dict(is_causal=True), dict(is_causal=True)),  # (5, 7): aligned at the start
        (dict(scale=0.3, attn_mask=bias), dict(scale=0.3, attn_mask=bias)),
    ]
    for ours_kwargs, torch_kwargs in cases:
        output, weights = scaled_dot_product_attention(Q, K, V, **ours_kwargs)
        expected = F.scaled_dot_product_attention(Q, K, V, **torch_kwargs)
        assert output.dtype == weights.dtype == torch.float64
        assert torch.allclose(output, expected, atol=1e-12, rtol=0), ours_kwargs
    output, weights = scaled_dot_product_attention(Q, K, V, bias)
    assert torch.equal(weights[:, 0, 1], torch.zeros(2, 7))  # fully masked: 0, as torch
    assert torch.equal(weights[:, 1, :, 2], torch.zeros(2, 5))


def test_a_float_mask_must_have_the_queries_dtype_as_in_torch():
    torch.manual_seed(6)
    Q, K, V = (torch.randn(4, 6, dtype=torch.float64) for _ in range(3))
    bias = torch.zeros(4, 4, dtype=torch.float64)
    bias[:, 0] = float("-inf")
    output, weights = scaled_dot_product_attention(Q, K, V, bias)
    assert output.dtype == torch.float64 and (weights[:, 0] == 0).all()
    expected, _ = scaled_dot_product_attention(Q, K, V, bias == 0)
    assert torch.allclose(output, expected, atol=1e-12, rtol=0)
    # as torch's nn.MultiheadAttention refuses it
    mha = torch.nn.MultiheadAttention(6, 1, batch_first=True, dtype=torch.float64)
    with pytest.raises(RuntimeError, match="dtypes must be the same"):
        mha(Q[None], K[None], V[None], attn_mask=bias.float())
    with pytest.raises(TypeError, match="attn_mask has dtype torch.float32 but Q has"):
        scaled_dot_product_attention(Q, K, V, bias.float())


def test_float_bias_shifts_the_scores():
    torch.manual_seed(7)
    Q, K, V = torch.randn(3, 4), torch.randn(5, 4), torch.randn(5, 2)
    bias = torch.randn(3, 5)
    _, weights = scaled_dot_product_attention(Q, K, V, bias)
    assert torch.allclose(weights, torch.softmax(Q @ K.T / 2 + bias, -1), atol=1e-6)
