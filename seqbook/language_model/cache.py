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
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int, check_same_dtype
from seqbook.attention import MultiHeadAttention, project_heads, scaled_dot_product_attention

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
    step writes the new positions' keys and values into them (:meth:`append`):
    appending never copies what is already cached.

    Attributes:
        key_buffers, value_buffers: one ``(B, h, capacity, d_k)`` tensor per layer.
        lengths: the positions written so far in each layer (equal between calls).
        batch_size: :math:`B`.
        owner: a weak reference to the model that made the cache (call it to get
            the model, or ``None`` once the model is gone).
    """

    key_buffers: list[Tensor]
    value_buffers: list[Tensor]
    lengths: list[int]
    batch_size: int
    owner: Callable[[], nn.Module | None] = field(repr=False)

    @classmethod
    def empty(cls, model: nn.Module, batch_size: int, num_layers: int, num_heads: int,
              d_k: int, d_v: int, capacity: int) -> KVCache:
        """An empty cache (``P = 0``) of ``capacity`` positions for ``model``, on its
        device and in its dtype."""
        for name, size in dict(batch_size=batch_size, num_layers=num_layers,
                               num_heads=num_heads, d_k=d_k, d_v=d_v,
                               capacity=capacity).items():
            check_positive_int(name, size)
        weight = next(model.parameters())
        device, dtype = weight.device, weight.dtype
        shape_k = (batch_size, num_heads, capacity, d_k)
        shape_v = (batch_size, num_heads, capacity, d_v)
        return cls(
            key_buffers=[torch.zeros(shape_k, device=device, dtype=dtype)
                         for _ in range(num_layers)],
            value_buffers=[torch.zeros(shape_v, device=device, dtype=dtype)
                           for _ in range(num_layers)],
            lengths=[0] * num_layers,
            batch_size=batch_size,
            owner=weakref.ref(model),
        )

    @property
    def keys(self) -> list[Tensor]:
        """The cached keys of each layer, ``(B, h, P, d_k)`` views of the buffers."""
        return [k[:, :, :n] for k, n in zip(self.key_buffers, self.lengths)]

    @property
    def values(self) -> list[Tensor]:
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

    def copy(self) -> KVCache:
        """An independent copy (later steps on either leave the other unchanged)."""
        return KVCache([k.clone() for k in self.key_buffers],
                       [v.clone() for v in self.value_buffers], list(self.lengths),
                       self.batch_size, self.owner)

    def check(self, model: nn.Module, batch_size: int) -> KVCache:
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

    def append(self, layer: int, keys: Float[Tensor, "{self.batch_size} h T d_k"],
               values: Float[Tensor, "{self.batch_size} h T d_v"]
               ) -> tuple[Float[Tensor, "B h L d_k"], Float[Tensor, "B h L d_v"]]:
        """Write the keys and values of ``T`` new positions of ``layer`` after its ``P``
        cached ones, and return all ``L = P + T`` (views of the buffers: nothing is
        copied).

        Example:
            >>> from seqbook.language_model import TransformerLM
            >>> cache = TransformerLM(5, d_model=8, num_heads=2).init_state(batch_size=1)
            >>> K, V = cache.append(0, torch.ones(1, 2, 3, 4), torch.ones(1, 2, 3, 4))
            >>> tuple(K.shape), cache.lengths
            ((1, 2, 3, 4), [3, 0])
        """
        check_int("layer", layer, min_value=0, max_value=self.num_layers - 1)
        P, T = self.lengths[layer], keys.shape[2]
        if P + T > self.capacity:
            raise ValueError(f"keys has {T} positions after {P} cached ones, "
                             f"more than the cache's capacity of {self.capacity}")
        self.key_buffers[layer][:, :, P : P + T] = keys  # (eq-lm-cache-append)
        self.value_buffers[layer][:, :, P : P + T] = values
        self.lengths[layer] = P + T
        K, V = self.key_buffers[layer], self.value_buffers[layer]
        return K[:, :, : P + T], V[:, :, : P + T]  # K_{<=t}, V_{<=t}


def _check_generation(attention: MultiHeadAttention, x: Tensor, cache: KVCache) -> None:
    """What the types cannot say: ``x`` has the cache's batch size and dtype, and the
    call serves generation (no gradients: the cache is written in place)."""
    if x.shape[0] != cache.batch_size:
        raise ValueError(f"x must have the cache's batch size {cache.batch_size} (B, T, "
                         f"d_model), got shape {tuple(x.shape)}")
    check_same_dtype("x", x, cache.dtype, of="cache.dtype")
    if torch.is_grad_enabled() and any(p.requires_grad for p in attention.parameters()):
        raise RuntimeError("cached attention is for generation: call it under torch.no_grad() "
                           "(the cache is written in place, which gradients cannot flow through)")


def cached_self_attention(
    attention: MultiHeadAttention,
    x: Float[Tensor, "B T {attention.d_model}"],
    cache: KVCache,
    layer: int,
) -> Float[Tensor, "B T {attention.d_model}"]:
    r"""Causal self-attention of ``T`` new positions to the cached past and to themselves.

    The new positions' keys and values are appended to the cache of ``layer``
    (:meth:`KVCache.append`); query :math:`i` (position :math:`P + i`) attends to every
    key up to its own position. Uses the weights of ``attention`` (a
    :class:`~seqbook.attention.MultiHeadAttention`), so it computes what
    ``attention(x_all, x_all, x_all, attn_mask=~causal_mask(P + T))`` computes for the
    last ``T`` rows, without recomputing the first ``P``.

    Args:
        attention: the layer's multi-head attention.
        x: the new positions' inputs, in the cache's dtype.
        cache: the cache; ``T`` positions are written into its ``layer`` buffers
            (``P + T`` must not exceed its capacity).
        layer: which layer's keys and values to use.

    Shapes:
        x: ``(B, T, d_model)`` with ``B`` the cache's batch size.
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
    _check_generation(attention, x, cache)  # no gradients; the cache's B, dtype
    B, T, _ = x.shape
    # the new keys and values, after the cached ones  (eq-lm-cache-append)
    K, V = cache.append(layer, project_heads(x, attention.W_K, attention.b_K),
                        project_heads(x, attention.W_V, attention.b_V))
    P = K.shape[2] - T  # K, V: (B, h, P + T, d_k)
    Q = project_heads(x, attention.W_Q, attention.b_Q)  # (B, h, T, d_k)
    # query i is position P + i: it may see keys j <= P + i  (eq-lm-cached-mask)
    m = None if T == 1 else torch.ones(
        T, P + T, dtype=torch.bool, device=x.device).tril(P)
    p = attention.dropout if attention.training else 0.0
    heads, _ = scaled_dot_product_attention(Q, K, V, m, p)  # (B, h, T, d_v)
    concat = heads.transpose(1, 2).reshape(B, T, -1)  # (B, T, h*d_v)
    o = concat @ attention.W_O  # (B, T, d_model)  (eq-lm-cached-attention)
    return o if attention.b_O is None else o + attention.b_O
