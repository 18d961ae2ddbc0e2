r"""The transformer's encoder and decoder blocks (Vaswani et al., 2017).

Shape letters: ``B`` batch, ``T`` target (or encoder) positions, ``S`` source
positions (the encoder output, "memory"), ``h`` heads, ``d_model`` the model width,
``d_ff`` the hidden width of the feed-forward sublayer.

The blocks take the arguments of ``torch.nn.TransformerEncoderLayer`` and
``TransformerDecoderLayer`` (always ``batch_first=True``) with the same meanings and
defaults: post-norm, dropout 0.1, ReLU, and boolean masks that are True where
attention is **forbidden** (:mod:`seqbook.attention.masking`); ``from_torch`` and
``to_torch`` copy the weights between the two.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeAlias

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor, nn

from seqbook._checks import check_bool, check_positive_int, check_probability, check_real
from seqbook.attention import MultiHeadAttention
from seqbook.transformer.norm import AddNorm, LayerNorm

__all__ = ["FeedForward", "EncoderBlock", "DecoderBlock"]

_ACTIVATIONS: dict[str, Callable[[Tensor], Tensor]] = {"relu": F.relu, "gelu": F.gelu}
# the feed-forward activation, as torch's layers take it
Activation: TypeAlias = str | Callable[[Tensor], Tensor]
# torch's masks (see MultiHeadAttention) under the blocks' letters: T the block's own
# positions, S the memory's. Padding: True (or -inf) at the positions to ignore.
Padding: TypeAlias = Bool[Tensor, "B T"] | Float[Tensor, "B T"]
MemoryPadding: TypeAlias = Bool[Tensor, "B S"] | Float[Tensor, "B S"]
# (T, T), one per head (B * num_heads, T, T), or broadcastable to (B, num_heads, T, T);
# True (or -inf) where attention is forbidden
SelfAttentionMask: TypeAlias = (
    Bool[Tensor, "#T #T"] | Float[Tensor, "#T #T"]
    | Bool[Tensor, "B*{self.num_heads} T T"] | Float[Tensor, "B*{self.num_heads} T T"]
    | Bool[Tensor, "#B #{self.num_heads} #T #T"] | Float[Tensor, "#B #{self.num_heads} #T #T"]
)
MemoryMask: TypeAlias = (
    Bool[Tensor, "#T #S"] | Float[Tensor, "#T #S"]
    | Bool[Tensor, "B*{self.num_heads} T S"] | Float[Tensor, "B*{self.num_heads} T S"]
    | Bool[Tensor, "#B #{self.num_heads} #T #S"] | Float[Tensor, "#B #{self.num_heads} #T #S"]
)


def _activation(activation: Activation) -> Callable[[Tensor], Tensor]:
    if isinstance(activation, str) and activation in _ACTIVATIONS:
        return _ACTIVATIONS[activation]
    if not isinstance(activation, str) and callable(activation):
        return activation
    raise ValueError(f"activation must be 'relu', 'gelu' or a callable (as in torch), got "
                     f"{activation!r}")


class FeedForward(nn.Module):
    r"""The position-wise feed-forward sublayer: two linear maps with a ReLU between.

    .. math::
        \operatorname{FFN}(\mathbf{x}) = \max(0, \mathbf{x} \mathbf{W}_1 +
        \mathbf{b}_1) \mathbf{W}_2 + \mathbf{b}_2

    applied to every position separately (a :math:`1 \times 1` convolution over time);
    ``activation="gelu"`` (or any callable) replaces :math:`\max(0, \cdot)`. Dropout on
    the hidden layer, as in PyTorch's transformer layers.

    Args:
        d_model: input and output width.
        d_ff: hidden width (the paper uses ``4 * d_model``).
        dropout: dropout on the hidden activations.
        activation: ``"relu"``, ``"gelu"`` or a callable, as in torch's layers.
        bias: learn the biases :math:`\mathbf{b}_1, \mathbf{b}_2`.

    Shapes:
        x: ``(B, T, d_model)`` (any ``(..., d_model)``).
        returns: ``(B, T, d_model)``.

    Example:
        >>> ffn = FeedForward(d_model=4, d_ff=16)
        >>> tuple(ffn(torch.randn(2, 3, 4)).shape)
        (2, 3, 4)
    """

    def __init__(
        self,
        d_model: int,
        d_ff: int,
        dropout: float = 0.0,
        activation: Activation = "relu",
        bias: bool = True,
    ) -> None:
        super().__init__()
        check_positive_int("d_model", d_model), check_positive_int("d_ff", d_ff)
        check_probability("dropout", dropout), check_bool("bias", bias)
        self.d_model = d_model
        self.activation_spec = activation
        self.activation = _activation(activation)
        self.linear_1 = nn.Linear(d_model, d_ff, bias=bias)  # W_1, b_1
        self.linear_2 = nn.Linear(d_ff, d_model, bias=bias)  # W_2, b_2
        self.dropout = nn.Dropout(dropout)

    def forward(
        self, x: Float[Tensor, "*batch {self.d_model}"]
    ) -> Float[Tensor, "*batch {self.d_model}"]:
        hidden = self.activation(self.linear_1(x))  # (B, T, d_ff)  (eq-tf-ffn)
        return self.linear_2(self.dropout(hidden))  # (B, T, d_model)


def _copy_linear(ours: nn.Linear, theirs: nn.Linear) -> None:
    ours.weight.copy_(theirs.weight)
    if theirs.bias is not None:
        ours.bias.copy_(theirs.bias)


def _copy_norm(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    ours.a.copy_(theirs.weight)
    if theirs.bias is not None:
        ours.b.copy_(theirs.bias)


def _copy_norm_to_torch(ours: LayerNorm, theirs: nn.LayerNorm) -> None:
    theirs.weight.copy_(ours.a)
    if ours.b is not None:
        theirs.bias.copy_(ours.b)


def _torch_options(module: nn.TransformerEncoderLayer | nn.TransformerDecoderLayer) -> dict:
    """The constructor arguments of a torch transformer layer, for ours."""
    activation: Activation = module.activation
    if activation is F.relu or isinstance(activation, nn.ReLU):
        activation = "relu"
    elif activation is F.gelu or (
        isinstance(activation, nn.GELU) and activation.approximate == "none"
    ):
        activation = "gelu"
    return dict(
        d_model=module.self_attn.embed_dim,
        num_heads=module.self_attn.num_heads,
        d_ff=module.linear1.out_features,
        dropout=module.dropout.p,
        activation=activation,
        layer_norm_eps=module.norm1.eps,
        norm_first=module.norm_first,
        bias=module.linear1.bias is not None,
    )


class EncoderBlock(nn.Module):
    r"""Self-attention and a feed-forward network, each inside an add & norm.

    .. math::
        \mathbf{x}' = \operatorname{AddNorm}(\mathbf{x},
        \operatorname{MultiHead}(\cdot, \cdot, \cdot)), \qquad
        \mathbf{y} = \operatorname{AddNorm}(\mathbf{x}', \operatorname{FFN})

    with :class:`~seqbook.transformer.AddNorm` post-norm (the paper and PyTorch's
    default) or pre-norm (``norm_first=True``, Aryaman's notes' eq. 5.5). The
    arguments are those of ``nn.TransformerEncoderLayer`` (``d_ff`` is its
    ``dim_feedforward``) with the same defaults. The attention weights of the last
    call are kept, detached, in ``last_attention`` for plotting.

    Args:
        d_model: model width; ``num_heads`` must divide it.
        num_heads: number of attention heads :math:`h`.
        d_ff: hidden width of the feed-forward sublayer.
        dropout: dropout on attention weights, sublayer outputs and FFN hidden units.
        activation: the FFN's ``"relu"``, ``"gelu"`` or a callable.
        layer_norm_eps: the layer norms' epsilon.
        norm_first: pre-norm (True) or post-norm (False).
        bias: biases in the linear maps and layer norms.

    Shapes:
        src: ``(B, T, d_model)``.
        src_mask: ``(T, T)``, ``(B * h, T, T)`` or broadcastable to
            ``(B, h, T, T)``; **True = may not attend**, or float (added).
        src_key_padding_mask: ``(B, T)``, **True = padding**, or float (added).
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
        dropout: float = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: float = 1e-5,
        *,
        norm_first: bool = False,
        bias: bool = True,
    ) -> None:
        super().__init__()
        check_real("layer_norm_eps", layer_norm_eps, min_value=0.0, strict_min=True)
        eps = layer_norm_eps
        self.d_model, self.num_heads = d_model, num_heads  # num_heads: the masks' shapes
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout, bias)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation, bias)
        self.add_norm_1 = AddNorm(d_model, dropout, norm_first, eps, bias)
        self.add_norm_2 = AddNorm(d_model, dropout, norm_first, eps, bias)
        self.norm_first = norm_first
        self.last_attention: torch.Tensor | None = None

    def forward(
        self,
        src: Float[Tensor, "B T {self.d_model}"],
        src_mask: SelfAttentionMask | None = None,
        src_key_padding_mask: Padding | None = None,
        is_causal: bool = False,
    ) -> Float[Tensor, "B T {self.d_model}"]:
        """Run the block (arguments as ``nn.TransformerEncoderLayer.forward``;
        ``is_causal=True`` applies the causal mask, with or without ``src_mask``)."""

        def self_attention(x: Tensor) -> Tensor:
            output, weights = self.self_attention(
                x, x, x, src_key_padding_mask, attn_mask=src_mask,
                average_attn_weights=False, is_causal=is_causal)
            self.last_attention = weights.detach()  # (B, h, T, T), for plotting
            return output

        x_att = self.add_norm_1(src, self_attention)  # x' = AddNorm(x, MultiHead)
        return self.add_norm_2(x_att, self.feed_forward)  # y = AddNorm(x', FFN)

    @classmethod
    def from_torch(
        cls,
        module: nn.TransformerEncoderLayer,
    ) -> EncoderBlock:
        """A copy of an ``nn.TransformerEncoderLayer`` (any options but ``batch_first``:
        ours is batch-first, the weights are the same), in the module's training mode.

        Example:
            >>> layer = nn.TransformerEncoderLayer(8, 2, 16, 0.0, batch_first=True)
            >>> ours = EncoderBlock.from_torch(layer).eval()
            >>> x = torch.randn(2, 4, 8)
            >>> torch.allclose(ours(x), layer.eval()(x), atol=1e-5)
            True
        """
        ours = cls(**_torch_options(module))
        ours.self_attention = MultiHeadAttention.from_torch(module.self_attn)
        ours.to(device=module.linear1.weight.device, dtype=module.linear1.weight.dtype)
        with torch.no_grad():
            _copy_linear(ours.feed_forward.linear_1, module.linear1)
            _copy_linear(ours.feed_forward.linear_2, module.linear2)
            _copy_norm(ours.add_norm_1.norm, module.norm1)
            _copy_norm(ours.add_norm_2.norm, module.norm2)
        return ours.train(module.training)

    def to_torch(self) -> nn.TransformerEncoderLayer:
        """An ``nn.TransformerEncoderLayer`` (``batch_first=True``) with these weights.

        Example:
            >>> ours = EncoderBlock(8, 2, 16, dropout=0.0, activation="gelu").eval()
            >>> x = torch.randn(2, 4, 8)
            >>> torch.allclose(ours.to_torch().eval()(x), ours(x), atol=1e-5)
            True
        """
        ffn, norm = self.feed_forward, self.add_norm_1.norm
        theirs = nn.TransformerEncoderLayer(
            self.d_model, self.self_attention.num_heads, ffn.linear_1.out_features,
            self.add_norm_1.dropout.p, ffn.activation_spec, norm.eps, batch_first=True,
            norm_first=self.norm_first, bias=ffn.linear_1.bias is not None,
            device=norm.a.device, dtype=norm.a.dtype,
        )
        theirs.self_attn = self.self_attention.to_torch()
        with torch.no_grad():
            _copy_linear(theirs.linear1, ffn.linear_1)
            _copy_linear(theirs.linear2, ffn.linear_2)
            _copy_norm_to_torch(self.add_norm_1.norm, theirs.norm1)
            _copy_norm_to_torch(self.add_norm_2.norm, theirs.norm2)
        return theirs


