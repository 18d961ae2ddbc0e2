r"""Bahdanau's attention decoder: a new context vector at every output step.

Shape letters: ``B`` batch, ``T_x`` source length, ``T_y`` target length, ``E``
embedding size, ``H`` decoder hidden units, ``D`` the size of an annotation (``2H_enc``
for a bidirectional encoder), ``A`` the attention's hidden size, ``V`` the target
vocabulary.
"""

from __future__ import annotations

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_positive_int, check_probability
from seqbook.attention import AdditiveAttention
from seqbook.seq2seq.decoder import _check_encoded, _check_inputs
from seqbook.seq2seq.encoder import Encoded

__all__ = ["BahdanauDecoder"]


class BahdanauDecoder(nn.Module):
    r"""A GRU decoder whose context :math:`\mathbf{c}_i` is recomputed at every step.

    .. math::
        e_{ij} = \mathbf{v}_a^\top \tanh(\mathbf{W}_a \mathbf{s}_{i-1} +
        \mathbf{U}_a \mathbf{h}_j), \quad
        \alpha_{ij} = \frac{\exp e_{ij}}{\sum_k \exp e_{ik}}, \quad
        \mathbf{c}_i = \sum_j \alpha_{ij} \mathbf{h}_j, \quad
        \mathbf{s}_i = f(\mathbf{s}_{i-1}, y_{i-1}, \mathbf{c}_i)

    (eqs. 4.2-4.5 of the notes): the previous state :math:`\mathbf{s}_{i-1}` is the
    query, the annotations :math:`\mathbf{h}_j` of the encoder are keys and values, and
    :class:`~seqbook.attention.AdditiveAttention` computes the weights (padding gets
    weight 0). :math:`f` is a GRU cell whose input is :math:`[\mathbf{e}(y_{i-1});
    \mathbf{c}_i]`; the output layer reads :math:`[\mathbf{s}_i; \mathbf{c}_i]`, and
    :math:`\mathbf{s}_0 = \tanh(\mathbf{W}_s \mathbf{c})` starts from the encoder's
    summary, as in the plain decoder.

    Args:
        vocab_size: :math:`V` (id 0 is ``<pad>``).
        embed_size: :math:`E`.
        hidden_size: :math:`H`.
        context_size: :math:`D`, the size of an annotation.
        attention_size: :math:`A`, the width of the scoring network (default ``H``).
        dropout: dropout on the embeddings, in [0, 1).

    Shapes:
        tgt_in: ``(B, T_y)`` ids (teacher forcing); returns logits
            ``(B, T_y, V)`` and the attention weights ``(B, T_y, T_x)``.
        step: ``y_prev (B,)`` and ``state (B, H)``; returns logits ``(B, V)``,
            the new state ``(B, H)`` and the weights ``(B, T_x)``.

    Example:
        >>> from seqbook.seq2seq import Seq2SeqEncoder
        >>> _ = torch.manual_seed(0)
        >>> encoder = Seq2SeqEncoder(10, 4, 6, bidirectional=True)
        >>> decoder = BahdanauDecoder(12, 4, 8, context_size=12)
        >>> encoded = encoder(torch.tensor([[3, 4, 2], [5, 2, 0]]),
        ...                   torch.tensor([3, 2]))
        >>> logits, weights = decoder(torch.tensor([[1, 5], [1, 6]]), encoded)
        >>> tuple(logits.shape), tuple(weights.shape)
        ((2, 2, 12), (2, 2, 3))
        >>> weights[1, :, 2].tolist()  # the padded position gets no attention
        [0.0, 0.0]
    """

    def __init__(
        self,
        vocab_size: int,
        embed_size: int,
        hidden_size: int,
        context_size: int,
        attention_size: int | None = None,
        dropout: float = 0.0,
    ) -> None:
        super().__init__()
        for name, size in dict(vocab_size=vocab_size, embed_size=embed_size,
                               hidden_size=hidden_size, context_size=context_size,
                               attention_size=attention_size).items():
            if size is not None:
                check_positive_int(name, size)
        check_probability("dropout", dropout)
        self.vocab_size = vocab_size
        self.hidden_size = hidden_size
        self.context_size = context_size
        attention_size = hidden_size if attention_size is None else attention_size
        self.embedding = nn.Embedding(vocab_size, embed_size, padding_idx=0)
        self.dropout = nn.Dropout(dropout)
        self.W_s = nn.Linear(context_size, hidden_size)
        self.attention = AdditiveAttention(hidden_size, context_size, attention_size)
        self.cell = nn.GRUCell(embed_size + context_size, hidden_size)
        self.W_o = nn.Linear(hidden_size + context_size, vocab_size)

    def init_state(self, encoded: Encoded) -> Float[Tensor, "B {self.hidden_size}"]:
        """:math:`\\mathbf{s}_0`, shape ``(B, H)``."""
        _check_encoded(self, encoded, None, "encoded.outputs")
        return torch.tanh(self.W_s(encoded.state))  # (B, H)

    def step(
        self,
        y_prev: Int[Tensor, " B"],
        state: Float[Tensor, "B {self.hidden_size}"],
        encoded: Encoded,
    ) -> tuple[
        Float[Tensor, "B {self.vocab_size}"], Float[Tensor, "B {self.hidden_size}"],
        Float[Tensor, "B T_x"],
    ]:
        """One decoding step from :math:`y_{i-1}` and :math:`\\mathbf{s}_{i-1}`."""
        _check_inputs(self, "y_prev", y_prev, encoded)
        y = self.dropout(self.embedding(y_prev))  # (B, E)
        h = encoded.outputs  # (B, T_x, D): keys and values
        # the query is the previous state s_{i-1}
        # (B, D), (B, T_x)  (eq-s2s-attn-context)
        c, alpha = self.attention(state, h, h, encoded.mask)
        # (B, H)  (eq-s2s-state)
        s = self.cell(torch.cat([y, c], dim=-1), state)
        logits = self.W_o(torch.cat([s, c], dim=-1))  # (B, V)  (eq-s2s-output)
        return logits, s, alpha

    def forward(
        self, tgt_in: Int[Tensor, "B T_y"], encoded: Encoded
    ) -> tuple[Float[Tensor, "B T_y {self.vocab_size}"], Float[Tensor, "B T_y T_x"]]:
        """The whole target, one :meth:`step` per position (teacher forcing)."""
        _check_inputs(self, "tgt_in", tgt_in, encoded)
        s = self.init_state(encoded)  # (B, H)
        all_logits, all_weights = [], []
        for i in range(tgt_in.shape[1]):
            logits, s, alpha = self.step(tgt_in[:, i], s, encoded)
            all_logits.append(logits)
            all_weights.append(alpha)
        # (B, T_y, V), (B, T_y, T_x)
        return torch.stack(all_logits, 1), torch.stack(all_weights, 1)
