import pytest
import torch
import torch.nn.functional as F
from torch import nn

from seqbook.transformer import DecoderBlock, EncoderBlock, FeedForward


def randomise(module):
    """Non-trivial layer-norm gains and biases (torch starts them at 1 and 0)."""
    with torch.no_grad():
        for name, p in module.named_parameters():
            if "norm" in name or "bias" in name:
                p.normal_(std=0.5)
    return module


@pytest.mark.parametrize("norm_first", [True, False])
def test_encoder_block_equals_torch(norm_first):
    torch.manual_seed(0)
    reference = nn.TransformerEncoderLayer(
        16, 4, 32, dropout=0.0, batch_first=True, norm_first=norm_first
    )
    reference = randomise(reference).eval()
    ours = EncoderBlock.from_torch(reference).eval()
    assert ours.norm_first == norm_first
    x = torch.randn(3, 6, 16)
    padding = torch.arange(6) >= torch.tensor([6, 4, 2])[:, None]  # (B, T), True = pad
    expected = reference(x, src_key_padding_mask=padding)
    got = ours(x, src_key_padding_mask=padding)  # the same call, the same mask
    keep = ~padding
    # torch's fast path may return zeros at padded positions: compare real ones
    assert torch.allclose(got[keep], expected[keep], atol=1e-5)
    assert ours.last_attention.shape == (3, 4, 6, 6)
    assert (ours.last_attention[1, :, :, 4:] == 0).all()
    assert torch.allclose(ours.last_attention.sum(-1), torch.ones(3, 4, 6), atol=1e-6)


@pytest.mark.parametrize("norm_first", [True, False])
def test_decoder_block_equals_torch(norm_first):
    torch.manual_seed(1)
    reference = nn.TransformerDecoderLayer(
        16, 2, 24, dropout=0.0, batch_first=True, norm_first=norm_first
    )
    reference = randomise(reference).eval()
    ours = DecoderBlock.from_torch(reference).eval()
    y, memory = torch.randn(2, 5, 16), torch.randn(2, 7, 16)
    padding = torch.tensor([[False] * 7, [False] * 3 + [True] * 4])
    future = ~torch.ones(5, 5, dtype=torch.bool).tril()  # True = ignore
    kwargs = dict(tgt_mask=future, memory_key_padding_mask=padding)
    expected = reference(y, memory, **kwargs)
    assert torch.allclose(ours(y, memory, **kwargs), expected, atol=1e-5)
    assert torch.allclose(ours(y, memory, memory_key_padding_mask=padding, tgt_is_causal=True),
                          expected, atol=1e-5)
    assert ours.last_cross_attention.shape == (2, 2, 5, 7)
    assert (ours.last_cross_attention[1, :, :, 3:] == 0).all()
    assert (ours.last_self_attention.triu(1) == 0).all()


def torch_layers(dtype=torch.float64, **options):
    torch.manual_seed(2)
    kwargs = dict(dropout=0.0, batch_first=True, dtype=dtype, **options)
    encoder = randomise(nn.TransformerEncoderLayer(12, 3, 20, **kwargs)).eval()
    decoder = randomise(nn.TransformerDecoderLayer(12, 3, 20, **kwargs)).eval()
    return encoder, decoder


OPTIONS = [
    dict(),
    dict(norm_first=True),
    dict(activation="gelu"),
    dict(activation=F.silu, norm_first=True),
    dict(activation=nn.GELU(approximate="tanh")),
    dict(layer_norm_eps=1e-2),
    dict(bias=False),
    dict(bias=False, norm_first=True, activation="gelu"),
]


def option_id(options: dict) -> str:
    """A test id that is the same in every process (no object addresses in it)."""
    def name(value: object) -> str:
        return getattr(value, "__name__", None) or repr(value)
    return ", ".join(f"{k}={name(v)}" for k, v in options.items()) or "defaults"


