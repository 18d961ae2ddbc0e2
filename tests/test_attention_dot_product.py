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
    assert torch.allclose(scaled_dot_product_attention(Q, K, V, causal_mask(6))[0], is_causal, atol=1e-6)


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
    output, weights = scaled_dot_product_attention(Q, K, V, dropout=0.5)
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
        (((5, 8), (7, 6), (7, 3)), "same d_k"),
        (((5, 8), (7, 8), (6, 3)), "one value per key"),
        (((2, 5, 8), (3, 7, 8), (3, 7, 3)), "broadcast"),
        (((8,), (7, 8), (7, 3)), "at least 2 dimensions"),
    ],
)
def test_bad_shapes_are_rejected(shapes, match):
    Q, K, V = (torch.randn(*s) for s in shapes)
    with pytest.raises(ValueError, match=match):
        scaled_dot_product_attention(Q, K, V)


def test_bad_masks_and_arguments_are_rejected():
    Q, K, V = torch.randn(2, 5, 4), torch.randn(2, 7, 4), torch.randn(2, 7, 3)
    with pytest.raises(ValueError, match="mask must broadcast"):
        scaled_dot_product_attention(Q, K, V, torch.ones(5, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="mask must broadcast"):
        scaled_dot_product_attention(Q, K, V, torch.ones(3, 5, 7, dtype=torch.bool))
    with pytest.raises(TypeError, match="boolean"):
        scaled_dot_product_attention(Q, K, V, torch.zeros(5, 7))
    with pytest.raises(ValueError, match="dropout"):
        scaled_dot_product_attention(Q, K, V, dropout=1.0)
    with pytest.raises(ValueError, match="dropout"):
        scaled_dot_product_attention(Q, K, V, dropout=-0.1)
    with pytest.raises(TypeError, match="Q"):
        scaled_dot_product_attention(Q.long(), K, V)
    with pytest.raises(TypeError, match="K"):
        scaled_dot_product_attention(Q, K.numpy(), V)
