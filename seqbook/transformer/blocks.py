r"""The transformer's encoder and decoder blocks (Vaswani et al., 2017).

Shape letters: ``B`` batch, ``T`` target (or encoder) positions, ``S`` source
positions (the encoder output, "memory"), ``h`` heads, ``d_model`` the model width,
``d_ff`` the hidden width of the feed-forward sublayer.

Masks follow the book's convention (:mod:`seqbook.attention.masking`): **True =
attend**. ``torch.nn.TransformerEncoderLayer`` and ``TransformerDecoderLayer`` use
True = ignore for their boolean masks; pass ``~mask`` to them.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from seqbook._checks import check_positive_int, check_real, check_tensor
from seqbook.attention import MultiHeadAttention, causal_mask
from seqbook.transformer.norm import AddNorm, LayerNorm

__all__ = ["FeedForward", "EncoderBlock", "DecoderBlock"]


def _check_dropout(dropout: float) -> float:
    dropout = check_real("dropout", dropout, min_value=0.0, max_value=1.0)
    if dropout == 1.0:
        raise ValueError("dropout must be < 1, got 1.0")
    return dropout


class FeedForward(nn.Module):
    r"""The position-wise feed-forward sublayer: two linear maps with a ReLU between.

    .. math::
        \operatorname{FFN}(\mathbf{x}) = \max(0, \mathbf{x} \mathbf{W}_1 +
        \mathbf{b}_1) \mathbf{W}_2 + \mathbf{b}_2

    applied to every position separately (a :math:`1 \times 1` convolution over time).
    Dropout on the hidden layer, as in PyTorch's transformer layers.

    Args:
        d_model: input and output width.
        d_ff: hidden width (the paper uses ``4 * d_model``).
        dropout: dropout on the hidden activations.

    Shapes:
        x: ``(B, T, d_model)``.
        returns: ``(B, T, d_model)``.

    Example:
        >>> ffn = FeedForward(d_model=4, d_ff=16)
        >>> tuple(ffn(torch.randn(2, 3, 4)).shape)
        (2, 3, 4)
    """

    def __init__(self, d_model: int, d_ff: int, dropout: float = 0.0) -> None:
        super().__init__()
        check_positive_int("d_model", d_model)
        check_positive_int("d_ff", d_ff)
        self.linear_1 = nn.Linear(d_model, d_ff)  # W_1, b_1
        self.linear_2 = nn.Linear(d_ff, d_model)  # W_2, b_2
        self.dropout = nn.Dropout(_check_dropout(dropout))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        hidden = F.relu(self.linear_1(x))  # (B, T, d_ff)  (eq-tf-ffn)
        return self.linear_2(self.dropout(hidden))  # (B, T, d_model)


def _copy_linear(ours: nn.Linear, theirs: nn.Linear) -> None:
    ours.weight.copy_(theirs.weight)
    ours.bias.copy_(theirs.bias)


def _copy_norm(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    if ours.eps != theirs.eps:
        raise ValueError(f"layer norm eps differ: {ours.eps} and {theirs.eps}")
    ours.a.copy_(theirs.weight)
    ours.b.copy_(theirs.bias)


def _check_torch_layer(module: nn.Module, kind: type) -> None:
    if not isinstance(module, kind):
        raise TypeError(f"module must be a torch.nn.{kind.__name__}, got {type(module).__name__}")
    activation = module.activation
    if not (activation is F.relu or isinstance(activation, nn.ReLU)):
        raise ValueError(f"module must use the ReLU activation, got {activation!r}")
    if not module.self_attn.batch_first:
        raise ValueError("module must be built with batch_first=True")


class EncoderBlock(nn.Module):
    r"""Self-attention and a feed-forward network, each inside an add & norm.

    .. math::
        \mathbf{z} = \operatorname{AddNorm}(\mathbf{x},
        \operatorname{MultiHead}(\cdot, \cdot, \cdot)), \qquad
        \mathbf{y} = \operatorname{AddNorm}(\mathbf{z}, \operatorname{FFN})

    with :class:`~seqbook.transformer.AddNorm` pre-norm (``norm_first=True``, the
    Aryaman's notes' eq. 5.5) or post-norm (the paper). The attention weights of the last
    call are kept, detached, in ``last_attention`` for plotting.

    Args:
        d_model: model width; ``num_heads`` must divide it.
        num_heads: number of attention heads :math:`h`.
        d_ff: hidden width of the feed-forward sublayer.
        dropout: dropout on attention weights, sublayer outputs and FFN hidden units.
        norm_first: pre-norm (True) or post-norm (False).

    Shapes:
        x: ``(B, T, d_model)``.
        key_padding_mask: ``(B, T)``, True = real token.
        attn_mask: ``(T, T)``, ``(B, T, T)`` or ``(B, h, T, T)``, True = may attend.
        returns: ``(B, T, d_model)``; ``last_attention`` is ``(B, h, T, T)``.

    Example:
        >>> block = EncoderBlock(d_model=8, num_heads=2, d_ff=32)
        >>> x = torch.randn(3, 5, 8)
        >>> tuple(block(x).shape), tuple(block.last_attention.shape)
        ((3, 5, 8), (3, 2, 5, 5))
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = True,
    ) -> None:
        super().__init__()
        dropout = _check_dropout(dropout)
        self.d_model = check_positive_int("d_model", d_model)
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.add_norm_1 = AddNorm(d_model, dropout, norm_first)
        self.add_norm_2 = AddNorm(d_model, dropout, norm_first)
        self.norm_first = norm_first
        self.last_attention: torch.Tensor | None = None

    def _attend(self, x, key_padding_mask, attn_mask) -> torch.Tensor:
        output, weights = self.self_attention(x, x, x, key_padding_mask, attn_mask)
        self.last_attention = weights.detach()  # (B, h, T, T)
        return output

    def forward(
        self,
        x: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        attn_mask: torch.Tensor | None = None,
    ) -> torch.Tensor:
        check_tensor("x", x, ndim=3, floating=True)
        z = self.add_norm_1(x, lambda h: self._attend(h, key_padding_mask, attn_mask))
        return self.add_norm_2(z, self.feed_forward)  # (B, T, d_model)

    @classmethod
    def from_torch(cls, module: nn.TransformerEncoderLayer) -> "EncoderBlock":
        """A copy of a batch-first ReLU ``nn.TransformerEncoderLayer``.

        Example:
            >>> layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
            >>> ours = EncoderBlock.from_torch(layer).eval()
            >>> x = torch.randn(2, 4, 8)
            >>> torch.allclose(ours(x), layer.eval()(x), atol=1e-5)
            True
        """
        _check_torch_layer(module, nn.TransformerEncoderLayer)
        ours = cls(
            module.self_attn.embed_dim,
            module.self_attn.num_heads,
            module.linear1.out_features,
            module.dropout.p,
            module.norm_first,
        )
        ours.self_attention = MultiHeadAttention.from_torch(module.self_attn)
        ours.to(device=module.linear1.weight.device, dtype=module.linear1.weight.dtype)
        with torch.no_grad():
            _copy_linear(ours.feed_forward.linear_1, module.linear1)
            _copy_linear(ours.feed_forward.linear_2, module.linear2)
            _copy_norm(ours.add_norm_1.norm, module.norm1)
            _copy_norm(ours.add_norm_2.norm, module.norm2)
        return ours


