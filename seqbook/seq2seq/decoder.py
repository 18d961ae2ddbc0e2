r"""The decoder of the plain encoder-decoder: a GRU conditioned on one fixed context.

Shape letters: ``B`` batch, ``T_x`` source length, ``T_y`` target length, ``E``
embedding size, ``H`` decoder hidden units, ``D`` the size of the context (an
encoder state), ``V`` the target vocabulary.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import (
    check_positive_int,
    check_probability,
    check_tensor,
    check_token_ids,
    parameter_dtype,
)
from seqbook.seq2seq.encoder import Encoded

if TYPE_CHECKING:
    from seqbook.seq2seq.bahdanau import BahdanauDecoder

__all__ = ["Seq2SeqDecoder"]


def _check_encoded(
    decoder: Seq2SeqDecoder | BahdanauDecoder, encoded: object, B: int | None, of: str
) -> None:
    """What the type :class:`Encoded` cannot say (shared by both decoders): its
    ``outputs (B, T_x, context_size)``, ``mask (B, T_x)`` and ``state (B, context_size)``
    fit the batch ``B`` of the argument ``of`` (default: that of ``outputs``) and the
    decoder's ``context_size``, with the dtype of its parameters and a boolean mask."""
    if not isinstance(encoded, Encoded):
        raise TypeError(f"encoded must be the encoder's Encoded output, got "
                        f"{type(encoded).__name__}")
    outputs = check_tensor("encoded.outputs", encoded.outputs, ndim=3, floating=True)
    B = outputs.shape[0] if B is None else B
    T_x, D = outputs.shape[1], decoder.context_size
    shapes = {"outputs": ((B, T_x, D), "(B, T_x, context_size)"),
              "mask": ((B, T_x), "(B, T_x)"), "state": ((B, D), "(B, context_size)")}
    for field, (shape, letters) in shapes.items():
        value = check_tensor(f"encoded.{field}", getattr(encoded, field))
        if tuple(value.shape) != shape:
            raise ValueError(f"encoded.{field} must have shape {letters} with B = {B} (as in "
                             f"{of}) and context_size = {D}, got {tuple(value.shape)}")
    if encoded.mask.dtype != torch.bool:
        raise TypeError(f"encoded.mask must have dtype torch.bool, got {encoded.mask.dtype}")
    dtype = parameter_dtype(decoder)
    for field in ("outputs", "state"):
        if getattr(encoded, field).dtype != dtype:
            raise TypeError(f"encoded.{field} must have the dtype of the decoder's parameters "
                            f"({dtype}), got {getattr(encoded, field).dtype}")


def _check_inputs(
    decoder: Seq2SeqDecoder | BahdanauDecoder, name: str, ids: Tensor, encoded: object
) -> None:
    """The token ids ``ids`` (the argument ``name``) are below the decoder's
    ``vocab_size``, and ``encoded`` fits their batch (see :func:`_check_encoded`)."""
    check_token_ids(name, ids, decoder.vocab_size, of="the decoder's vocab_size")
    _check_encoded(decoder, encoded, ids.shape[0], name)


