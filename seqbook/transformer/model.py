r"""The encoder-decoder transformer for translation (Vaswani et al., 2017).

Shape letters: ``B`` batch (``N`` sentences when decoding), ``K`` prefixes (beams) per
sentence, ``S`` source length, ``T`` target length, ``d_model`` the model width,
``V`` the target vocabulary.

Its interface mirrors :class:`seqbook.seq2seq.EncoderDecoder`: ``loss(batch)`` for
:func:`seqbook.train.fit`, ``step_function`` for :mod:`seqbook.decoding` and
``generate``, so that :func:`seqbook.seq2seq.evaluate_translator` scores both alike.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from seqbook._checks import check_positive_int, check_real, check_token_ids
from seqbook.data import lengths_to_mask
from seqbook.decoding import Hypotheses
from seqbook.decoding.beam import search_in_eval_mode
from seqbook.decoding.common import StepFn
from seqbook.losses import label_smoothing_loss
from seqbook.seq2seq.data import TranslationBatch
from seqbook.transformer.blocks import DecoderBlock, EncoderBlock
from seqbook.transformer.norm import LayerNorm
from seqbook.transformer.positional import PositionalEncoding

__all__ = ["Transformer"]


class Transformer(nn.Module):
    r"""Embeddings plus positions, ``N_x`` encoder and decoder blocks, a linear output.

    .. math::
        \mathbf{x}_t = \sqrt{d_{model}}\, \mathbf{E}[w_t] + PE_t, \qquad
        P(y_i \mid y_{<i}, \mathbf{x}) = \operatorname{softmax}(
        \mathbf{h}_i \mathbf{W}_{out} + \mathbf{b}_{out})

    The encoder stack reads the source with self-attention (padding masked); the
    decoder stack reads the target prefix with causal self-attention and the encoder
    output with cross-attention. The embeddings are multiplied by
    :math:`\sqrt{d_{model}}` so that they are not drowned by the positional encoding
    (whose entries have unit size) when initialised with unit-variance entries
    divided by :math:`\sqrt{d_{model}}`. With ``norm_first=True`` (pre-norm) each
    stack ends with a ``LayerNorm``, as in PyTorch's ``nn.Transformer``; post-norm
    blocks already end with one.

    Args:
        src_vocab_size: source vocabulary size.
        tgt_vocab_size: target vocabulary size :math:`V`.
        d_model: model width; ``num_heads`` must divide it.
        num_heads: attention heads per sublayer.
        num_layers: blocks :math:`N_x` in the encoder, and in the decoder.
        d_ff: hidden width of the feed-forward sublayers.
        dropout: dropout on embeddings, attention weights and sublayer outputs.
        norm_first: pre-norm (True) or the paper's post-norm (False, PyTorch's
            default).
        max_len: longest source or target the positional encoding covers.
        pad_id, bos_id, eos_id: the vocabularies' special ids (shared by both).
        activation: the feed-forward sublayers' ``"relu"``, ``"gelu"`` or a callable.
        layer_norm_eps: the layer norms' epsilon.
        bias: biases in the blocks' linear maps and layer norms.

    Shapes:
        src: ``(B, S)`` ids; src_lengths: ``(B,)``; tgt_in: ``(B, T)`` ids starting
        with ``<bos>``.
        returns (forward): logits ``(B, T, V)``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> model = Transformer(10, 9, d_model=8, num_heads=2, num_layers=1, d_ff=16)
        >>> src, lengths = torch.tensor([[4, 5, 2]]), torch.tensor([3])
        >>> tuple(model(src, lengths, torch.tensor([[1, 6]])).shape)
        (1, 2, 9)
        >>> out = model.generate(src, lengths, max_len=4, beam_size=2)
        >>> len(out.tokens), len(out.tokens[0]) <= 4
        (1, True)
    """

    def __init__(
        self,
        src_vocab_size: int,
        tgt_vocab_size: int,
        d_model: int = 64,
        num_heads: int = 4,
        num_layers: int = 2,
        d_ff: int = 256,
        dropout: float = 0.1,
        norm_first: bool = False,
        max_len: int = 128,
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
        *,
        activation: str | Callable[[Tensor], Tensor] = "relu",
        layer_norm_eps: float = 1e-5,
        bias: bool = True,
    ) -> None:
        super().__init__()
        for name, size in dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size,
                               d_model=d_model, num_heads=num_heads, num_layers=num_layers,
                               d_ff=d_ff, max_len=max_len).items():
            check_positive_int(name, size)
        for name, token in dict(pad_id=pad_id, bos_id=bos_id, eos_id=eos_id).items():
            sizes = dict(src_vocab_size=src_vocab_size, tgt_vocab_size=tgt_vocab_size)
            for size_name, size in sizes.items():
                if (name == "pad_id" or size_name == "tgt_vocab_size") and not 0 <= token < size:
                    raise ValueError(f"{name} must be an id in [0, {size_name} = {size}), "
                                     f"got {token}")
        V_src = src_vocab_size
        V_tgt = tgt_vocab_size
        self.src_vocab_size, self.tgt_vocab_size = V_src, V_tgt
        self.d_model = d_model
        self.num_layers = num_layers
        self.max_len = max_len
        self.pad_id = pad_id
        self.bos_id = bos_id
        self.eos_id = eos_id
        self.src_embedding = nn.Embedding(V_src, d_model, padding_idx=pad_id)
        self.tgt_embedding = nn.Embedding(V_tgt, d_model, padding_idx=pad_id)
        for embedding in (self.src_embedding, self.tgt_embedding):
            nn.init.normal_(embedding.weight, std=d_model**-0.5)
            with torch.no_grad():
                embedding.weight[pad_id].zero_()
        self.positional = PositionalEncoding(d_model, max_len, dropout)
        blocks = (d_model, num_heads, d_ff, dropout, activation, layer_norm_eps)
        self.encoder_blocks = nn.ModuleList(
            EncoderBlock(*blocks, norm_first=norm_first, bias=bias) for _ in range(num_layers)
        )
        self.decoder_blocks = nn.ModuleList(
            DecoderBlock(*blocks, norm_first=norm_first, bias=bias) for _ in range(num_layers)
        )
        # pre-norm stacks end with a LayerNorm; post-norm blocks already do
        self.encoder_norm = (
            LayerNorm(d_model, layer_norm_eps, bias) if norm_first else nn.Identity()
        )
        self.decoder_norm = (
            LayerNorm(d_model, layer_norm_eps, bias) if norm_first else nn.Identity()
        )
        self.output = nn.Linear(d_model, V_tgt)
        self.norm_first = norm_first

    def embed(
        self, ids: Int[Tensor, "B T"], embedding: nn.Embedding
    ) -> Float[Tensor, "B T {self.d_model}"]:
        """Scaled embeddings plus positional encoding (and dropout)."""
        x = embedding(ids) * math.sqrt(self.d_model)  # (B, T, d)  (eq-tf-embed)
        return self.positional(x)  # (B, T, d_model)

    def check_ids(self, name: str, ids: Tensor, vocab_size: int) -> None:
        """What a type cannot say: ``ids`` are below the vocabulary size, and the
        sequence is no longer than the positional encoding (``max_len``)."""
        if ids.shape[-1] > self.max_len:
            raise ValueError(f"{name} must be at most max_len = {self.max_len} long, got "
                             f"{ids.shape[-1]}")
        check_token_ids(name, ids, vocab_size)

    def check_batch(self, batch: TranslationBatch) -> None:
        """What a type cannot say about a batch: its targets and their mask have the
        shape of ``tgt_in``, and the targets at the masked-in positions are ids."""
        shape = tuple(batch.tgt_in.shape)
        for name, value, dtype in (("tgt_out", batch.tgt_out, "an integer"),
                                   ("tgt_mask", batch.tgt_mask, "a boolean")):
            if tuple(value.shape) != shape:
                raise ValueError(f"batch.{name} must have the shape {shape} of batch.tgt_in, "
                                 f"got {tuple(value.shape)}")
            if value.is_floating_point() or (dtype == "a boolean") != (value.dtype == torch.bool):
                raise TypeError(f"batch.{name} must have {dtype} dtype, got {value.dtype}")
        check_token_ids("batch.tgt_out", batch.tgt_out.masked_fill(~batch.tgt_mask, 0),
                        self.tgt_vocab_size, of="tgt_vocab_size, where batch.tgt_mask is True")

    def encode(
        self, src: Int[Tensor, "B S"], src_lengths: Int[Tensor, " B"]
    ) -> tuple[Float[Tensor, "B S {self.d_model}"], Bool[Tensor, "B S"]]:
        """The encoder output ("memory") ``(B, S, d_model)`` and its padding mask
        ``(B, S)``, True at padding (as ``memory_key_padding_mask`` in torch)."""
        self.check_ids("src", src, self.src_vocab_size)
        if not torch.compiler.is_compiling() and (
                bool((src_lengths < 1).any()) or bool((src_lengths > src.shape[1]).any())):
            raise ValueError(f"src_lengths must hold values in [1, S = {src.shape[1]}] (the "
                             f"length of src), got {src_lengths.tolist()}")
        padding = ~lengths_to_mask(src_lengths, src.shape[1]).to(src.device)  # (B, S)
        x = self.embed(src, self.src_embedding)
        for block in self.encoder_blocks:
            x = block(x, src_key_padding_mask=padding)  # (B, S, d_model)
        return self.encoder_norm(x), padding

    def decode(
        self,
        tgt_in: Int[Tensor, "B T"],
        memory: Float[Tensor, "B S {self.d_model}"],
        memory_key_padding_mask: Bool[Tensor, "B S"] | None = None,
    ) -> Float[Tensor, "B T {self.tgt_vocab_size}"]:
        """Logits ``(B, T, V)`` for every position of the target prefix ``tgt_in``
        (the decoder is causal). ``memory_key_padding_mask`` ``(B, S)`` is True at the
        padded source positions (what :meth:`encode` returns)."""
        self.check_ids("tgt_in", tgt_in, self.tgt_vocab_size)
        y = self.embed(tgt_in, self.tgt_embedding)
        for block in self.decoder_blocks:  # (B, T, d_model)
            y = block(y, memory, memory_key_padding_mask=memory_key_padding_mask,
                      tgt_is_causal=True)
        return self.output(self.decoder_norm(y))  # (B, T, V)

    def forward(
        self, src: Int[Tensor, "B S"], src_lengths: Int[Tensor, " B"], tgt_in: Int[Tensor, "B T"]
    ) -> Float[Tensor, "B T {self.tgt_vocab_size}"]:
        """Teacher-forced logits ``(B, T, V)``."""
        return self.decode(tgt_in, *self.encode(src, src_lengths))

    def loss(self, batch: TranslationBatch, label_smoothing: float = 0.0) -> Tensor:
        """The (label-smoothed) cross-entropy of one batch over its real target tokens."""
        check_real("label_smoothing", label_smoothing, min_value=0.0, max_value=1.0)
        self.check_batch(batch)
        logits = self(batch.src, batch.src_lengths, batch.tgt_in)  # (B, T, V)
        target = batch.tgt_out.masked_fill(~batch.tgt_mask, -100)  # (B, T)
        return label_smoothing_loss(logits, target, label_smoothing, ignore_index=-100)

    def attention_maps(self) -> dict[str, list[Tensor | None]]:
        """The last call's attention weights of every block, for plotting.

        Keys ``"encoder"`` (each ``(B, h, S, S)``), ``"decoder"`` (``(B, h, T, T)``)
        and ``"cross"`` (``(B, h, T, S)``), one tensor per layer.
        """
        encoders = [b for b in self.encoder_blocks if isinstance(b, EncoderBlock)]
        decoders = [b for b in self.decoder_blocks if isinstance(b, DecoderBlock)]
        return {
            "encoder": [b.last_attention for b in encoders],
            "decoder": [b.last_self_attention for b in decoders],
            "cross": [b.last_cross_attention for b in decoders],
        }

    def step_function(self, src: Int[Tensor, "N S"], src_lengths: Int[Tensor, " N"]) -> StepFn:
        """A stateless step function for :mod:`seqbook.decoding` that translates ``src``.

        The sources are encoded once; each call re-runs the decoder on the whole
        prefixes ``(N, K, t)`` and returns the log-probabilities of the next token,
        ``(N, K, V)``. The causal mask makes the earlier positions' outputs the same as
        at the previous call, so only the last position is new (a key-value cache
        would avoid recomputing the others). ``<pad>`` and ``<bos>`` get probability 0.
        """
        with torch.no_grad():
            memory, padding = self.encode(src, src_lengths)
        N = src.shape[0]
        expanded: dict[int, tuple[torch.Tensor, torch.Tensor]] = {}

        def step(prefixes: torch.Tensor, state: None) -> tuple[torch.Tensor, None]:
            _, K, t = prefixes.shape
            if K not in expanded:  # every prefix of sentence n reads sentence n
                expanded[K] = (
                    memory.repeat_interleave(K, dim=0),  # (N*K, S, d_model)
                    padding.repeat_interleave(K, dim=0),  # (N*K, S)
                )
            mem, mask = expanded[K]
            with torch.no_grad():
                flat = prefixes.reshape(N * K, t).to(memory.device)  # (N*K, t)
                if t == 1:  # bos, the search's; the later tokens are the model's own
                    check_token_ids("prefixes (bos)", flat, self.tgt_vocab_size)
                logits = self.decode(flat, mem, mask)[:, -1]  # (N*K, V)
                log_probs = torch.log_softmax(logits, dim=-1)
                log_probs[:, [self.pad_id, self.bos_id]] = float("-inf")
            return log_probs.view(N, K, -1), None  # (N, K, V)

        return step

    def generate(
        self,
        src: Int[Tensor, "N S"],
        src_lengths: Int[Tensor, " N"],
        max_len: int,
        beam_size: int = 1,
        length_penalty: float = 0.0,
    ) -> Hypotheses:
        """Translate a batch with beam search (``beam_size=1``: greedy)."""
        return search_in_eval_mode(self, src, src_lengths, max_len, beam_size, length_penalty)
