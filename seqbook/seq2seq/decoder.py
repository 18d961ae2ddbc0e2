r"""The decoder of the plain encoder-decoder: a GRU conditioned on one fixed context.

Shape letters: ``B`` batch, ``T_x`` source length, ``T_y`` target length, ``E``
embedding size, ``H`` decoder hidden units, ``D`` the size of the context (an
encoder state), ``V`` the target vocabulary.
"""

from __future__ import annotations

import torch
from torch import nn

from seqbook._checks import check_positive_int, check_real, check_tensor
from seqbook.seq2seq.encoder import Encoded

__all__ = ["Seq2SeqDecoder", "check_decoder_inputs"]


def check_decoder_inputs(
    name: str, ids: torch.Tensor, ndim: int, encoded: Encoded, vocab_size: int
) -> None:
    """Validate target ids against the encoder output (shared by both decoders)."""
    check_tensor(name, ids, ndim=ndim, floating=False)
    if not isinstance(encoded, Encoded):
        raise TypeError(
            f"encoded must be the encoder's Encoded output, got {type(encoded).__name__}"
        )
    if ids.shape[0] != encoded.state.shape[0]:
        raise ValueError(
            f"{name} and encoded must have the same batch size, got {ids.shape[0]} and "
            f"{encoded.state.shape[0]}"
        )
    if ids.numel() and (int(ids.min()) < 0 or int(ids.max()) >= vocab_size):
        raise ValueError(
            f"{name} must hold ids in [0, {vocab_size}), got {int(ids.min())}..{int(ids.max())}"
        )


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
        self.vocab_size = check_positive_int("vocab_size", vocab_size)
        check_positive_int("embed_size", embed_size)
        self.hidden_size = check_positive_int("hidden_size", hidden_size)
        self.context_size = check_positive_int("context_size", context_size)
        check_real("dropout", dropout, min_value=0.0, max_value=0.999)
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.W_s = nn.Linear(context_size, hidden_size)
        self.rnn = nn.GRU(embed_size + context_size, hidden_size, batch_first=True)
        self.W_o = nn.Linear(hidden_size + context_size, vocab_size)

    def _check_context(self, encoded: Encoded) -> torch.Tensor:
        c = encoded.state
        if c.shape[-1] != self.context_size:
            raise ValueError(
                f"encoded.state must have size context_size={self.context_size}, got shape "
                f"{tuple(c.shape)}"
            )
        return c

    def init_state(self, encoded: Encoded) -> torch.Tensor:
        """:math:`\\mathbf{s}_0`, shape ``(B, H)``."""
        return torch.tanh(self.W_s(self._check_context(encoded)))  # (B, H)

    def forward(self, tgt_in: torch.Tensor, encoded: Encoded) -> tuple[torch.Tensor, None]:
        check_decoder_inputs("tgt_in", tgt_in, 2, encoded, self.vocab_size)
        c = self._check_context(encoded)  # (B, D)
        T_y = tgt_in.shape[1]
        y = self.dropout(self.embedding(tgt_in))  # (B, T_y, E)
        c_rep = c.unsqueeze(1).expand(-1, T_y, -1)  # (B, T_y, D)
        s0 = self.init_state(encoded).unsqueeze(0)  # (1, B, H)
        s, _ = self.rnn(torch.cat([y, c_rep], dim=-1), s0)  # (B, T_y, H)  (eq-s2s-plain-state)
        return self.W_o(torch.cat([s, c_rep], dim=-1)), None  # (B, T_y, V)  (eq-s2s-output)

    def step(
        self, y_prev: torch.Tensor, state: torch.Tensor, encoded: Encoded
    ) -> tuple[torch.Tensor, torch.Tensor, None]:
        """One decoding step from :math:`y_{i-1}` and :math:`\\mathbf{s}_{i-1}`."""
        check_decoder_inputs("y_prev", y_prev, 1, encoded, self.vocab_size)
        c = self._check_context(encoded)  # (B, D)
        x = torch.cat([self.embedding(y_prev), c], dim=-1).unsqueeze(1)  # (B, 1, E + D)
        _, s = self.rnn(x, state.unsqueeze(0))  # (1, B, H)  (eq-s2s-plain-state)
        s = s.squeeze(0)  # (B, H)
        return self.W_o(torch.cat([s, c], dim=-1)), s, None  # (B, V)  (eq-s2s-output)
