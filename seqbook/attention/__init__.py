"""Attention: kernel regression, masks, dot-product, additive and multi-head attention.

The chapter "Attention mechanisms" (``book/attention.md``) explains every piece.
Masks follow one convention throughout: a boolean mask is **True where attention is
allowed**; ``torch.nn.MultiheadAttention`` uses the opposite (True = ignore).
"""

from seqbook.attention.additive import AdditiveAttention
from seqbook.attention.dot_product import scaled_dot_product_attention
from seqbook.attention.kernel_regression import KERNELS, kernel_function, nadaraya_watson
from seqbook.attention.masking import causal_mask, masked_softmax
from seqbook.attention.multihead import MultiHeadAttention
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
    "scaled_dot_product_attention",
]