class Seq2SeqDecoder(nn.Module):
    r"""A GRU decoder that sees the same context vector :math:`\mathbf{c}` at every step.

    .. math::
        \mathbf{s}_0 = \tanh(\mathbf{W}_s \mathbf{c}), \qquad
        \mathbf{s}_i = f(\mathbf{s}_{i-1}, y_{i-1}, \mathbf{c}), \qquad
        P(y_i \mid y_{<i}, \mathbf{x}) = \operatorname{softmax}(
        \mathbf{W}_o [\mathbf{s}_i; \mathbf{c}] + \mathbf{b}_o)

    with :math:`f` a GRU whose input is the embedding of :math:`y_{i-1}` concatenated
    with :math:`\mathbf{c}`, the encoder's summary (:class:`Encoded` ``.state``).
    Whatever the decoder needs to know about the source must pass through
    :math:`\mathbf{c}`.

    Args:
        vocab_size: :math:`V`, the target vocabulary (id 0 is ``<pad>``).
        embed_size: :math:`E`.
        hidden_size: :math:`H`.
        context_size: :math:`D`, the encoder's output size.
        dropout: dropout on the embeddings, in [0, 1).

    Shapes:
        tgt_in: ``(B, T_y)`` ids (teacher forcing); returns logits
            ``(B, T_y, V)`` and ``None`` (no attention weights).
        step: ``y_prev (B,)`` and ``state (B, H)``; returns logits ``(B, V)``,
            the new state ``(B, H)`` and ``None``.

    Example:
        >>> from seqbook.seq2seq import Seq2SeqEncoder
        >>> _ = torch.manual_seed(0)
        >>> encoder = Seq2SeqEncoder(10, 4, 6, bidirectional=True)
        >>> decoder = Seq2SeqDecoder(12, 4, 8, context_size=12)
        >>> encoded = encoder(torch.tensor([[3, 4, 2]]), torch.tensor([3]))
        >>> logits, weights = decoder(torch.tensor([[1, 5, 6]]), encoded)
        >>> tuple(logits.shape), weights is None
        ((1, 3, 12), True)
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        for name, size in dict(vocab_size=vocab_size, embed_size=embed_size,
                               hidden_size=hidden_size, context_size=context_size).items():
            check_positive_int(name, size)
        check_probability("dropout", dropout)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.context_size = context_size
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.W_s = nn.Linear(context_size, hidden_size)
        self.rnn = nn.GRU(embed_size + context_size, hidden_size, batch_first=True)
        self.W_o = nn.Linear(hidden_size + context_size, vocab_size)

    def init_state(self, encoded: Encoded) -> Float[Tensor, "B {self.hidden_size}"]:
        """:math:`\\mathbf{s}_0`, shape ``(B, H)``."""
        _check_encoded(self, encoded, None, "encoded.outputs")
        return torch.tanh(self.W_s(encoded.state))  # (B, H)

    def forward(
        self, tgt_in: Int[Tensor, "B T_y"], encoded: Encoded
    ) -> tuple[Float[Tensor, "B T_y {self.vocab_size}"], None]:
        """The whole target at once (teacher forcing)."""
        _check_inputs(self, "tgt_in", tgt_in, encoded)
        c, T_y = encoded.state, tgt_in.shape[1]  # (B, D)
        y = self.dropout(self.embedding(tgt_in))  # (B, T_y, E)
        c_rep = c.unsqueeze(1).expand(-1, T_y, -1)  # (B, T_y, D)
        s0 = torch.tanh(self.W_s(c)).unsqueeze(0)  # (1, B, H)  (eq-s2s-plain-state)
        # (B, T_y, H)  (eq-s2s-plain-state)
        s, _ = self.rnn(torch.cat([y, c_rep], dim=-1), s0)
        # (B, T_y, V)  (eq-s2s-output)
        return self.W_o(torch.cat([s, c_rep], dim=-1)), None

    def step(
        self,
        y_prev: Int[Tensor, " B"],
        state: Float[Tensor, "B {self.hidden_size}"],
        encoded: Encoded,
    ) -> tuple[Float[Tensor, "B {self.vocab_size}"], Float[Tensor, "B {self.hidden_size}"], None]:
        """One decoding step from :math:`y_{i-1}` and :math:`\\mathbf{s}_{i-1}`."""
        _check_inputs(self, "y_prev", y_prev, encoded)
        y_emb = self.dropout(self.embedding(y_prev))  # (B, E)
        c = encoded.state  # (B, D)
        x = torch.cat([y_emb, c], dim=-1).unsqueeze(1)  # (B, 1, E + D)
        _, s = self.rnn(x, state.unsqueeze(0))  # (1, B, H)  (eq-s2s-plain-state)
        s = s.squeeze(0)  # (B, H)
        return self.W_o(torch.cat([s, c], dim=-1)), s, None  # (B, V)  (eq-s2s-output)
