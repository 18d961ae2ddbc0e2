import pytest
import torch

from seqbook.attention import AdditiveAttention, causal_mask


def make(seed=0):
    torch.manual_seed(seed)
    attention = AdditiveAttention(query_size=3, key_size=5, hidden_size=7)
    queries, keys, values = torch.randn(2, 4, 3), torch.randn(2, 6, 5), torch.randn(2, 6, 2)
    return attention, queries, keys, values


def test_scores_follow_the_formula():
    attention, queries, keys, values = make()
    context, weights = attention(queries, keys, values)
    W_q, W_k, w_v = attention.W_q.weight, attention.W_k.weight, attention.w_v.weight[0]
    for b in range(2):
        for i in range(4):
            e = torch.stack(
                [w_v @ torch.tanh(W_q @ queries[b, i] + W_k @ keys[b, j]) for j in range(6)]
            )
            assert torch.allclose(weights[b, i], torch.softmax(e, 0), atol=1e-6)
    assert torch.allclose(context, weights @ values, atol=1e-6)
    assert torch.allclose(weights.sum(-1), torch.ones(2, 4), atol=1e-6)
    assert sum(p.numel() for p in attention.parameters()) == 7 * 3 + 7 * 5 + 7


def test_single_query_per_sequence_and_padding_mask():
    attention, queries, keys, values = make(1)
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    context, weights = attention(queries[:, 0], keys, values, mask)
    assert context.shape == (2, 2) and weights.shape == (2, 6)
    assert (weights[1, 3:] == 0).all()
    full_context, full_weights = attention(queries, keys, values, mask)
    assert torch.allclose(full_context[:, 0], context, atol=1e-6)
    # what padding holds cannot change the result
    changed = values.clone()
    changed[1, 3:] = 100.0
    keys_changed = keys.clone()
    keys_changed[1, 3:] = -50.0
    assert torch.allclose(
        attention(queries, keys_changed, changed, mask)[0], full_context, atol=1e-6
    )


def test_three_d_mask_and_fully_masked_query():
    attention, queries, keys, values = make(2)
    mask = causal_mask(4, 6).unsqueeze(0).clone()  # (1, T_q, T_k)
    context, weights = attention(queries, keys, values, mask)
    assert (weights.triu(1) == 0).all()
    mask = torch.ones(2, 4, 6, dtype=torch.bool)
    mask[0, 2] = False
    context, weights = attention(queries, keys, values, mask)
    assert torch.equal(context[0, 2], torch.zeros(2))
    assert not torch.isnan(context).any()


def test_gradients_reach_all_parameters():
    attention, queries, keys, values = make(3)
    context, _ = attention(queries, keys, values)
    context.sum().backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in attention.parameters())


@pytest.mark.parametrize(
    "args, error", [((0, 2, 2), ValueError), ((2, 2.5, 2), TypeError), ((2, 2, -1), ValueError)]
)
def test_bad_sizes(args, error):
    with pytest.raises(error):
        AdditiveAttention(*args)


def test_bad_input():
    attention, queries, keys, values = make()
    for name, args in [
        ("queries", (torch.randn(2, 4, 4), keys, values)),
        ("keys", (queries, torch.randn(2, 6, 3), values)),
        ("values", (queries, keys, torch.randn(2, 5, 2))),
        ("keys", (queries, keys[:1], values[:1])),
        ("mask", (queries, keys, values, torch.ones(2, 5, dtype=torch.bool))),
        ("mask", (queries, keys, values, torch.ones(2, 3, 6, dtype=torch.bool))),
        ("mask", (queries, keys, values, torch.ones(2, 6))),
        ("keys", (queries, keys[0], values)),
    ]:
        with pytest.raises(TypeError, match=rf"^{name} must be "):
            attention(*args)


def test_float64_follows_the_formula_to_float64_accuracy():
    torch.manual_seed(5)
    attention = AdditiveAttention(3, 5, 7).double()
    queries = torch.randn(2, 4, 3, dtype=torch.float64)
    keys = torch.randn(2, 6, 5, dtype=torch.float64)
    values = torch.randn(2, 6, 2, dtype=torch.float64)
    mask = torch.tensor([[True] * 6, [True] * 3 + [False] * 3])
    context, weights = attention(queries, keys, values, mask)
    W_q, W_k, w_v = attention.W_q.weight, attention.W_k.weight, attention.w_v.weight[0]
    e = torch.tanh((queries @ W_q.T)[:, :, None] + (keys @ W_k.T)[:, None]) @ w_v  # (B, T_q, T_k)
    expected = torch.softmax(e.masked_fill(~mask[:, None], float("-inf")), -1)
    assert context.dtype == torch.float64
    assert torch.allclose(weights, expected, atol=1e-15, rtol=1e-13)
    assert torch.allclose(context, expected @ values, atol=1e-15, rtol=1e-13)
    with pytest.raises(
        TypeError, match="values must have the dtype of the module's parameters"
    ):
        attention(queries, keys, values.float())
