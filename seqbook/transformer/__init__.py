"""The transformer: positional encoding, layer norm, encoder and decoder blocks.

The chapter "Transformers" (``book/transformer.md``) explains every piece. The
blocks take the arguments of PyTorch's transformer layers with PyTorch's meanings
and defaults; their boolean masks are True where attention is **forbidden** (see
``seqbook.attention.masking``).
"""

from seqbook.transformer.blocks import DecoderBlock, EncoderBlock, FeedForward
from seqbook.transformer.model import Transformer
from seqbook.transformer.norm import AddNorm, LayerNorm, layer_norm
from seqbook.transformer.positional import (
    PositionalEncoding,
    positional_encoding,
    relative_position_map,
)
from seqbook.transformer.training import (
    TransformerConfig,
    build_transformer,
    train_transformer,
    warmup_lr,
)

__all__ = [
    "AddNorm",
    "DecoderBlock",
    "EncoderBlock",
    "FeedForward",
    "LayerNorm",
    "PositionalEncoding",
    "Transformer",
    "TransformerConfig",
    "build_transformer",
    "layer_norm",
    "positional_encoding",
    "relative_position_map",
    "train_transformer",
    "warmup_lr",
]
