import pytest
import torch
from torch import nn

from seqbook.attention import MultiHeadAttention, causal_mask, scaled_dot_product_attention


def torch_twin(d_model=12, num_heads=3, bias=True, seed=0, dtype=torch.float32, **kwargs):
    torch.manual_seed(seed)
    reference = nn.MultiheadAttention(
        d_model, num_heads, bias=bias, batch_first=True, dtype=dtype, **kwargs
    )
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
    output, weights = ours(x, x, x, average_attn_weights=False)
    assert torch.allclose(output, expected, atol=1e-5)
    assert torch.allclose(weights, expected_weights, atol=1e-6)
    # torch's defaults: weights averaged over the heads
    _, expected_mean = reference(x, x, x)
    _, mean = ours(x, x, x)
    assert mean.shape == (4, 6, 6)
    assert torch.allclose(mean, expected_mean, atol=1e-6)


def test_same_masks_as_torch_with_the_same_meaning():
    reference, ours = torch_twin(seed=1)
    x = torch.randn(3, 5, 12)
    lengths = torch.tensor([5, 3, 1])
    padding = torch.arange(5) >= lengths[:, None]  # (B, T), True = padding, as torch
    future = ~causal_mask(5)  # True = may not attend, as torch
    kwargs = dict(key_padding_mask=padding, attn_mask=future, average_attn_weights=False)
    expected, expected_weights = reference(x, x, x, **kwargs)
    output, weights = ours(x, x, x, **kwargs)
    assert torch.allclose(output, expected, atol=1e-5)
    assert torch.allclose(weights, expected_weights, atol=1e-6)
    assert (weights[2, :, :, 1:] == 0).all()
    # is_causal=True applies the causal mask (torch needs attn_mask as well)
    causal_output, _ = ours(x, x, x, key_padding_mask=padding, is_causal=True)
    assert torch.allclose(causal_output, expected, atol=1e-5)


def test_equals_torch_in_cross_attention_with_different_lengths():
    reference, ours = torch_twin(seed=2)
    query, memory = torch.randn(2, 4, 12), torch.randn(2, 7, 12)
    padding = torch.tensor([[False] * 7, [False] * 5 + [True] * 2])
    expected, _ = reference(query, memory, memory, key_padding_mask=padding)
    output, weights = ours(query, memory, memory, key_padding_mask=padding,
                           average_attn_weights=False)
    assert weights.shape == (2, 3, 4, 7)
    assert torch.allclose(output, expected, atol=1e-5)


def test_float64_equals_torch_with_float_masks_kdim_vdim_and_per_head_masks():
    reference, ours = torch_twin(d_model=8, num_heads=2, seed=3, dtype=torch.float64,
                                 kdim=5, vdim=3)
    assert ours.W_K.shape == (2, 5, 4) and ours.W_V.shape == (2, 3, 4)
    g = torch.Generator().manual_seed(0)
    query = torch.randn(3, 4, 8, dtype=torch.float64, generator=g)
    key = torch.randn(3, 6, 5, dtype=torch.float64, generator=g)
    value = torch.randn(3, 6, 3, dtype=torch.float64, generator=g)
    bias = torch.randn(4, 6, dtype=torch.float64, generator=g)  # additive, (T_q, T_k)
    per_head = torch.rand(3 * 2, 4, 6, generator=g) > 0.7  # torch's (B * h, T_q, T_k)
    per_head[:, :, 0] = False
    padding = torch.zeros(3, 6, dtype=torch.float64)
    padding[1, 4:] = float("-inf")  # a float key padding mask
    for kwargs in (
        dict(),
        dict(attn_mask=bias),
        dict(attn_mask=per_head),
        dict(key_padding_mask=padding, attn_mask=bias),
        dict(key_padding_mask=padding.isinf(), attn_mask=per_head),
    ):
        expected, expected_weights = reference(query, key, value, average_attn_weights=False,
                                               **kwargs)
        output, weights = ours(query, key, value, average_attn_weights=False, **kwargs)
        assert output.dtype == torch.float64
        assert torch.allclose(output, expected, atol=1e-12, rtol=0), kwargs
        assert torch.allclose(weights, expected_weights, atol=1e-12, rtol=0), kwargs


@pytest.mark.parametrize(
    "kdim, vdim, bias", [(None, None, True), (None, None, False), (5, 3, True)]
)
def test_to_torch_round_trip(kdim, vdim, bias):
    torch.manual_seed(4)
    ours = MultiHeadAttention(8, 2, 0.0, bias, kdim=kdim, vdim=vdim).double().eval()
    if bias:
        with torch.no_grad():
            for b in (ours.b_Q, ours.b_K, ours.b_V, ours.b_O):
                b.normal_()
    theirs = ours.to_torch().eval()
    assert theirs.batch_first
    assert (theirs.in_proj_weight is None) == (kdim is not None)  # separate projections
    query = torch.randn(2, 3, 8, dtype=torch.float64)
    key = torch.randn(2, 5, kdim or 8, dtype=torch.float64)
    value = torch.randn(2, 5, vdim or 8, dtype=torch.float64)
    expected, _ = theirs(query, key, value)
    output, _ = ours(query, key, value)
    assert torch.allclose(output, expected, atol=1e-12, rtol=0)
    back = MultiHeadAttention.from_torch(theirs)
    for a, b in zip(ours.parameters(), back.parameters()):
        assert torch.equal(a, b)


def test_to_torch_needs_torch_head_sizes():
    with pytest.raises(ValueError, match="d_k = d_v = d_model / num_heads"):
        MultiHeadAttention(8, 2, d_k=3, d_v=4).to_torch()