class DecoderBlock(nn.Module):
    r"""Masked self-attention, cross-attention to the encoder, feed-forward network.

    .. math::
        \mathbf{y}' &= \operatorname{AddNorm}(\mathbf{y},
        \operatorname{MultiHead}_{\text{causal}}(\cdot, \cdot, \cdot)) \\
        \mathbf{y}'' &= \operatorname{AddNorm}(\mathbf{y}',
        \operatorname{MultiHead}(\cdot, \mathbf{m}, \mathbf{m})) \\
        \mathbf{y}''' &= \operatorname{AddNorm}(\mathbf{y}'', \operatorname{FFN})

    The queries of the cross-attention come from the decoder, its keys and values are
    the encoder output :math:`\mathbf{m}` ("memory"). The causal mask (pass
    ``tgt_is_causal=True``, or a ``tgt_mask``, as in PyTorch: without either the
    self-attention sees the whole target) makes the output at position :math:`t`
    independent of the inputs after :math:`t`. The arguments are those of
    ``nn.TransformerDecoderLayer`` with the same defaults. The last call's weights
    are kept in ``last_self_attention`` ``(B, h, T, T)`` and ``last_cross_attention``
    ``(B, h, T, S)``.

    Args:
        d_model: model width; ``num_heads`` must divide it.
        num_heads: number of heads in both attention sublayers.
        d_ff: hidden width of the feed-forward sublayer.
        dropout, activation, layer_norm_eps, norm_first, bias: as in
            :class:`EncoderBlock`.

    Shapes:
        tgt: ``(B, T, d_model)``, the embedded target prefix.
        memory: ``(B, S, d_model)``, the encoder output.
        tgt_mask: ``(T, T)`` (or as ``src_mask`` of :class:`EncoderBlock`),
            **True = may not attend**, or float (added).
        memory_mask: ``(T, S)`` (or likewise), the same for the cross-attention.
        tgt_key_padding_mask: ``(B, T)``, **True = padding**, or float.
        memory_key_padding_mask: ``(B, S)``, **True = padding**, or float.
        returns: ``(B, T, d_model)``.

    Example:
        >>> block = DecoderBlock(d_model=8, num_heads=2, d_ff=32)
        >>> y, memory = torch.randn(3, 4, 8), torch.randn(3, 6, 8)
        >>> out = block(y, memory, tgt_is_causal=True)
        >>> tuple(out.shape), tuple(block.last_cross_attention.shape)
        ((3, 4, 8), (3, 2, 4, 6))
        >>> block.last_self_attention[0, 0, 0]       # position 0 sees only itself
        tensor([1., 0., 0., 0.])
    """

    def __init__(
        self,
        d_model: int,
        num_heads: int,
        d_ff: int,
        dropout: float = 0.1,
        activation: Activation = "relu",
        layer_norm_eps: float = 1e-5,
        *,
        norm_first: bool = False,
        bias: bool = True,
    ) -> None:
        super().__init__()
        check_real("layer_norm_eps", layer_norm_eps, min_value=0.0, strict_min=True)
        eps = layer_norm_eps
        self.d_model, self.num_heads = d_model, num_heads  # num_heads: the masks' shapes
        self.self_attention = MultiHeadAttention(d_model, num_heads, dropout, bias)
        self.cross_attention = MultiHeadAttention(d_model, num_heads, dropout, bias)
        self.feed_forward = FeedForward(d_model, d_ff, dropout, activation, bias)
        self.add_norm_1 = AddNorm(d_model, dropout, norm_first, eps, bias)
        self.add_norm_2 = AddNorm(d_model, dropout, norm_first, eps, bias)
        self.add_norm_3 = AddNorm(d_model, dropout, norm_first, eps, bias)
        self.norm_first = norm_first
        self.last_self_attention: torch.Tensor | None = None
        self.last_cross_attention: torch.Tensor | None = None

    def forward(
        self,
        tgt: Float[Tensor, "B T {self.d_model}"],
        memory: Float[Tensor, "B S {self.d_model}"],
        tgt_mask: SelfAttentionMask | None = None,
        memory_mask: MemoryMask | None = None,
        tgt_key_padding_mask: Padding | None = None,
        memory_key_padding_mask: MemoryPadding | None = None,
        tgt_is_causal: bool = False,
        memory_is_causal: bool = False,
    ) -> Float[Tensor, "B T {self.d_model}"]:
        """Run the block (arguments as ``nn.TransformerDecoderLayer.forward``;
        ``tgt_is_causal=True`` applies the causal mask, with or without ``tgt_mask``)."""

        def self_attention(y: Tensor) -> Tensor:
            output, weights = self.self_attention(
                y, y, y, tgt_key_padding_mask, attn_mask=tgt_mask,
                average_attn_weights=False, is_causal=tgt_is_causal)
            self.last_self_attention = weights.detach()  # (B, h, T, T)
            return output

        def cross_attention(y: Tensor) -> Tensor:
            output, weights = self.cross_attention(
                y, memory, memory, memory_key_padding_mask, attn_mask=memory_mask,
                average_attn_weights=False, is_causal=memory_is_causal)
            self.last_cross_attention = weights.detach()  # (B, h, T, S)
            return output

        y_1 = self.add_norm_1(tgt, self_attention)  # y', causal self-attention
        y_2 = self.add_norm_2(y_1, cross_attention)  # y'', attention to m
        return self.add_norm_3(y_2, self.feed_forward)  # (B, T, d_model)

    @classmethod
    def from_torch(
        cls,
        module: nn.TransformerDecoderLayer,
    ) -> DecoderBlock:
        """A copy of an ``nn.TransformerDecoderLayer`` (any options but ``batch_first``),
        in the module's training mode.

        Example:
            >>> layer = nn.TransformerDecoderLayer(8, 2, 16, 0.0, batch_first=True)
            >>> ours = DecoderBlock.from_torch(layer)
            >>> y, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
            >>> future = ~torch.ones(3, 3, dtype=torch.bool).tril()  # True = ignore
            >>> torch.allclose(ours(y, memory, tgt_mask=future),
            ...                layer(y, memory, tgt_mask=future), atol=1e-5)
            True
        """
        ours = cls(**_torch_options(module))
        ours.self_attention = MultiHeadAttention.from_torch(module.self_attn)
        ours.cross_attention = MultiHeadAttention.from_torch(module.multihead_attn)
        ours.to(device=module.linear1.weight.device, dtype=module.linear1.weight.dtype)
        with torch.no_grad():
            _copy_linear(ours.feed_forward.linear_1, module.linear1)
            _copy_linear(ours.feed_forward.linear_2, module.linear2)
            for i, norm in enumerate((module.norm1, module.norm2, module.norm3)):
                _copy_norm(getattr(ours, f"add_norm_{i + 1}").norm, norm)
        return ours.train(module.training)

    def to_torch(self) -> nn.TransformerDecoderLayer:
        """An ``nn.TransformerDecoderLayer`` (``batch_first=True``) with these weights.

        Example:
            >>> ours = DecoderBlock(8, 2, 16, dropout=0.0, norm_first=True).eval()
            >>> y, memory = torch.randn(2, 3, 8), torch.randn(2, 5, 8)
            >>> theirs = ours.to_torch().eval()
            >>> torch.allclose(theirs(y, memory), ours(y, memory), atol=1e-5)
            True
        """
        ffn, norm = self.feed_forward, self.add_norm_1.norm
        theirs = nn.TransformerDecoderLayer(
            self.d_model, self.self_attention.num_heads, ffn.linear_1.out_features,
            self.add_norm_1.dropout.p, ffn.activation_spec, norm.eps, batch_first=True,
            norm_first=self.norm_first, bias=ffn.linear_1.bias is not None,
            device=norm.a.device, dtype=norm.a.dtype,
        )
        theirs.self_attn = self.self_attention.to_torch()
        theirs.multihead_attn = self.cross_attention.to_torch()
        with torch.no_grad():
            _copy_linear(theirs.linear1, ffn.linear_1)
            _copy_linear(theirs.linear2, ffn.linear_2)
            ours = (self.add_norm_1, self.add_norm_2, self.add_norm_3)
            for add_norm, torch_norm in zip(ours, (theirs.norm1, theirs.norm2, theirs.norm3)):
                _copy_norm_to_torch(add_norm.norm, torch_norm)
        return theirs
