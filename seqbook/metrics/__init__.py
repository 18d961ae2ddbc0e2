"""Evaluation metrics for generated sequences: BLEU in the DSCI 565 slides' and the standard form.

The chapter "Decoding and BLEU" (``book/decoding_bleu.md``) explains them.
"""

from seqbook.metrics.bleu import (
    SMOOTH_DEFAULTS,
    BLEUStatistics,
    bleu_d2l,
    bleu_statistics,
    corpus_bleu,
    ngram_counts,
    sentence_bleu,
)

__all__ = [
    "BLEUStatistics",
    "SMOOTH_DEFAULTS",
    "bleu_d2l",
    "bleu_statistics",
    "corpus_bleu",
    "ngram_counts",
    "sentence_bleu",
]
