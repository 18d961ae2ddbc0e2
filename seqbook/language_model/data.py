r"""A character-level corpus of Python source, and random training windows over it.

Shape letters: ``B`` batch (windows), ``L`` window length, ``N`` characters in a
split, ``V`` the vocabulary size.

The corpus is the Python standard library's own source
(:func:`seqbook.data.python_source_corpus`), split *by file*: the validation text
comes from modules the model never saw. Characters rarer than ``min_freq`` in the
training text share the id of ``<unk>``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Int
from torch import Tensor

from seqbook._checks import check_positive_int, check_tensor
from seqbook.data import Vocab, python_source_corpus, tokenize

__all__ = ["CharCorpus", "char_corpus", "random_windows"]


@dataclass(frozen=True)
class CharCorpus:
    """The training and validation text, their character ids and the vocabulary.

    Attributes:
        vocab: the character vocabulary, built from the training text only.
        train_text, valid_text: the files of each split, joined by newlines.
        train_ids, valid_ids: the same texts as ``(N,)`` int64 id tensors.
    """

    vocab: Vocab
    train_text: str
    valid_text: str
    train_ids: Int[Tensor, " N_train"]
    valid_ids: Int[Tensor, " N_valid"]

    @property
    def vocab_size(self) -> int:
        """The number of symbols :math:`V` (specials included)."""
        return len(self.vocab)

    def encode(self, text: str) -> Int[Tensor, " N"]:
        """The ids ``(len(text),)`` of a string's characters."""
        return torch.tensor(self.vocab.encode(tokenize(text)), dtype=torch.long)

    def decode(self, ids: Int[Tensor, " N"] | list[int]) -> str:
        """The string of a sequence of ids (special symbols left out)."""
        if isinstance(ids, torch.Tensor):
            check_tensor("ids", ids, ndim=1, floating=False)
            ids = ids.tolist()
        return "".join(self.vocab.decode(ids))


def char_corpus(num_chars: int = 300_000, min_freq: int = 5, seed: int = 0) -> CharCorpus:
    """The character corpus of the LSTM, GRU and language-model chapters.

    The standard-library files of :func:`seqbook.data.python_source_corpus` (split
    by file with ``seed``); each split's files are joined by ``"\\n"``.

    Args:
        num_chars: roughly how many characters to collect, all splits together.
        min_freq: characters seen fewer times in the training text become ``<unk>``.
        seed: seeds the choice of files and the split.

    Returns:
        A :class:`CharCorpus`.

    Example:
        >>> corpus = char_corpus(num_chars=20_000)
        >>> corpus.decode(corpus.encode("def f(x):"))
        'def f(x):'
        >>> len(corpus.train_ids) == len(corpus.train_text)
        True
    """
    check_positive_int("min_freq", min_freq)
    code = python_source_corpus(num_chars=num_chars, seed=seed)
    train_text = "\n".join(f.text for f in code.train)
    valid_text = "\n".join(f.text for f in code.valid)
    vocab = Vocab([tokenize(train_text)], min_freq=min_freq)
    encode = lambda text: torch.tensor(vocab.encode(tokenize(text)), dtype=torch.long)
    return CharCorpus(vocab, train_text, valid_text, encode(train_text), encode(valid_text))


def random_windows(
    ids: Int[Tensor, " N"],
    generator: torch.Generator,
    batch_size: int = 32,
    length: int = 32,
) -> tuple[Int[Tensor, "{batch_size} {length}"], Int[Tensor, "{batch_size} {length}"]]:
    r"""``batch_size`` windows drawn uniformly from a stream, and the next characters.

    Each window starts at a random position :math:`s` (drawn with ``generator``);
    the inputs are :math:`x_s, \dots, x_{s+L-1}` and the targets the same window
    shifted by one, :math:`x_{s+1}, \dots, x_{s+L}`: at every position the model
    predicts the next character.

    Args:
        ids: the token stream, ``(N,)`` with ``N >= length + 2``.
        generator: the random generator that draws the starts (seed it to repeat a
            run).
        batch_size: number of windows :math:`B`.
        length: window length :math:`L`.

    Shapes:
        ids: ``(N,)``.
        returns: ``(inputs, targets)``, each ``(B, L)``.

    Example:
        >>> ids = torch.arange(100)
        >>> inputs, targets = random_windows(ids, torch.Generator().manual_seed(0),
        ...                                  batch_size=2, length=4)
        >>> bool((targets == inputs + 1).all())
        True
    """
    check_positive_int("batch_size", batch_size), check_positive_int("length", length)
    if len(ids) < length + 2:
        raise ValueError(f"ids must hold at least length + 2 = {length + 2} ids (a window, its "
                         f"next character and one more start), got {len(ids)}")
    starts = torch.randint(0, len(ids) - length - 1, (batch_size,), generator=generator)
    windows = ids[starts[:, None] + torch.arange(length + 1)]  # (B, L + 1)
    return windows[:, :-1], windows[:, 1:]  # (B, L) each
