r"""The decoder of the plain encoder-decoder: a GRU conditioned on one fixed context.

Shape letters: ``B`` batch, ``T_x`` source length, ``T_y`` target length, ``E``
embedding size, ``H`` decoder hidden units, ``D`` the size of the context (an
encoder state), ``V`` the target vocabulary.
"""

from __future__ import annotations

import torch
from torch import nn

from seqbook._checks import (
    check_batch,
    check_input,
    check_probability,
    check_tensor,
    check_token_ids,
)
from seqbook._contracts import PositiveInt, check_signatures
from seqbook.seq2seq.encoder import Encoded

__all__ = ["Seq2SeqDecoder", "check_decoder_inputs", "check_decoder_state", "check_encoded"]


def check_encoded(encoded: object, module: nn.Module, context_size: int) -> Encoded:
    """Validate the encoder output a decoder reads (shared by both decoders)."""
    if not isinstance(encoded, Encoded):
        raise TypeError("encoded must be the encoder's Encoded output, got "
                        f"{type(encoded).__name__}")
    check_input("encoded.outputs", encoded.outputs, module, ndim=3, size=context_size,
                what="context_size")
    check_input("encoded.state", encoded.state, module, ndim=2, size=context_size,
                what="context_size")
    B, T_x, _ = encoded.outputs.shape
    check_batch("encoded.state", encoded.state, B, of="encoded.outputs")
    check_tensor("encoded.mask", encoded.mask, ndim=2)
    if encoded.mask.dtype != torch.bool or encoded.mask.shape != (B, T_x):
        raise ValueError(f"encoded.mask must be a boolean (B, T_x) = {(B, T_x)} mask, got "
                         f"{tuple(encoded.mask.shape)} {encoded.mask.dtype}")
    return encoded


def check_decoder_inputs(
    name: str, ids: object, ndim: int, encoded: object, module: nn.Module, vocab_size: int,
    context_size: int,
) -> None:
    """Validate target ids against the encoder output (shared by both decoders)."""
    encoded = check_encoded(encoded, module, context_size)
    ids = check_token_ids(name, ids, vocab_size, ndim=ndim)
    check_batch(name, ids, encoded.outputs.shape[0], of="encoded.outputs")


def check_decoder_state(
    state: object, module: nn.Module, batch_size: int, hidden_size: int
) -> None:
    """Validate the state a decoder step continues from."""
    state = check_input("state", state, module, ndim=2, size=hidden_size, what="hidden_size")
    check_batch("state", state, batch_size, of="y_prev")


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
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.context_size = context_size
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.dropout = nn.Dropout(check_probability("dropout", dropout))
        self.W_s = nn.Linear(context_size, hidden_size)
        self.rnn = nn.GRU(embed_size + context_size, hidden_size, batch_first=True)
        self.W_o = nn.Linear(hidden_size + context_size, vocab_size)

    def init_state(self, encoded: Encoded) -> torch.Tensor:
        """:math:`\\mathbf{s}_0`, shape ``(B, H)``."""
        check_encoded(encoded, self, self.context_size)
        return self._init_state(encoded)

    def _init_state(self, encoded: Encoded) -> torch.Tensor:
        return torch.tanh(self.W_s(encoded.state))  # (B, H)

    def forward(self, tgt_in: torch.Tensor, encoded: Encoded) -> tuple[torch.Tensor, None]:
        check_decoder_inputs("tgt_in", tgt_in, 2, encoded, self, self.vocab_size, self.context_size)
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
        self, y_prev: torch.Tensor, state: torch.Tensor, encoded: Encoded
    ) -> tuple[torch.Tensor, torch.Tensor, None]:
        """One decoding step from :math:`y_{i-1}` and :math:`\\mathbf{s}_{i-1}`."""
        check_decoder_inputs("y_prev", y_prev, 1, encoded, self, self.vocab_size, self.context_size)
        check_decoder_state(state, self, y_prev.shape[0], self.hidden_size)
        return self._step(self.embedding(y_prev), state, encoded)

    def _step(
        self, y_emb: torch.Tensor, s_prev: torch.Tensor, encoded: Encoded
    ) -> tuple[torch.Tensor, torch.Tensor, None]:
        c = encoded.state  # (B, D)
        x = torch.cat([y_emb, c], dim=-1).unsqueeze(1)  # (B, 1, E + D)
        _, s = self.rnn(x, s_prev.unsqueeze(0))  # (1, B, H)  (eq-s2s-plain-state)
        s = s.squeeze(0)  # (B, H)
        return self.W_o(torch.cat([s, c], dim=-1)), s, None  # (B, V)  (eq-s2s-output)


check_signatures(globals())