class DecoderBlock(nn.Module):
    r"""Masked self-attention, cross-attention to the encoder, feed-forward network.

    .. math::
        \mathbf{z}_1 &= \operatorname{AddNorm}(\mathbf{y},
        \operatorname{MultiHead}_{\text{causal}}(\cdot, \cdot, \cdot)) \\
        \mathbf{z}_2 &= \operatorname{AddNorm}(\mathbf{z}_1,
        \operatorname{MultiHead}(\cdot, \mathbf{m}, \mathbf{m})) \\
        \mathbf{y}' &= \operatorname{AddNorm}(\mathbf{z}_2, \operatorname{FFN})

    The queries of the cross-attention come from the decoder, its keys and values are
    the encoder output :math:`\mathbf{m}` ("memory"). The causal mask makes the
    output at position :math:`t` independent of the inputs after :math:`t`. The last
    call's weights are kept in ``last_self_attention`` ``(B, h, T, T)`` and
    ``last_cross_attention`` ``(B, h, T, S)``.

    Args:
        d_model: model width; ``num_heads`` must divide it.
        num_heads: number of heads in both attention sublayers.
        d_ff: hidden width of the feed-forward sublayer.
        dropout: as in :class:`EncoderBlock`.
        norm_first: pre-norm (True) or post-norm (False).

    Shapes:
        x: ``(B, T, d_model)``, the embedded target prefix.
        memory: ``(B, S, d_model)``, the encoder output.
        key_padding_mask: ``(B, T)``, True = real target token.
        memory_key_padding_mask: ``(B, S)``, True = real source token.
        returns: ``(B, T, d_model)``.

    Example:
        >>> block = DecoderBlock(d_model=8, num_heads=2, d_ff=32)
        >>> y, memory = torch.randn(3, 4, 8), torch.randn(3, 6, 8)
        >>> tuple(block(y, memory).shape), tuple(block.last_cross_attention.shape)
        ((3, 4, 8), (3, 2, 4, 6))
        >>> block.last_self_attention[0, 0, 0]       # position 0 sees only itself
        tensor([1., 0., 0., 0.])
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.0,
        norm_first: bool = True,
    ) -> None:
        super().__init__()
        dropout = _check_dropout(dropout)
        self.d_model = check_positive_int("d_model", d_model)
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.cross_attention = MultiHeadAttention(d_model, num_heads, dropout=dropout)
        self.feed_forward = FeedForward(d_model, d_ff, dropout)
        self.add_norm_1 = AddNorm(d_model, dropout, norm_first)
        self.add_norm_2 = AddNorm(d_model, dropout, norm_first)
        self.add_norm_3 = AddNorm(d_model, dropout, norm_first)
        self.norm_first = norm_first
        self.last_self_attention: torch.Tensor | None = None
        self.last_cross_attention: torch.Tensor | None = None

    def _self_attend(self, y, key_padding_mask, attn_mask) -> torch.Tensor:
        output, weights = self.self_attention(y, y, y, key_padding_mask, attn_mask)
        self.last_self_attention = weights.detach()  # (B, h, T, T)
        return output

    def _cross_attend(self, y, memory, memory_key_padding_mask) -> torch.Tensor:
        output, weights = self.cross_attention(y, memory, memory, memory_key_padding_mask)
        self.last_cross_attention = weights.detach()  # (B, h, T, S)
        return output

    def forward(
        self,
        x: torch.Tensor,
        memory: torch.Tensor,
        key_padding_mask: torch.Tensor | None = None,
        memory_key_padding_mask: torch.Tensor | None = None,
        causal: bool = True,
    ) -> torch.Tensor:
        """Run the block; ``causal=False`` drops the causal mask (for experiments only)."""
        check_tensor("x", x, ndim=3, floating=True)
        check_tensor("memory", memory, ndim=3, floating=True)
        if not isinstance(causal, bool):
            raise TypeError(f"causal must be a bool, got {causal!r}")
        T = x.shape[1]
        attn_mask = causal_mask(T, device=x.device) if causal else None  # (T, T)
        z = self.add_norm_1(x, lambda h: self._self_attend(h, key_padding_mask, attn_mask))
        z = self.add_norm_2(
            z, lambda h: self._cross_attend(h, memory, memory_key_padding_mask)
        )
        return self.add_norm_3(z, self.feed_forward)  # (B, T, d_model)

    @classmethod
    def from_torch(cls, module: nn.TransformerDecoderLayer) -> "DecoderBlock":
        """A copy of a batch-first ReLU ``nn.TransformerDecoderLayer``.

        Example:
            >>> layer = nn.TransformerDecoderLayer(8, 2, 16, 0.0, batch_first=True)
            >>> ours = DecoderBlock.from_torch(layer)
            >>> y, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
            >>> future = ~torch.ones(3, 3, dtype=torch.bool).tril()  # True = ignore
            >>> torch.allclose(ours(y, memory), layer(y, memory, tgt_mask=future),
            ...                atol=1e-5)
            True
        """
        _check_torch_layer(module, nn.TransformerDecoderLayer)
        ours = cls(
            module.self_attn.embed_dim,
            module.self_attn.num_heads,
            module.linear1.out_features,
            module.dropout.p,
            module.norm_first,
        )
        ours.self_attention = MultiHeadAttention.from_torch(module.self_attn)
        ours.cross_attention = MultiHeadAttention.from_torch(module.multihead_attn)
        ours.to(device=module.linear1.weight.device, dtype=module.linear1.weight.dtype)
        with torch.no_grad():
            _copy_linear(ours.feed_forward.linear_1, module.linear1)
            _copy_linear(ours.feed_forward.linear_2, module.linear2)
            for i, norm in enumerate((module.norm1, module.norm2, module.norm3)):
                _copy_norm(getattr(ours, f"add_norm_{i + 1}").norm, norm)
        return ours
