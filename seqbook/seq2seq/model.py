r"""The encoder-decoder: teacher forcing for training, a step function for decoding.

Shape letters: ``B`` batch (``N`` sentences when decoding), ``K`` prefixes per
sentence, ``T_x`` source length, ``T_y`` target length, ``V`` target vocabulary.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from seqbook._checks import check_int, check_tensor, check_token_ids
from seqbook.decoding import Hypotheses
from seqbook.decoding.beam import search_in_eval_mode
from seqbook.decoding.common import StepFn
from seqbook.seq2seq.bahdanau import BahdanauDecoder
from seqbook.seq2seq.data import TranslationBatch
from seqbook.seq2seq.decoder import Seq2SeqDecoder
from seqbook.seq2seq.encoder import Encoded, Seq2SeqEncoder

__all__ = ["EncoderDecoder", "masked_cross_entropy"]


def _check_targets(
    targets_name: str, targets: Tensor, mask_name: str, mask: Tensor, vocab_size: int
) -> None:
    """What a type cannot say: the targets are ids below ``vocab_size``, and the mask
    keeps at least one of them."""
    check_token_ids(targets_name, targets, vocab_size, of="the logits' V")
    if not torch.compiler.is_compiling() and not bool(mask.any()):
        raise ValueError(f"{mask_name} must keep at least one target position, got none")


def masked_cross_entropy(
    logits: Float[Tensor, "B T_y V"],
    targets: Int[Tensor, "B T_y"],
    mask: Bool[Tensor, "B T_y"],
) -> Float[Tensor, ""]:
    r"""Mean cross-entropy over the real (unpadded) target positions.

    .. math::
        \mathcal{L} = -\frac{1}{\sum_{b,i} m_{bi}} \sum_{b,i} m_{bi}
        \log P(y_{bi} \mid y_{b,<i}, \mathbf{x}_b)

    Args:
        logits: ``(B, T_y, V)``.
        targets: ``(B, T_y)`` ids.
        mask: ``(B, T_y)`` boolean keep mask, True at real target tokens.

    Example:
        >>> logits = torch.zeros(1, 2, 4)          # uniform over 4 tokens
        >>> loss = masked_cross_entropy(logits, torch.tensor([[1, 0]]),
        ...                             torch.tensor([[True, False]]))
        >>> round(loss.item(), 4)                  # log 4, the padding ignored
        1.3863
    """
    _check_targets("targets", targets, "mask", mask, logits.shape[-1])
    per_token = F.cross_entropy(
        logits.transpose(1, 2), targets, reduction="none"
    )  # (B, T_y)
    mask = mask.to(per_token.dtype)
    return (per_token * mask).sum() / mask.sum()  # (eq-s2s-loss)


class EncoderDecoder(nn.Module):
    r"""An encoder and a decoder trained together as :math:`P(\mathbf{y} \mid \mathbf{x})`.

    .. math::
        P(y_1, \dots, y_{T_y} \mid \mathbf{x}) = \prod_{i=1}^{T_y}
        P(y_i \mid y_1, \dots, y_{i-1}, \mathbf{x})

    **Teacher forcing**: in training the decoder's input at step :math:`i` is the
    *true* previous token (``tgt_in`` = ``<bos>`` + target), and
    :func:`masked_cross_entropy` compares its predictions with the target followed by
    ``<eos>``. At test time the model feeds its own predictions back through
    :meth:`step_function`, which any search of :mod:`seqbook.decoding` can drive.

    Args:
        encoder: a :class:`Seq2SeqEncoder`.
        decoder: a :class:`Seq2SeqDecoder` (fixed context) or :class:`BahdanauDecoder`
            (attention); its ``context_size`` must be the encoder's ``output_size``.
        pad_id, bos_id, eos_id: the target vocabulary's special ids.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> enc = Seq2SeqEncoder(10, 4, 6, bidirectional=True)
        >>> model = EncoderDecoder(enc, BahdanauDecoder(9, 4, 8, enc.output_size))
        >>> src, lengths = torch.tensor([[4, 5, 2]]), torch.tensor([3])
        >>> logits, weights = model(src, lengths, torch.tensor([[1, 6]]))
        >>> tuple(logits.shape), tuple(weights.shape)
        ((1, 2, 9), (1, 2, 3))
        >>> out = model.generate(src, lengths, max_len=4, beam_size=2)
        >>> len(out.tokens), len(out.tokens[0]) <= 4
        (1, True)
    """

    def __init__(
        self,
        encoder: Seq2SeqEncoder,
        decoder: Seq2SeqDecoder | BahdanauDecoder,
        pad_id: int = 0,
        bos_id: int = 1,
        eos_id: int = 2,
    ) -> None:
        super().__init__()
        V = decoder.vocab_size
        for name, token in dict(pad_id=pad_id, bos_id=bos_id, eos_id=eos_id).items():
            check_int(name, token, min_value=0)
            if token >= V:
                raise ValueError(f"{name} must be < decoder.vocab_size = {V} (decoder's "
                                 f"vocabulary), got {token}")
        if decoder.context_size != encoder.output_size:
            raise ValueError(
                f"decoder.context_size ({decoder.context_size}) must equal the encoder's "
                f"output_size ({encoder.output_size})"
            )
        self.encoder, self.decoder = encoder, decoder
        self.pad_id = pad_id
        self.bos_id = bos_id
        self.eos_id = eos_id

    @property
    def uses_attention(self) -> bool:
        return isinstance(self.decoder, BahdanauDecoder)

    def encode(self, src: Int[Tensor, "B T_x"], src_lengths: Int[Tensor, " B"]) -> Encoded:
        """The encoder's output (see :class:`Seq2SeqEncoder`)."""
        return self.encoder(src, src_lengths)

    def forward(
        self,
        src: Int[Tensor, "B T_x"],
        src_lengths: Int[Tensor, " B"],
        tgt_in: Int[Tensor, "B T_y"],
    ) -> tuple[
        Float[Tensor, "B T_y {self.decoder.vocab_size}"], Float[Tensor, "B T_y T_x"] | None
    ]:
        """Teacher-forced logits ``(B, T_y, V)`` and attention weights
        ``(B, T_y, T_x)`` (``None`` for the fixed-context decoder)."""
        return self.decoder(tgt_in, self.encode(src, src_lengths))

    def loss(self, batch: TranslationBatch) -> Float[Tensor, ""]:
        """The masked cross-entropy of one batch (a ``loss_fn`` for ``fit``)."""
        logits, _ = self(batch.src, batch.src_lengths, batch.tgt_in)
        # the targets, which the signature cannot reach: ids below V, and the mask, both
        # of tgt_in's shape
        shape = tuple(batch.tgt_in.shape)
        check_tensor("batch.tgt_out", batch.tgt_out, shape=shape, floating=False)
        if check_tensor("batch.tgt_mask", batch.tgt_mask, shape=shape).dtype != torch.bool:
            raise TypeError("batch.tgt_mask must have dtype torch.bool, got "
                            f"{batch.tgt_mask.dtype}")
        _check_targets("batch.tgt_out", batch.tgt_out, "batch.tgt_mask", batch.tgt_mask,
                       self.decoder.vocab_size)
        return masked_cross_entropy(logits, batch.tgt_out, batch.tgt_mask)

    def step_function(self, src: Int[Tensor, "N T_x"], src_lengths: Int[Tensor, " N"]) -> StepFn:
        """A step function for :mod:`seqbook.decoding` that translates ``src``.

        The sources are encoded once; each call feeds the last token of every prefix
        and the decoder state (kept as the search's state, ``(N, K, H)``) through one
        decoder step. ``<pad>`` and ``<bos>`` get probability 0.
        """
        with torch.no_grad():
            encoded = self.encode(src, src_lengths)
        N, V, decoder = src.shape[0], self.decoder.vocab_size, self.decoder
        expanded: dict[int, Encoded] = {}

        def step(prefixes: Tensor, state: Tensor | None) -> tuple[Tensor, Tensor]:
            _, K, _ = prefixes.shape
            if K not in expanded:  # every prefix of sentence n reads sentence n
                expanded[K] = Encoded(*(x.repeat_interleave(K, dim=0) for x in encoded))
            enc = expanded[K]  # (N * K, ...)
            with torch.no_grad():
                y_prev = prefixes[:, :, -1].reshape(N * K).to(src.device)  # (N * K,)
                check_token_ids("prefixes (bos and the tokens so far)", y_prev, V)
                s = decoder.init_state(enc) if state is None else state.reshape(N * K, -1)
                logits, s, _ = decoder.step(y_prev, s, enc)  # (N * K, V), (N * K, H)
                log_probs = torch.log_softmax(logits, dim=-1)
                log_probs[:, [self.pad_id, self.bos_id]] = float("-inf")
            return log_probs.view(N, K, -1), s.view(N, K, -1)  # (N, K, V), (N, K, H)

        return step

    def generate(
        self,
        src: Int[Tensor, "N T_x"],
        src_lengths: Int[Tensor, " N"],
        max_len: int,
        beam_size: int = 1,
        length_penalty: float = 0.0,
    ) -> Hypotheses:
        """Translate a batch with beam search (``beam_size=1``: greedy)."""
        return search_in_eval_mode(self, src, src_lengths, max_len, beam_size, length_penalty)