def test_need_weights_false_returns_none():
    _, ours = torch_twin()
    x = torch.randn(2, 3, 12)
    output, weights = ours(x, x, x, need_weights=False)
    assert weights is None and torch.allclose(output, ours(x, x, x)[0])


def test_per_head_masks_and_fully_masked_rows():
    _, ours = torch_twin(seed=3)
    x = torch.randn(2, 4, 12)
    ignore = torch.zeros(2, 3, 4, 4, dtype=torch.bool)  # (B, h, T_q, T_k): ours only
    ignore[0, 1, 2] = True  # head 1 of sequence 0: query 2 sees nothing
    output, weights = ours(x, x, x, attn_mask=ignore, average_attn_weights=False)
    assert torch.equal(weights[0, 1, 2], torch.zeros(4))  # torch would give NaN
    assert not torch.isnan(output).any()
    future = ~torch.ones(2, 1, 4, 4, dtype=torch.bool).tril()  # broadcast over heads
    _, weights = ours(x, x, x, attn_mask=future, average_attn_weights=False)
    assert (weights.triu(1) == 0).all()


def test_heads_are_scaled_dot_product_attention_of_the_projections():
    torch.manual_seed(4)
    mha = MultiHeadAttention(8, 2, d_k=3, d_v=5)
    with torch.no_grad():
        for b in (mha.b_Q, mha.b_K, mha.b_V, mha.b_O):
            b.normal_()
    q, k = torch.randn(2, 3, 8), torch.randn(2, 6, 8)
    output, weights = mha(q, k, k, average_attn_weights=False)
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
    assert sum(p.numel() for p in ours.parameters()) == sum(
        p.numel() for p in reference.parameters()
    )


def test_dropout_only_in_training():
    torch.manual_seed(5)
    mha = MultiHeadAttention(8, 2, dropout=0.5)
    x = torch.randn(2, 5, 8)
    mha.eval()
    assert torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])
    mha.train()
    assert not torch.equal(mha(x, x, x)[0], mha(x, x, x)[0])


def test_from_torch_copies_dtype_dropout_and_accepts_sequence_first_modules():
    reference = nn.MultiheadAttention(8, 4, dropout=0.25).double()  # batch_first=False
    ours = MultiHeadAttention.from_torch(reference)
    assert ours.W_Q.dtype == torch.float64 and ours.dropout == 0.25
    x = torch.randn(2, 3, 8, dtype=torch.float64)
    expected = reference.eval()(x.transpose(0, 1), x.transpose(0, 1), x.transpose(0, 1))[0]
    assert torch.allclose(ours.eval()(x, x, x)[0], expected.transpose(0, 1), atol=1e-12)


@pytest.mark.parametrize(
    "kwargs, error, match",
    [
        (dict(d_model=10, num_heads=3), ValueError, "num_heads must divide d_model"),
        (dict(d_model=0, num_heads=1), ValueError, "d_model"),
        (dict(d_model=8, num_heads=0), ValueError, "num_heads"),
        (dict(d_model=8, num_heads=2, d_k=0), ValueError, "d_k"),
        (dict(d_model=8, num_heads=2, kdim=0), ValueError, "kdim"),
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
    cases = [  # (query, key, value, keyword arguments), the argument named first
        ("query", (torch.randn(2, 5, 6), x, x), {}, r"\{self.d_model\}=8"),
        ("key", (x, torch.randn(2, 5, 6), x), {}, r"\{self.kdim\}=8"),
        ("query", (torch.randn(5, 8), x, x), {}, ""),
        ("value", (x, x, x[:, :4]), {}, "T_k"),
        ("key", (x, x[:1], x[:1]), {}, "B"),
        ("key_padding_mask", (x, x, x), dict(key_padding_mask=torch.ones(2, 4, dtype=torch.bool)),
         ""),
        ("attn_mask", (x, x, x), dict(attn_mask=torch.ones(4, 5, dtype=torch.bool)), ""),
        ("attn_mask", (x, x, x), dict(attn_mask=torch.ones(2, 3, 5, 5, dtype=torch.bool)), ""),
        ("attn_mask", (x, x, x), dict(attn_mask=torch.ones(2, 5, 5, dtype=torch.bool)), ""),
        ("key_padding_mask", (x, x, x), dict(key_padding_mask=torch.zeros(2, 5, dtype=torch.long)),
         ""),
    ]
    for name, args, kwargs, detail in cases:
        with pytest.raises(TypeError, match=rf"^{name} must be .*{detail}"):
            mha(*args, **kwargs)
    with pytest.raises(TypeError, match=r"^need_weights must be bool"):
        mha(x, x, x, None, torch.ones(5, 5, dtype=torch.bool))  # torch's positional order
    with pytest.raises(TypeError, match=r"query must have the dtype of the module's parameters"):
        mha(x.double(), x, x)
    with pytest.raises(TypeError, match=r"value must have the dtype of the module's parameters"):
        mha(x, x, x.half())


def test_from_torch_rejects_unsupported_modules():
    with pytest.raises(TypeError, match="MultiheadAttention"):
        MultiHeadAttention.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="add_bias_kv"):
        MultiHeadAttention.from_torch(nn.MultiheadAttention(8, 2, add_bias_kv=True))


@pytest.mark.parametrize("training", [True, False])
def test_from_torch_copies_the_training_mode(training):
    reference = nn.MultiheadAttention(8, 2, dropout=0.1, batch_first=True).train(training)
    assert MultiHeadAttention.from_torch(reference).training is training
