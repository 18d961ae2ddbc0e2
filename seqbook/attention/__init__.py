"""Attention: kernel regression, masks, dot-product, additive and multi-head attention.

The chapter "Attention mechanisms" (``book/attention.md``) explains every piece.
An argument named like one of PyTorch's has PyTorch's meaning, masks included:
``scaled_dot_product_attention``'s boolean ``attn_mask`` is True where attention is
**allowed** (as ``F.scaled_dot_product_attention``'s), ``MultiHeadAttention``'s
``key_padding_mask`` and ``attn_mask`` are True where it is **forbidden** (as
``nn.MultiheadAttention``'s), and float masks are added to the scores. The book's own
``mask`` arguments (``masked_softmax``, ``AdditiveAttention``, ``AttentionPooling``)
are keep masks, True = attend (see :mod:`seqbook.attention.masking`).
"""

from seqbook.attention.additive import AdditiveAttention
from seqbook.attention.dot_product import scaled_dot_product_attention
from seqbook.attention.kernel_regression import KERNELS, kernel_function, nadaraya_watson
from seqbook.attention.masking import causal_mask, masked_softmax
from seqbook.attention.multihead import MultiHeadAttention, project_heads
from seqbook.attention.pooling import AttentionPooling

__all__ = [
    "AdditiveAttention",
    "AttentionPooling",
    "KERNELS",
    "MultiHeadAttention",
    "causal_mask",
    "kernel_function",
    "masked_softmax",
    "nadaraya_watson",
    "project_heads",
    "scaled_dot_product_attention",
]
