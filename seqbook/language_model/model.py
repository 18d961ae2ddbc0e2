r"""A decoder-only transformer language model (a GPT-style stack of causal blocks).

Shape letters: ``B`` batch, ``T`` positions read in this call, ``P`` positions already
in a key-value cache, ``d_model`` the model width, ``V`` the vocabulary, ``N_x`` the
number of blocks.

The blocks are the transformer chapter's :class:`~seqbook.transformer.EncoderBlock`
with a causal mask: without an encoder to attend to, a decoder block is
self-attention and a feed-forward network, and the causal mask is what makes it a
decoder. Masks follow the book's convention (True = may attend).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import partial

import torch
from torch import nn

from seqbook._contracts import Flag, InstanceOf, MultipleOf, PositiveInt, Probability, Shaped
from seqbook.attention import causal_mask
from seqbook.language_model.cache import KVCache, _cached_self_attention
from seqbook.transformer import EncoderBlock, LayerNorm, PositionalEncoding

__all__ = ["TransformerLMConfig", "TransformerLM"]


@dataclass
class TransformerLMConfig:
    """The sizes of a :class:`TransformerLM` (defaults: the language-model chapter's)."""

    d_model: MultipleOf("num_heads") = 64  # model width
    num_heads: PositiveInt = 4  # attention heads per block (must divide d_model)
    num_layers: PositiveInt = 2  # blocks N_x
    d_ff: PositiveInt = 192  # hidden width of the feed-forward sublayers
    max_len: PositiveInt = 256  # longest context the positional encoding covers
    dropout: Probability = 0.0  # on embeddings, attention weights and sublayer outputs
    norm_first: Flag = True  # pre-norm (True) or the paper's post-norm
    tie_weights: Flag = False  # the readout uses the embedding matrix (W = E^T), as GPT


class TransformerLM(nn.Module):
    r"""Token embedding plus positions, ``N_x`` causal blocks, a final norm, a readout.

    .. math::
        \mathbf{x}^{(0)}_t = \sqrt{d_{model}}\, \mathbf{E}[x_t] + PE_t, \qquad
        \mathbf{x}^{(l)} = \operatorname{Block}_l(\mathbf{x}^{(l-1)};
        \text{causal mask}), \qquad
        P(x_{t+1} \mid x_{\le t}) = \operatorname{softmax}\big(
        \operatorname{LN}(\mathbf{x}^{(N_x)}_t) \mathbf{W} + \mathbf{b}\big)

    With ``tie_weights=True`` the readout is the embedding's transpose,
    :math:`\mathbf{W} = \mathbf{E}^\top` (Press and Wolf, 2017), as in GPT-2: one
    :math:`V \times d_{model}` matrix fewer.

    Called with a :class:`~seqbook.language_model.KVCache` (from :meth:`init_state`),
    it reads only the new tokens, appends their keys and values to the cache and
    returns the same logits as a pass over the whole sequence would give for them,
    without gradients (a cache serves generation).

    Args:
        vocab_size: :math:`V`.
        config: the sizes (:class:`TransformerLMConfig`); keyword arguments override
            its fields, e.g. ``TransformerLM(100, num_layers=4)``.

    Shapes:
        ids: ``(B, T)`` with ``P + T <= max_len``.
        returns (forward): ``(logits (B, T, V), cache)``; the cache is ``None`` when
        none was given.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = TransformerLM(vocab_size=10, d_model=8, num_heads=2, d_ff=16)
        >>> ids = torch.tensor([[1, 2, 3, 4]])
        >>> logits, _ = model(ids)
        >>> cache = model.init_state(batch_size=1)
        >>> first, cache = model(ids[:, :3], cache)     # three tokens, then one
        >>> last, cache = model(ids[:, 3:], cache)
        >>> torch.allclose(last[0, 0], logits[0, 3], atol=1e-6), cache.length
        (True, 4)
    """

    def __init__(self, vocab_size: PositiveInt,
                 config: InstanceOf(TransformerLMConfig) | None = None,
                 **overrides: object) -> None:
        super().__init__()
        if config is None:
            config = TransformerLMConfig()
        unknown = set(overrides) - set(TransformerLMConfig.__dataclass_fields__)
        if unknown:
            raise TypeError(f"unknown TransformerLM options: {sorted(unknown)}")
        # the config's fields are checked when it is made
        config = TransformerLMConfig(**{**config.__dict__, **overrides})
        self.config = config
        self.vocab_size = V = vocab_size
        self.d_model = d = config.d_model
        self.num_heads = config.num_heads
        self.num_layers = config.num_layers
        self.max_len = config.max_len
        dropout = config.dropout
        self.embedding = nn.Embedding(V, d)
        nn.init.normal_(self.embedding.weight, std=d**-0.5)  # as seqbook.transformer
        self.positional = PositionalEncoding(d, config.max_len, dropout)
        self.blocks = nn.ModuleList(
            EncoderBlock(d, config.num_heads, config.d_ff, dropout, norm_first=config.norm_first)
            for _ in range(config.num_layers)
        )
        self.norm = LayerNorm(d) if config.norm_first else nn.Identity()
        self.readout = nn.Linear(d, V)
        if config.tie_weights:
            self.readout.weight = self.embedding.weight  # one (V, d) matrix, two uses

    def init_state(self, batch_size: int) -> KVCache:
        """An empty key-value cache for a batch of ``batch_size`` sequences."""
        d_k = self.d_model // self.num_heads
        return KVCache.empty(self, batch_size, self.num_layers, self.num_heads, d_k, d_k,
                            capacity=self.max_len)

    def forward(
        self,
        ids: Shaped("B T", ids="vocab_size", min_size={"T": 1}),
        cache: InstanceOf(KVCache, what="a KVCache or None") | None = None,
    ) -> tuple[torch.Tensor, KVCache | None]:
        past, T = 0 if cache is None else cache.length, ids.shape[1]
        if past + T > self.max_len:
            raise ValueError(f"ids has {T} positions{f' after {past} cached ones' if past else ''}"
                             f", more than the model's max_len={self.max_len}")
        if cache is not None:
            return self._forward_cached(ids, cache)
        return self._forward(ids), None

    def _forward(self, ids: torch.Tensor) -> torch.Tensor:
        """The logits ``(B, T, V)`` of checked ``ids``, without a cache."""
        T = ids.shape[1]
        # (B, T, d_model)  (eq-lm-input)
        x = self.embedding(ids) * math.sqrt(self.d_model)
        # + PE_t
        x = self.positional.dropout(x + self.positional.pe[:T].to(x.dtype))
        # (T, T), True = may attend  (eq-lm-causal)
        mask = causal_mask(T, device=ids.device)
        for block in self.blocks:
            # src_mask means what torch's does: True where attention is forbidden
            # (B, T, d_model)  (eq-lm-block)
            x = block._encode(x, ~mask, None, False)
        return self.readout(self.norm(x))  # (B, T, V)  (eq-lm-output)

    def _forward_cached(self, ids: torch.Tensor, cache: KVCache) -> tuple[torch.Tensor, KVCache]:
        cache.check(self, ids.shape[0])
        with torch.no_grad():  # a cache serves generation: it is written in place
            return self._read_with_cache(ids, cache), cache

    def _read_with_cache(self, ids: torch.Tensor, cache: KVCache) -> torch.Tensor:
        """The logits of ``ids``, read after the cache's positions (checked arguments)."""
        P, T = cache.length, ids.shape[1]
        x = self.embedding(ids) * math.sqrt(self.d_model)  # (B, T, d_model)
        pe = self.positional.pe[P : P + T].to(x.dtype)  # positions P..P+T-1
        x = self.positional.dropout(x + pe)
        for layer, block in enumerate(self.blocks):
            attend = partial(_cached_self_attention, block.self_attention, cache=cache, layer=layer)
            x = block.add_norm_1._add_norm(x, attend)  # (B, T, d_model)
            x = block.add_norm_2._add_norm(x, block.feed_forward._ffn)
        return self.readout(self.norm(x))  # (B, T, V)