@pytest.mark.filterwarnings("ignore:Support for mismatched key_padding_mask")  # torch's
@pytest.mark.parametrize("options", OPTIONS, ids=[option_id(o) for o in OPTIONS])
def test_float64_equals_torch_with_every_option_and_every_mask(options):
    torch_enc, torch_dec = torch_layers(**options)
    enc, dec = EncoderBlock.from_torch(torch_enc).eval(), DecoderBlock.from_torch(torch_dec).eval()
    g = torch.Generator().manual_seed(3)
    src = torch.randn(2, 6, 12, dtype=torch.float64, generator=g)
    tgt = torch.randn(2, 4, 12, dtype=torch.float64, generator=g)
    padding = torch.tensor([[False] * 6, [False] * 4 + [True] * 2])
    float_padding = torch.zeros(2, 6, dtype=torch.float64).masked_fill(padding, float("-inf"))
    bias = torch.randn(6, 6, dtype=torch.float64, generator=g)  # a position bias
    future = nn.Transformer.generate_square_subsequent_mask(4, dtype=torch.float64)
    per_head = torch.rand(2 * 3, 4, 6, generator=g) > 0.8  # (B * h, T, S)
    per_head[..., 0] = False
    for kwargs in (dict(), dict(src_key_padding_mask=padding),
                   dict(src_mask=bias, src_key_padding_mask=float_padding)):
        expected = torch_enc(src, **kwargs)
        got = enc(src, **kwargs)
        keep = ~padding if "src_key_padding_mask" in kwargs else torch.ones(2, 6, dtype=torch.bool)
        assert got.dtype == torch.float64
        assert torch.allclose(got[keep], expected[keep], atol=1e-12, rtol=0), kwargs
    memory = enc(src, src_key_padding_mask=padding)
    for kwargs in (dict(tgt_mask=future),
                   dict(tgt_mask=future, memory_key_padding_mask=padding),
                   dict(tgt_mask=future > 0, memory_mask=per_head),
                   dict(tgt_mask=future, memory_key_padding_mask=float_padding,
                        tgt_key_padding_mask=torch.tensor([[False] * 4, [False] * 3 + [True]]))):
        expected = torch_dec(tgt, memory, **kwargs)
        got = dec(tgt, memory, **kwargs)
        assert torch.allclose(got, expected, atol=1e-12, rtol=0), kwargs


@pytest.mark.parametrize("options", OPTIONS, ids=[option_id(o) for o in OPTIONS])
def test_to_torch_round_trip(options):
    torch.manual_seed(4)
    enc = randomise(EncoderBlock(12, 3, 20, dropout=0.0, **options)).double().eval()
    dec = randomise(DecoderBlock(12, 3, 20, dropout=0.0, **options)).double().eval()
    torch_enc, torch_dec = enc.to_torch().eval(), dec.to_torch().eval()
    assert torch_enc.norm_first == enc.norm_first
    assert torch_enc.linear1.weight.dtype == torch.float64
    src = torch.randn(2, 6, 12, dtype=torch.float64)
    tgt = torch.randn(2, 4, 12, dtype=torch.float64)
    assert torch.allclose(torch_enc(src), enc(src), atol=1e-12, rtol=0)
    memory = enc(src)
    future = ~torch.ones(4, 4, dtype=torch.bool).tril()
    assert torch.allclose(torch_dec(tgt, memory, tgt_mask=future),
                          dec(tgt, memory, tgt_mask=future), atol=1e-12, rtol=0)
    again = EncoderBlock.from_torch(torch_enc)
    for a, b in zip(enc.state_dict().values(), again.state_dict().values()):
        assert torch.equal(a, b)


def test_from_torch_accepts_sequence_first_layers():
    torch.manual_seed(5)
    layer = nn.TransformerEncoderLayer(8, 2, 16, dropout=0.0).eval()  # batch_first=False
    ours = EncoderBlock.from_torch(layer).eval()
    x = torch.randn(2, 5, 8)
    assert torch.allclose(ours(x), layer(x.transpose(0, 1)).transpose(0, 1), atol=1e-5)


def test_defaults_are_torchs():
    ours, theirs = EncoderBlock(8, 2, 16), nn.TransformerEncoderLayer(8, 2, 16)
    assert ours.norm_first is theirs.norm_first is False
    assert ours.add_norm_1.dropout.p == theirs.dropout1.p == 0.1
    assert ours.self_attention.dropout == theirs.self_attn.dropout == 0.1
    assert ours.add_norm_1.norm.eps == theirs.norm1.eps


def test_decoder_output_does_not_depend_on_the_future():
    torch.manual_seed(2)
    block = DecoderBlock(8, 2, 16).eval()
    y, memory = torch.randn(1, 6, 8), torch.randn(1, 4, 8)
    changed = y.clone()
    changed[:, 4:] = torch.randn(1, 2, 8)
    a, b = block(y, memory, tgt_is_causal=True), block(changed, memory, tgt_is_causal=True)
    assert torch.allclose(a[:, :4], b[:, :4], atol=1e-6)
    assert not torch.allclose(a[:, 4:], b[:, 4:])
    # without the causal mask (torch's default) the past does see the future
    a, b = block(y, memory), block(changed, memory)
    assert not torch.allclose(a[:, :4], b[:, :4])


def test_encoder_block_with_causal_mask_and_norm_switch():
    torch.manual_seed(3)
    block = EncoderBlock(8, 2, 16)
    x = torch.randn(2, 5, 8)
    out = block(x, src_mask=~torch.ones(5, 5, dtype=torch.bool).tril())
    assert out.shape == (2, 5, 8)
    assert (block.last_attention.triu(1) == 0).all()
    # post-norm: every output vector is normalised
    assert torch.allclose(out.mean(-1), torch.zeros(2, 5), atol=1e-5)
    block(x, is_causal=True)
    assert (block.last_attention.triu(1) == 0).all()


