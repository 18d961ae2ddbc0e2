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
from typing import cast

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_bool, check_positive_int, check_probability, check_token_ids
from seqbook.language_model.cache import KVCache, cached_self_attention
from seqbook.transformer import EncoderBlock, LayerNorm, PositionalEncoding

__all__ = ["TransformerLMConfig", "TransformerLM"]


@dataclass
class TransformerLMConfig:
    """The sizes of a :class:`TransformerLM` (defaults: the language-model chapter's)."""

    d_model: int = 64  # model width (a multiple of num_heads)
    num_heads: int = 4  # attention heads per block
    num_layers: int = 2  # blocks N_x
    d_ff: int = 192  # hidden width of the feed-forward sublayers
    max_len: int = 256  # longest context the positional encoding covers
    dropout: float = 0.0  # on embeddings, attention weights and sublayer outputs
    norm_first: bool = True  # pre-norm (True) or the paper's post-norm
    tie_weights: bool = False  # the readout uses the embedding matrix (W = E^T), as GPT

    def __post_init__(self) -> None:
        for name in ("d_model", "num_heads", "num_layers", "d_ff", "max_len"):
            check_positive_int(name, getattr(self, name))
        if self.d_model % self.num_heads:
            raise ValueError(f"d_model must be a multiple of num_heads = {self.num_heads}, "
                             f"got {self.d_model}")
        check_probability("dropout", self.dropout)
        check_bool("norm_first", self.norm_first), check_bool("tie_weights", self.tie_weights)


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
        ids: ``(B, T)`` with ``T >= 1`` and ``P + T <= max_len``.
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

    def __init__(self, vocab_size: int, config: TransformerLMConfig | None = None,
                 **overrides: object) -> None:
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
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

    def check_ids(self, ids: Int[Tensor, "B T"], cache: KVCache | None = None) -> None:
        """What a type cannot say: ``ids`` hold at least one position and ids below the
        vocabulary size, fit within ``max_len`` after the cached positions, and
        ``cache`` (if any) was made by this model for this batch."""
        check_token_ids("ids", ids, self.vocab_size)
        past, T = 0 if cache is None else cache.check(self, ids.shape[0]).length, ids.shape[1]
        if T == 0:
            raise ValueError(f"ids must have shape (B, T) with T >= 1, got {tuple(ids.shape)}")
        if past + T > self.max_len:
            raise ValueError(f"ids has {T} positions{f' after {past} cached ones' if past else ''}"
                             f", more than the model's max_len={self.max_len}")

    def forward(
        self, ids: Int[Tensor, "B T"], cache: KVCache | None = None
    ) -> tuple[Float[Tensor, "B T {self.vocab_size}"], KVCache | None]:
        self.check_ids(ids, cache)
        if cache is not None:  # generation: the new tokens after the cached ones
            return self._forward_cached(ids, cache), cache
        # (B, T, d_model)  (eq-lm-input)
        x = self.positional(self.embedding(ids) * math.sqrt(self.d_model))
        for block in self.blocks:
            # causal self-attention and FFN  (eq-lm-causal)  (eq-lm-block)
            x = block(x, is_causal=True)  # (B, T, d_model)
        return self.readout(self.norm(x)), None  # (B, T, V)  (eq-lm-output)

    @torch.no_grad()  # a cache serves generation: it is written in place
    def _forward_cached(self, ids: Tensor, cache: KVCache) -> Tensor:
        """The logits of ``ids``, read after the cache's positions, each block's
        self-attention over the cache (:func:`cached_self_attention`)."""
        P, T = cache.length, ids.shape[1]
        x = self.embedding(ids) * math.sqrt(self.d_model)  # (B, T, d_model)
        pe = self.positional.pe[P : P + T].to(x.dtype)  # positions P..P+T-1
        x = self.positional.dropout(x + pe)
        for layer, block in enumerate(cast(list[EncoderBlock], list(self.blocks))):
            attend = partial(cached_self_attention, block.self_attention, cache=cache, layer=layer)
            x = block.add_norm_1(x, attend)  # (B, T, d_model)
            x = block.add_norm_2(x, block.feed_forward)
        return self.readout(self.norm(x))  # (B, T, V)
