"""Data for the book: real, offline, deterministic.

Loaders for the book's offline data sets (number words, surnames, MNIST digits, Python
source) and the tools that turn them into tensors (tokens, vocabularies, padded batches).
"""

from seqbook.data.batching import lengths_to_mask, pad_batch
from seqbook.data.bpe import apply_bpe, learn_bpe
from seqbook.data.mnist import mnist5k
from seqbook.data.numbers import NumberPair, number_translation, spell_number
from seqbook.data.python_source import SourceFile, python_source_corpus
from seqbook.data.splits import Splits, split_dataset
from seqbook.data.surnames import SURNAME_LOCALES, Surname, surnames
from seqbook.data.vocab import Vocab, tokenize

__all__ = [
    "NumberPair",
    "SURNAME_LOCALES",
    "SourceFile",
    "Splits",
    "Surname",
    "Vocab",
    "apply_bpe",
    "learn_bpe",
    "lengths_to_mask",
    "mnist5k",
    "number_translation",
    "pad_batch",
    "python_source_corpus",
    "spell_number",
    "split_dataset",
    "surnames",
    "tokenize",
]
