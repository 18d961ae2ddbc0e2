r"""The key-value cache: attention over the past without recomputing it.

Shape letters: ``B`` batch, ``h`` heads, ``T`` new positions, ``P`` positions already
in the cache (the past), ``d_k`` per-head size of keys and queries, ``d_v`` of values,
``d_model`` the model width.

In a causal transformer, the keys and values of position :math:`j` depend only on the
tokens up to :math:`j`, so they never change once computed. Generating token by token,
each step needs the query of the new position only; the keys and values of all earlier
positions can be kept from the previous steps. Per layer the cache holds
:math:`\mathbf{K}, \mathbf{V} \in \mathbb{R}^{B \times h \times P \times d_k}`, so its
size is :math:`2 \cdot N_x \cdot B \cdot P \cdot d_{model}` numbers for :math:`N_x`
layers (with :math:`h d_k = h d_v = d_{model}`).
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import torch
from torch import nn

from seqbook._contracts import IndexInto, InstanceOf, PositiveInt, Shaped
from seqbook.attention import MultiHeadAttention, scaled_dot_product_attention

__all__ = ["KVCache", "cached_self_attention"]


@dataclass
class KVCache:
    """The keys and values of every layer for the positions generated so far.

    Made by a model's ``init_state(batch_size)`` (e.g.
    :meth:`seqbook.language_model.TransformerLM.init_state`), filled by its forward
    pass; a cache belongs to the model and batch that made it, and serves generation
    only (the model runs it under ``torch.no_grad()``: its buffers are written in
    place, which gradients cannot flow through). Its buffers are
    allocated once, for ``capacity`` positions (the model's ``max_len``), and each
    step writes the new positions' keys and values into them: appending never copies
    what is already cached.

    Attributes:
        key_buffers, value_buffers: one ``(B, h, capacity, d_k)`` tensor per layer.
        lengths: the positions written so far in each layer (equal between calls).
        batch_size: :math:`B`.
        owner: a weak reference to the model that made the cache (call it to get
            the model, or ``None`` once the model is gone).
    """

    key_buffers: list[torch.Tensor]
    value_buffers: list[torch.Tensor]
    lengths: list[int]
    batch_size: int
    owner: Callable[[], nn.Module | None] = field(repr=False)

    @classmethod
    def empty(cls, model: nn.Module, batch_size: PositiveInt, num_layers: int, num_heads: int,
              d_k: int, d_v: int, capacity: PositiveInt) -> "KVCache":
        """An empty cache (``P = 0``) of ``capacity`` positions for ``model``, on its
        device and in its dtype."""
        weight = next(model.parameters())
        like = dict(device=weight.device, dtype=weight.dtype)
        shape_k = (batch_size, num_heads, capacity, d_k)
        shape_v = (batch_size, num_heads, capacity, d_v)
        return cls(
            key_buffers=[torch.zeros(shape_k, **like) for _ in range(num_layers)],
            value_buffers=[torch.zeros(shape_v, **like) for _ in range(num_layers)],
            lengths=[0] * num_layers,
            batch_size=batch_size,
            owner=weakref.ref(model),
        )

    @property
    def keys(self) -> list[torch.Tensor]:
        """The cached keys of each layer, ``(B, h, P, d_k)`` views of the buffers."""
        return [k[:, :, :n] for k, n in zip(self.key_buffers, self.lengths)]

    @property
    def values(self) -> list[torch.Tensor]:
        """The cached values of each layer, ``(B, h, P, d_v)`` views of the buffers."""
        return [v[:, :, :n] for v, n in zip(self.value_buffers, self.lengths)]

    @property
    def length(self) -> int:
        """The number of positions :math:`P` held (by the last layer)."""
        return self.lengths[-1]

    @property
    def num_layers(self) -> int:
        """The number of layers whose keys and values the cache holds."""
        return len(self.key_buffers)

    @property
    def dtype(self) -> torch.dtype:
        """The dtype of the cached keys and values (the model's)."""
        return self.key_buffers[0].dtype

    @property
    def capacity(self) -> int:
        """The most positions the buffers hold."""
        return self.key_buffers[0].shape[2]

    @property
    def nbytes(self) -> int:
        """The bytes of the keys and values held (the :math:`P` positions written)."""
        return sum(t.numel() * t.element_size() for t in (*self.keys, *self.values))

    @property
    def allocated_bytes(self) -> int:
        """The bytes of the buffers, allocated up front for ``capacity`` positions."""
        buffers = (*self.key_buffers, *self.value_buffers)
        return sum(t.numel() * t.element_size() for t in buffers)

    def copy(self) -> "KVCache":
        """An independent copy (later steps on either leave the other unchanged)."""
        return KVCache([k.clone() for k in self.key_buffers],
                       [v.clone() for v in self.value_buffers], list(self.lengths),
                       self.batch_size, self.owner)

    def check(self, model: nn.Module, batch_size: int) -> "KVCache":
        """Return the cache if ``model`` made it for batches of ``batch_size``."""
        if self.owner() is not model:
            raise ValueError("cache was made by another model; start a cache for this one "
                             "with model.init_state(batch_size)")
        if batch_size != self.batch_size:
            raise ValueError(f"cache holds a batch of {self.batch_size} sequences, but ids has "
                             f"{batch_size}; a cache belongs to the batch it was made for")
        if len(set(self.lengths)) != 1:
            raise ValueError(f"cache layers hold different numbers of positions {self.lengths} "
                             "(a call failed half-way); start a new cache with "
                             "model.init_state(batch_size)")
        return self


def cached_self_attention(
    attention: InstanceOf(MultiHeadAttention, what="a seqbook.attention.MultiHeadAttention"),
    x: Shaped("cache.batch_size T attention.d_model", floating=True, dtype_of="cache.dtype"),
    cache: InstanceOf(KVCache),
    layer: IndexInto("cache.num_layers"),
) -> torch.Tensor:
    r"""Causal self-attention of ``T`` new positions to the cached past and to themselves.

    The new positions' keys and values are appended to the cache of ``layer``; query
    :math:`i` (position :math:`P + i`) attends to every key up to its own position.
    Uses the weights of ``attention`` (a :class:`~seqbook.attention.MultiHeadAttention`),
    so it computes what ``attention(x_all, x_all, x_all, attn_mask=~causal_mask(P + T))``
    computes for the last ``T`` rows, without recomputing the first ``P``.

    Args:
        attention: the layer's multi-head attention.
        x: the new positions' inputs.
        cache: the cache; ``T`` positions are written into its ``layer`` buffers
            (``P + T`` must not exceed its capacity).
        layer: which layer's keys and values to use.

    Shapes:
        x: ``(B, T, d_model)``.
        returns: ``(B, T, d_model)``.

    Example:
        >>> from seqbook.attention import causal_mask
        >>> from seqbook.language_model import TransformerLM
        >>> model = TransformerLM(vocab_size=5, d_model=8, num_heads=2, num_layers=1)
        >>> attention = model.blocks[0].self_attention
        >>> x = torch.randn(1, 4, 8)
        >>> full, _ = attention(x, x, x, attn_mask=~causal_mask(4))  # True = forbidden
        >>> cache = model.init_state(batch_size=1)
        >>> with torch.no_grad():
        ...     first = cached_self_attention(attention, x[:, :3], cache, layer=0)
        ...     last = cached_self_attention(attention, x[:, 3:], cache, layer=0)
        >>> torch.allclose(torch.cat([first, last], 1), full, atol=1e-6)
        True
    """
    # x's positions must fit the cache
    if (P := cache.lengths[layer]) + x.shape[1] > cache.capacity:
        raise ValueError(f"x has {x.shape[1]} positions after {P} cached ones, more than the "
                         f"cache's capacity of {cache.capacity}")
    if torch.is_grad_enabled() and any(p.requires_grad for p in attention.parameters()):
        raise RuntimeError("cached attention is for generation: call it under torch.no_grad() "
                           "(the cache is written in place, which gradients cannot flow through)")
    return _cached_self_attention(attention, x, cache, layer)


def _cached_self_attention(
    attention: MultiHeadAttention, x: torch.Tensor, cache: KVCache, layer: int
) -> torch.Tensor:
    """:func:`cached_self_attention` of checked arguments."""
    K, V = _append(attention, x, cache, layer)  # (B, h, P + T, d_k), (B, h, P + T, d_v)
    return _cached_attention(attention, x, K, V)


def _project(x: torch.Tensor, W: torch.Tensor, b: torch.Tensor | None) -> torch.Tensor:
    """Every head's projection ``x W (+ b)`` of the new positions, ``(B, h, T, d_k)``."""
    out = torch.einsum("btd,hdk->bhtk", x, W)  # (B, h, T, d_k)
    return out if b is None else out + b.unsqueeze(1)


def _append(
    attention: MultiHeadAttention, x: torch.Tensor, cache: KVCache, layer: int
) -> tuple[torch.Tensor, torch.Tensor]:
    """Write the keys and values of the ``T`` new positions after the ``P`` cached ones;
    return all ``P + T`` (views of the buffers)."""
    P, T = cache.lengths[layer], x.shape[1]
    K_buffer, V_buffer = cache.key_buffers[layer], cache.value_buffers[layer]
    # (eq-lm-cache-append)
    K_buffer[:, :, P : P + T] = _project(x, attention.W_K, attention.b_K)
    # (eq-lm-cache-append)
    V_buffer[:, :, P : P + T] = _project(x, attention.W_V, attention.b_V)
    cache.lengths[layer] = P + T
    return K_buffer[:, :, : P + T], V_buffer[:, :, : P + T]  # K_{<=t}, V_{<=t}


def _cached_attention(
    attention: MultiHeadAttention,
    x: torch.Tensor,
    K: torch.Tensor,
    V: torch.Tensor,
) -> torch.Tensor:
    """The output of the ``T`` new queries attending over the ``P + T`` cached keys."""
    B, T, _ = x.shape
    P = K.shape[2] - T
    # (B, h, T, d_k): new queries only
    Q = _project(x, attention.W_Q, attention.b_Q)
    # query i is position P + i: it may see keys j <= P + i  (eq-lm-cached-mask)
    m = None if T == 1 else torch.ones(
        T, P + T, dtype=torch.bool, device=x.device
    ).tril(P)
    dropout = attention.dropout if attention.training else 0.0
    # (eq-lm-cached-attention)
    heads, _ = scaled_dot_product_attention(Q, K, V, m, dropout)
    concat = heads.transpose(1, 2).reshape(B, T, -1)  # (B, T, h*d_v)
    o = concat @ attention.W_O  # (B, T, d_model)  (eq-lm-cached-attention)
    return o if attention.b_O is None else o + attention.b_O
