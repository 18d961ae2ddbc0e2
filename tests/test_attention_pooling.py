import pytest
import torch

from seqbook.attention import AttentionPooling


def test_pooling_follows_the_formula_and_is_order_invariant():
    torch.manual_seed(0)
    pool = AttentionPooling(4, 6)
    bags = torch.randn(3, 5, 4)
    pooled, weights = pool(bags)
    scores = (torch.tanh(bags @ pool.W.weight.T + pool.W.bias) @ pool.w.weight.T).squeeze(-1)
    assert torch.allclose(weights, torch.softmax(scores, -1), atol=1e-6)
    assert torch.allclose(pooled, (weights[..., None] * bags).sum(1), atol=1e-6)
    permutation = torch.randperm(5)
    shuffled, shuffled_weights = pool(bags[:, permutation])
    assert torch.allclose(shuffled, pooled, atol=1e-6)
    assert torch.allclose(shuffled_weights, weights[:, permutation], atol=1e-6)


def test_padding_does_not_change_a_bag():
    torch.manual_seed(1)
    pool = AttentionPooling(3, 4)
    bag = torch.randn(1, 4, 3)
    padded = torch.cat([bag, torch.full((1, 2, 3), 9.0)], dim=1)
    mask = torch.tensor([[True] * 4 + [False] * 2])
    assert torch.allclose(pool(padded, mask)[0], pool(bag)[0], atol=1e-6)
    assert (pool(padded, mask)[1][0, 4:] == 0).all()


def test_bad_input():
    pool = AttentionPooling(3, 4)
    with pytest.raises(TypeError, match=r"^bags must be .*\{self.input_size\}=3"):
        pool(torch.randn(2, 5, 4))
    with pytest.raises(TypeError, match="^bags must be "):
        pool(torch.randn(5, 3))
    with pytest.raises(TypeError, match="^mask must be "):
        pool(torch.randn(2, 5, 3), torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="hidden_size"):
        AttentionPooling(3, 0)


def test_float64_follows_the_formula_to_float64_accuracy():
    torch.manual_seed(1)
    pool = AttentionPooling(4, 6).double()
    bags = torch.randn(3, 5, 4, dtype=torch.float64)
    mask = torch.tensor([[True] * 5, [True] * 2 + [False] * 3, [True] * 4 + [False]])
    pooled, weights = pool(bags, mask)
    scores = (torch.tanh(bags @ pool.W.weight.T + pool.W.bias) @ pool.w.weight.T).squeeze(-1)
    expected = torch.softmax(scores.masked_fill(~mask, float("-inf")), -1)
    assert pooled.dtype == torch.float64
    assert torch.allclose(weights, expected, atol=1e-15, rtol=1e-13)
    assert torch.allclose(pooled, (expected[..., None] * bags).sum(1), atol=1e-15, rtol=1e-13)
    with pytest.raises(TypeError, match="bags must have the dtype of the module's parameters"):
        pool(bags.float())
