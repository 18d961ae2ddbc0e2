"""Sequence to sequence: encoder, decoders (fixed context, Bahdanau attention), model.

The chapter "Sequence to sequence with attention" (``book/seq2seq.md``) explains them;
the task is the translation of English number words into German or French.
"""

from seqbook.seq2seq.bahdanau import BahdanauDecoder
from seqbook.seq2seq.data import TranslationBatch, TranslationTask, number_translation_task
from seqbook.seq2seq.decoder import Seq2SeqDecoder
from seqbook.seq2seq.encoder import Encoded, Seq2SeqEncoder
from seqbook.seq2seq.model import EncoderDecoder, masked_cross_entropy
from seqbook.seq2seq.pieces import PieceTokenizer, join_words
from seqbook.seq2seq.training import (
    Translations,
    TranslatorConfig,
    build_translator,
    evaluate_translator,
    train_translator,
)

__all__ = [
    "BahdanauDecoder",
    "Encoded",
    "EncoderDecoder",
    "PieceTokenizer",
    "Seq2SeqDecoder",
    "Seq2SeqEncoder",
    "TranslationBatch",
    "TranslationTask",
    "TranslatorConfig",
    "Translations",
    "build_translator",
    "evaluate_translator",
    "join_words",
    "masked_cross_entropy",
    "number_translation_task",
    "train_translator",
]