def test_feed_forward_is_position_wise_and_equals_the_formula_in_float64():
    torch.manual_seed(4)
    ffn = FeedForward(6, 12, activation="gelu").double()
    x = torch.randn(2, 5, 6, dtype=torch.float64)
    assert torch.allclose(ffn(x)[:, 2], ffn(x[:, 2:3])[:, 0], atol=1e-12)
    W1, b1 = ffn.linear_1.weight, ffn.linear_1.bias
    W2, b2 = ffn.linear_2.weight, ffn.linear_2.bias
    expected = F.gelu(x @ W1.T + b1) @ W2.T + b2
    assert torch.allclose(ffn(x), expected, atol=1e-13, rtol=0)


def test_bad_input():
    with pytest.raises(ValueError, match="num_heads must divide d_model"):
        EncoderBlock(10, 3, 16)
    with pytest.raises(ValueError, match="num_heads must divide d_model"):
        DecoderBlock(10, 4, 16)
    with pytest.raises(ValueError, match="dropout"):
        EncoderBlock(8, 2, 16, dropout=1.5)
    with pytest.raises(ValueError, match="d_ff"):
        FeedForward(8, 0)
    with pytest.raises(ValueError, match="activation must be 'relu', 'gelu' or a callable"):
        EncoderBlock(8, 2, 16, activation="tanh")
    with pytest.raises(ValueError, match="layer_norm_eps"):
        DecoderBlock(8, 2, 16, layer_norm_eps=0.0)
    with pytest.raises(TypeError, match="bias"):
        EncoderBlock(8, 2, 16, bias=None)
    with pytest.raises(TypeError, match=r"^src must be Float\[Tensor, 'B T \{self.d_model\}'\]"):
        EncoderBlock(8, 2, 16)(torch.randn(5, 8))
    with pytest.raises(TypeError, match=r"^src must be .*\{self.d_model\}=8"):
        EncoderBlock(8, 2, 16)(torch.randn(2, 5, 6))
    with pytest.raises(TypeError, match=r"^src_key_padding_mask must be .*T=5"):
        EncoderBlock(8, 2, 16)(torch.randn(2, 5, 8), src_key_padding_mask=torch.ones(2, 4).bool())
    with pytest.raises(TypeError, match="^src_mask must be "):
        EncoderBlock(8, 2, 16)(torch.randn(2, 5, 8), src_mask=torch.ones(4, 4).bool())
    with pytest.raises(TypeError, match="^tgt_is_causal must be bool"):
        DecoderBlock(8, 2, 16)(torch.randn(1, 2, 8), torch.randn(1, 3, 8), tgt_is_causal=1)
    with pytest.raises(TypeError, match=r"^x must be .*\{self.d_model\}=8"):
        FeedForward(8, 16)(torch.randn(2, 3, 5))
    with pytest.raises(TypeError, match="^module must be .*TransformerEncoderLayer"):
        EncoderBlock.from_torch(nn.Linear(2, 2))


def test_decoder_block_names_the_memory_in_its_messages():
    block = DecoderBlock(8, 2, 16)
    tgt = torch.randn(2, 3, 8)
    memory_shape = r"^memory must be Float\[Tensor, 'B S \{self.d_model\}'\]"
    with pytest.raises(TypeError, match=memory_shape + r".*the size of dimension B is 3"):
        block(tgt, torch.randn(3, 4, 8))
    with pytest.raises(TypeError, match=memory_shape + r".*\{self.d_model\}=8"):
        block(tgt, torch.randn(2, 4, 6))
    with pytest.raises(TypeError, match=r"^memory_key_padding_mask must be .*S=4"):
        block(tgt, torch.randn(2, 4, 8), memory_key_padding_mask=torch.zeros(2, 3).bool())
    with pytest.raises(TypeError, match="^memory_mask must be "):
        block(tgt, torch.randn(2, 4, 8), memory_mask=torch.zeros(3, 3).bool())
    with pytest.raises(TypeError, match="memory must have the dtype of the module's parameters"):
        block(tgt, torch.randn(2, 4, 8, dtype=torch.float64))


@pytest.mark.parametrize("training", [True, False])
def test_from_torch_copies_the_training_mode(training):
    encoder = nn.TransformerEncoderLayer(8, 2, 16, batch_first=True).train(training)
    decoder = nn.TransformerDecoderLayer(8, 2, 16, batch_first=True).train(training)
    for ours in (EncoderBlock.from_torch(encoder), DecoderBlock.from_torch(decoder)):
        assert all(module.training is training for module in ours.modules())
