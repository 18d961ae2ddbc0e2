r"""The decoder of the plain encoder-decoder: a GRU conditioned on one fixed context.

Shape letters: ``B`` batch, ``T_x`` source length, ``T_y`` target length, ``E``
embedding size, ``H`` decoder hidden units, ``D`` the size of the context (an
encoder state), ``V`` the target vocabulary.
"""

from __future__ import annotations

from typing import Annotated, Any

import torch
from torch import nn

from seqbook._contracts import Dims, PositiveInt, Probability, Shaped
from seqbook.seq2seq.encoder import Encoded

__all__ = ["Seq2SeqDecoder"]


class _EncodedDims(Dims):
    """The contract of the encoder output a decoder reads (shared by both decoders): an
    :class:`Encoded` whose ``outputs (B, T_x, context_size)`` and ``state (B, context_size)``
    have the dtype of the decoder's parameters and whose ``mask (B, T_x)`` is boolean."""

    _state = Dims("B context_size", floating=True, dtype_of="module")
    _mask = Dims("B T_x", dtype=torch.bool)  # True at real source tokens

    def __init__(self) -> None:
        super().__init__("B T_x context_size", floating=True, dtype_of="module")

    def check_in(self, name: str, value: Any, call: dict[str, Any], bound: dict[str, Any]) -> Any:
        if not isinstance(value, Encoded):
            raise TypeError(f"{name} must be the encoder's Encoded output, got "
                            f"{type(value).__name__}")
        super().check_in(f"{name}.outputs", value.outputs, call, bound)
        self._state.check_in(f"{name}.state", value.state, call, bound)
        self._mask.check_in(f"{name}.mask", value.mask, call, bound)
        return value


# the encoder output, as a decoder of context_size reads it
EncodedInput = Annotated[Encoded, _EncodedDims()]
# a decoder's state s_{i-1}, one per sentence
DecoderState = Shaped("B hidden_size", floating=True, dtype_of="module")


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
        vocab_size: PositiveInt,
        embed_size: PositiveInt,
        hidden_size: PositiveInt,
        context_size: PositiveInt,
        dropout: Probability = 0.0,
    ) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.context_size = context_size
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.W_s = nn.Linear(context_size, hidden_size)
        self.rnn = nn.GRU(embed_size + context_size, hidden_size, batch_first=True)
        self.W_o = nn.Linear(hidden_size + context_size, vocab_size)

    def init_state(self, encoded: EncodedInput) -> torch.Tensor:
        """:math:`\\mathbf{s}_0`, shape ``(B, H)``."""
        return self._init_state(encoded)

    def _init_state(self, encoded: Encoded) -> torch.Tensor:
        return torch.tanh(self.W_s(encoded.state))  # (B, H)

    def forward(
        self, tgt_in: Shaped("B T_y", ids="vocab_size"), encoded: EncodedInput
    ) -> tuple[torch.Tensor, None]:
        return self._decode(tgt_in, encoded)

    def _decode(
        self, tgt_in: torch.Tensor, encoded: Encoded
    ) -> tuple[torch.Tensor, None]:
        """:meth:`forward` of checked arguments: the whole target at once (teacher forcing)."""
        c, T_y = encoded.state, tgt_in.shape[1]  # (B, D)
        y = self.dropout(self.embedding(tgt_in))  # (B, T_y, E)
        c_rep = c.unsqueeze(1).expand(-1, T_y, -1)  # (B, T_y, D)
        s0 = torch.tanh(self.W_s(c)).unsqueeze(0)  # (1, B, H)  (eq-s2s-plain-state)
        # (B, T_y, H)  (eq-s2s-plain-state)
        s, _ = self.rnn(torch.cat([y, c_rep], dim=-1), s0)
        # (B, T_y, V)  (eq-s2s-output)
        return self.W_o(torch.cat([s, c_rep], dim=-1)), None

    def step(
        self, y_prev: Shaped("B", ids="vocab_size"), state: DecoderState, encoded: EncodedInput
    ) -> tuple[torch.Tensor, torch.Tensor, None]:
        """One decoding step from :math:`y_{i-1}` and :math:`\\mathbf{s}_{i-1}`."""
        return self._step(self.embedding(y_prev), state, encoded)

    def _step(
        self, y_emb: torch.Tensor, s_prev: torch.Tensor, encoded: Encoded
    ) -> tuple[torch.Tensor, torch.Tensor, None]:
        c = encoded.state  # (B, D)
        x = torch.cat([y_emb, c], dim=-1).unsqueeze(1)  # (B, 1, E + D)
        _, s = self.rnn(x, s_prev.unsqueeze(0))  # (1, B, H)  (eq-s2s-plain-state)
        s = s.squeeze(0)  # (B, H)
        return self.W_o(torch.cat([s, c], dim=-1)), s, None  # (B, V)  (eq-s2s-output)
