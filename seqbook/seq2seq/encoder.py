r"""The encoder of a sequence-to-sequence model: an embedding and a (bidirectional) GRU.

Shape letters: ``B`` batch, ``T`` source length, ``E`` embedding size, ``H`` hidden
units per direction, ``D`` = ``H`` or ``2H`` (bidirectional) the size of an encoder
state.
"""

from __future__ import annotations

from typing import NamedTuple

import torch
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqbook._checks import check_positive_int, check_probability, check_token_ids
from seqbook.data import lengths_to_mask

__all__ = ["Encoded", "Seq2SeqEncoder"]


class Encoded(NamedTuple):
    """What the decoder may read: every encoder state, the mask, the summary."""

    outputs: Float[Tensor, "B T D"]  # the annotations h_1 ... h_T (zero at padding)
    mask: Bool[Tensor, "B T"]  # a keep mask: True at real source tokens
    state: Float[Tensor, "B D"]  # the fixed context c: the final state(s)


class Seq2SeqEncoder(nn.Module):
    r"""Embed the source tokens and run a GRU over them.

    .. math::
        \mathbf{h}_t = f(\mathbf{x}_t, \mathbf{h}_{t-1})

    (eq. 4.1 of the notes), with :math:`f` a GRU. A bidirectional encoder runs a
    second GRU from the end of each sentence to its start and concatenates the two,
    :math:`\mathbf{h}_t = [\overrightarrow{\mathbf{h}}_t; \overleftarrow{\mathbf{h}}_t]`,
    so that every annotation sees the whole sentence. The summary
    :math:`\mathbf{c}` concatenates the forward state after the last real token and
    the backward state after the first. Padding is skipped (packed sequences), so
    what padding holds cannot change anything.

    Args:
        vocab_size: source vocabulary size (id 0 is ``<pad>``).
        embed_size: :math:`E`.
        hidden_size: :math:`H`, per direction.
        bidirectional: also read right to left.
        dropout: dropout on the embeddings, in [0, 1).

    Shapes:
        src: ``(B, T)`` ids.
        src_lengths: ``(B,)``, each >= 1.
        returns: :class:`Encoded` with outputs ``(B, T, D)``, mask ``(B, T)``
            and state ``(B, D)``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> encoder = Seq2SeqEncoder(10, 4, 6, bidirectional=True)
        >>> encoded = encoder(torch.tensor([[3, 4, 2], [5, 2, 0]]),
        ...                   torch.tensor([3, 2]))
        >>> tuple(encoded.outputs.shape), tuple(encoded.state.shape)
        ((2, 3, 12), (2, 12))
        >>> encoded.outputs[1, 2].abs().sum().item()
        0.0
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        bidirectional: bool = False,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        for name, size in dict(vocab_size=vocab_size, embed_size=embed_size,
                               hidden_size=hidden_size).items():
            check_positive_int(name, size)
        check_probability("dropout", dropout)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.bidirectional = bidirectional
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        # torch's fused GRU; the GRU chapter's own GRU computes the same to 1e-6
        self.rnn = nn.GRU(embed_size, hidden_size, batch_first=True, bidirectional=bidirectional)

    @property
    def output_size(self) -> int:
        """:math:`D`, the size of an annotation and of the summary."""
        return self.hidden_size * (2 if self.bidirectional else 1)

    def check_inputs(self, src: Int[Tensor, "B T"], src_lengths: Int[Tensor, " B"]) -> None:
        """What a type cannot say: ``src`` holds ids below ``vocab_size``, and every
        length is in ``[1, T]``."""
        check_token_ids("src", src, self.vocab_size)
        T = src.shape[1]
        if src_lengths.numel() and not torch.compiler.is_compiling():
            low, high = int(src_lengths.min()), int(src_lengths.max())
            if low < 1 or high > T:
                raise ValueError(f"src_lengths must hold values in [1, T = {T} (as in src)], "
                                 f"got values from {low} to {high}")

    def forward(
        self, src: Int[Tensor, "B T"], src_lengths: Int[Tensor, " B"]
    ) -> Encoded:
        self.check_inputs(src, src_lengths)
        T = src.shape[1]
        x = self.dropout(self.embedding(src))  # (B, T, E)
        packed = pack_padded_sequence(
            x, src_lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        # h_n: (directions, B, H)  (eq-s2s-bidirectional)
        packed_out, h_n = self.rnn(packed)
        outputs, _ = pad_packed_sequence(
            packed_out, batch_first=True, total_length=T
        )  # (B, T, D)
        # the forward state after the last real token, the backward after the first
        state = torch.cat(list(h_n), dim=-1)  # (B, D)  (eq-s2s-context)
        mask = lengths_to_mask(src_lengths.to(src.device), T)  # (B, T)
        return Encoded(outputs, mask, state)
