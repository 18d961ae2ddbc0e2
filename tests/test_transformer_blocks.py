import pytest
import torch
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
    keep = torch.arange(6) < torch.tensor([6, 4, 2])[:, None]  # (B, T)
    expected = reference(x, src_key_padding_mask=~keep)
    got = ours(x, key_padding_mask=keep)
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
    keep = torch.tensor([[True] * 7, [True] * 3 + [False] * 4])
    future = ~torch.ones(5, 5, dtype=torch.bool).tril()  # torch: True = ignore
    expected = reference(y, memory, tgt_mask=future, memory_key_padding_mask=~keep)
    got = ours(y, memory, memory_key_padding_mask=keep)
    assert torch.allclose(got, expected, atol=1e-5)
    assert ours.last_cross_attention.shape == (2, 2, 5, 7)
    assert (ours.last_cross_attention[1, :, :, 3:] == 0).all()
    assert (ours.last_self_attention.triu(1) == 0).all()


def test_decoder_output_does_not_depend_on_the_future():
    torch.manual_seed(2)
    block = DecoderBlock(8, 2, 16).eval()
    y, memory = torch.randn(1, 6, 8), torch.randn(1, 4, 8)
    changed = y.clone()
    changed[:, 4:] = torch.randn(1, 2, 8)
    a, b = block(y, memory), block(changed, memory)
    assert torch.allclose(a[:, :4], b[:, :4], atol=1e-6)
    assert not torch.allclose(a[:, 4:], b[:, 4:])
    # without the causal mask the past does see the future
    a, b = block(y, memory, causal=False), block(changed, memory, causal=False)
    assert not torch.allclose(a[:, :4], b[:, :4])


def test_encoder_block_with_causal_attn_mask_and_norm_switch():
    torch.manual_seed(3)
    block = EncoderBlock(8, 2, 16, norm_first=False)
    x = torch.randn(2, 5, 8)
    mask = torch.ones(5, 5, dtype=torch.bool).tril()
    out = block(x, attn_mask=mask)
    assert out.shape == (2, 5, 8)
    assert (block.last_attention.triu(1) == 0).all()
    # post-norm: every output vector is normalised
    assert torch.allclose(out.mean(-1), torch.zeros(2, 5), atol=1e-5)


def test_feed_forward_is_position_wise():
    torch.manual_seed(4)
    ffn = FeedForward(6, 12)
    x = torch.randn(2, 5, 6)
    assert torch.allclose(ffn(x)[:, 2], ffn(x[:, 2:3])[:, 0], atol=1e-6)


def test_bad_input():
    with pytest.raises(ValueError, match="num_heads must divide d_model"):
        EncoderBlock(10, 3, 16)
    with pytest.raises(ValueError, match="num_heads must divide d_model"):
        DecoderBlock(10, 4, 16)
    with pytest.raises(ValueError, match="dropout"):
        EncoderBlock(8, 2, 16, dropout=1.5)
    with pytest.raises(ValueError, match="d_ff"):
        FeedForward(8, 0)
    with pytest.raises(ValueError, match="3 dimensions"):
        EncoderBlock(8, 2, 16)(torch.randn(5, 8))
    with pytest.raises(ValueError, match="d_model=8"):
        EncoderBlock(8, 2, 16)(torch.randn(2, 5, 6))
    with pytest.raises(ValueError, match="key_padding_mask"):
        EncoderBlock(8, 2, 16)(torch.randn(2, 5, 8), key_padding_mask=torch.ones(2, 4).bool())
    with pytest.raises(TypeError, match="causal"):
        DecoderBlock(8, 2, 16)(torch.randn(1, 2, 8), torch.randn(1, 3, 8), causal=1)
    with pytest.raises(TypeError, match="TransformerEncoderLayer"):
        EncoderBlock.from_torch(nn.Linear(2, 2))
    with pytest.raises(ValueError, match="ReLU"):
        EncoderBlock.from_torch(
            nn.TransformerEncoderLayer(8, 2, 16, activation="gelu", batch_first=True)
        )
    with pytest.raises(ValueError, match="batch_first"):
        DecoderBlock.from_torch(nn.TransformerDecoderLayer(8, 2, 16))
