import pytest
import torch
from torch import nn

from seqbook.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention


def torch_twin(d_model=12, num_heads=3, bias=True, seed=0):
    torch.manual_seed(seed)
    reference = nn.MultiheadAttention(d_model, num_heads, bias=bias, batch_first=True)
    if bias:  # torch starts its biases at zero; make them count
        with torch.no_grad():
            reference.in_proj_bias.normal_()
            reference.out_proj.bias.normal_()
    return reference.eval(), MultiHeadAttention.from_torch(reference).eval()


@pytest.mark.parametrize("bias", [True, False])
def test_equals_torch_self_attention(bias):
    reference, ours = torch_twin(bias=bias)
    x = torch.randn(4, 6, 12)
    expected, expected_weights = reference(x, x, x, average_attn_weights=False)
    output, weights = ours(x, x, x)
    assert torch.allclose(output, expected, atol=1e-5)
    assert torch.allclose(weights, expected_weights, atol=1e-6)


def test_equals_torch_with_key_padding_and_causal_masks():
    reference, ours = torch_twin(seed=1)
    x = torch.randn(3, 5, 12)
    lengths = torch.tensor([5, 3, 1])
    keep = torch.arange(5) < lengths[:, None]  # (B, T), True = real token
    causal = causal_mask(5)
    expected, expected_weights = reference(
        x, x, x, key_padding_mask=~keep, attn_mask=~causal, average_attn_weights=False
    )
    output, weights = ours(x, x, x, key_padding_mask=keep, attn_mask=causal)
    assert torch.allclose(output, expected, atol=1e-5)
    assert torch.allclose(weights, expected_weights, atol=1e-6)
    assert (weights[2, :, :, 1:] == 0).all()


def test_equals_torch_in_cross_attention_with_different_lengths():
    reference, ours = torch_twin(seed=2)
    query, memory = torch.randn(2, 4, 12), torch.randn(2, 7, 12)
    keep = torch.tensor([[True] * 7, [True] * 5 + [False] * 2])
    expected, _ = reference(query, memory, memory, key_padding_mask=~keep)
    output, weights = ours(query, memory, memory, key_padding_mask=keep)
    assert weights.shape == (2, 3, 4, 7)
    assert torch.allclose(output, expected, atol=1e-5)


def test_per_head_masks_and_fully_masked_rows():
    _, ours = torch_twin(seed=3)
    x = torch.randn(2, 4, 12)
    mask = torch.ones(2, 3, 4, 4, dtype=torch.bool)
    mask[0, 1, 2] = False  # head 1 of sequence 0: query 2 sees nothing
    output, weights = ours(x, x, x, attn_mask=mask)
    assert torch.equal(weights[0, 1, 2], torch.zeros(4))
    assert not torch.isnan(output).any()
    three_d = torch.ones(2, 4, 4, dtype=torch.bool).tril()
    _, weights = ours(x, x, x, attn_mask=three_d)
    assert (weights.triu(1) == 0).all()


def test_heads_are_scaled_dot_product_attention_of_the_projections():
    torch.manual_seed(4)
    mha = MultiHeadAttention(8, 2, d_k=3, d_v=5)
    with torch.no_grad():
        for b in (mha.b_Q, mha.b_K, mha.b_V, mha.b_O):
            b.normal_()
    q, k = torch.randn(2, 3, 8), torch.randn(2, 6, 8)
    output, weights = mha(q, k, k)
    heads = []
    for i in range(2):
        head, w = scaled_dot_product_attention(
            q @ mha.W_Q[i] + mha.b_Q[i], k @ mha.W_K[i] + mha.b_K[i], k @ mha.W_V[i] + mha.b_V[i]
        )
        heads.append(head)
        assert torch.allclose(w, weights[:, i], atol=1e-6)
    expected = torch.cat(heads, dim=-1) @ mha.W_O + mha.b_O
    assert torch.allclose(output, expected, atol=1e-5)
    assert mha.W_O.shape == (10, 8)


def test_parameter_count_equals_torch():
    reference, ours = torch_twin()
    assert sum(p.numel() for p in ours.parameters()) == sum(p.numel() for p in reference.parameters())


def test_dropout_only_in_training():
    torch.manual_seed(5)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 5, 8)
    mha.eval()
    assert torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])
    mha.train()
    assert not torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])


def test_from_torch_copies_dtype():
    reference = nn.MultiheadAttention(8, 4, batch_first=True).double()
    ours = MultiHeadAttention.from_torch(reference)
    assert ours.W_Q.dtype == torch.float64
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    assert torch.allclose(ours(x, x, x)[0], reference(x, x, x)[0], atol=1e-10)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(d_model=10, num_heads=3), ValueError, "num_heads must divide d_model"),
        (dict(d_model=0, num_heads=1), ValueError, "d_model"),
        (dict(d_model=8, num_heads=0), ValueError, "num_heads"),
        (dict(d_model=8, num_heads=2, d_k=0), ValueError, "d_k"),
        (dict(d_model=8, num_heads=2, dropout=1.0), ValueError, "dropout"),
        (dict(d_model=8, num_heads=2, bias=1), TypeError, "bias"),
    ],
)
def test_bad_constructor_arguments(kwargs, error, match):
    with pytest.raises(error, match=match):
        MultiHeadAttention(**kwargs)


def test_explicit_head_sizes_need_no_divisibility():
    mha = MultiHeadAttention(10, 3, d_k=4, d_v=2)
    x = torch.randn(1, 2, 10)
    assert mha(x, x, x)[0].shape == (1, 2, 10)


def test_bad_forward_input():
    mha = MultiHeadAttention(8, 2)
    x = torch.randn(2, 5, 8)
    with pytest.raises(ValueError, match="d_model=8"):
        mha(torch.randn(2, 5, 6), x, x)
    with pytest.raises(ValueError, match="query"):
        mha(torch.randn(5, 8), x, x)
    with pytest.raises(ValueError, match="same length"):
        mha(x, x, x[:, :4])
    with pytest.raises(ValueError, match="batch size"):
        mha(x, x[:1], x[:1])
    with pytest.raises(ValueError, match="key_padding_mask must broadcast"):
        mha(x, x, x, key_padding_mask=torch.ones(2, 4, dtype=torch.bool))
    with pytest.raises(ValueError, match="attn_mask must broadcast"):
        mha(x, x, x, attn_mask=torch.ones(4, 5, dtype=torch.bool))
    with pytest.raises(ValueError, match="attn_mask must broadcast"):
        mha(x, x, x, attn_mask=torch.ones(2, 3, 5, 5, dtype=torch.bool))
    with pytest.raises(TypeError, match="boolean"):
        mha(x, x, x, key_padding_mask=torch.zeros(2, 5))


def test_from_torch_rejects_unsupported_modules():
    with pytest.raises(TypeError, match="MultiheadAttention"):
        MultiHeadAttention.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="kdim"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, kdim=4, vdim=4))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))
