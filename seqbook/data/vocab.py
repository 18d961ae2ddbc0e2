"""Tokens and vocabularies: the bridge from text to the integer ids an embedding reads."""

from __future__ import annotations

import numbers
import re
from collections import Counter
from collections.abc import Hashable, Iterable, Sequence
from typing import Any, SupportsIndex

import torch
from jaxtyping import Int
from torch import Tensor

from seqbook._checks import check_choice, check_positive_int, check_sequence

__all__ = ["Vocab", "tokenize"]

# A word is a run of letters/digits; every other non-space character is a token of its
# own, so "thirty-four" -> ["thirty", "-", "four"] and hyphens survive the round trip.
_WORD_PATTERN = re.compile(r"\w+|[^\w\s]")


def tokenize(text: str, level: str = "char") -> list[str]:
    """Split ``text`` into tokens at the character or the word level.

    Args:
        text: the string to split.
        level: ``"char"`` (every character, spaces included, is a token) or ``"word"``
            (runs of letters and digits, and each punctuation mark on its own).

    Example:
        >>> tokenize("forty-two", level="word")
        ['forty', '-', 'two']
        >>> tokenize("abc")
        ['a', 'b', 'c']
    """
    check_choice("level", level, ("char", "word"))
    if level == "char":
        return list(text)
    return _WORD_PATTERN.findall(text)


def _check_iterable(name: str, value: object, *, of: str, hint: str = "") -> Iterable:
    """An iterable of ``of`` (not a str or bytes; ``hint`` follows the message for a str)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise TypeError(f"{name} must be an iterable of {of}, got {type(value).__name__}"
                        f"{hint if isinstance(value, str) else ''}")
    return value


def _check_tokens(name: str, tokens: Any) -> Sequence:
    """A sequence of tokens, not a str of several characters (which would be split)."""
    if isinstance(tokens, str) and len(tokens) != 1:
        raise TypeError(f"{name} must be a sequence of tokens, got the str {tokens!r}; "
                        "tokenize it first")
    return tokens


def _check_id(name: str, i: object, size: int) -> int:
    """One token id of ``name`` (an int, a NumPy int or a one-element integer tensor, not
    a bool) as an int in ``[0, size)``: the ids of :class:`Vocab` and of n-gram models."""
    if isinstance(i, torch.Tensor) and i.numel() == 1 and not i.is_floating_point():
        i = i.item()
    if isinstance(i, bool) or not isinstance(i, numbers.Integral):
        raise TypeError(f"{name} must hold int ids, got {i!r} ({type(i).__name__})")
    i = int(i)
    if not 0 <= i < size:
        raise ValueError(f"{name} must hold ids in [0, {size}), got {i}")
    return i


# what a TypeError of counting or looking up tokens says: which token cannot be hashed
HASHABLE: dict[str, Any] = {
    "what": "a sequence of hashable tokens (str)", "iterable": True, "of": Hashable}


class Vocab:
    """A two-way map between tokens and integer ids.

    Ids 0-3 are the special tokens ``<pad> <bos> <eos> <unk>``, in that order, so
    padding is always id 0. The other tokens follow by decreasing frequency in the
    corpus (ties broken alphabetically, so the ids do not depend on corpus order).
    Tokens rarer than ``min_freq`` are left out and encode as ``<unk>``.

    Args:
        corpus: an iterable of token sequences (e.g. ``[tokenize(s) for s in texts]``).
        min_freq: the smallest count a token needs to get its own id.

    Example:
        >>> vocab = Vocab([["a", "b", "a"], ["c"]])
        >>> len(vocab), vocab.encode(["a", "z"], add_eos=True)
        (7, [4, 3, 2])
        >>> vocab.decode([1, 4, 5, 2])
        ['a', 'b']
    """

    PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
    SPECIALS = (PAD, BOS, EOS, UNK)

    def __init__(self, corpus: Iterable[Sequence[str]], min_freq: int = 1) -> None:
        _check_iterable("corpus", corpus, of="token sequences",
                        hint="; wrap it, e.g. Vocab([tokenize(text)])")
        self.min_freq = check_positive_int("min_freq", min_freq)
        counts: Counter[str] = Counter()
        for position, tokens in enumerate(corpus):
            _check_tokens(f"corpus[{position}]", tokens)  # a str would be split
            try:
                counts.update(tokens)
            except TypeError:  # not iterable, or an unhashable token: say which
                check_sequence(f"corpus[{position}]", tokens, **HASHABLE)
                raise
        for special in self.SPECIALS:
            counts.pop(special, None)
        kept = sorted(
            (token for token, count in counts.items() if count >= self.min_freq),
            key=lambda token: (-counts[token], token),
        )
        self.counts = counts
        self._id_to_token: list[str] = [*self.SPECIALS, *kept]
        self._token_to_id = {token: i for i, token in enumerate(self._id_to_token)}

    pad_id = property(lambda self: 0, doc="id of ``<pad>`` (always 0)")
    bos_id = property(lambda self: 1, doc="id of ``<bos>``")
    eos_id = property(lambda self: 2, doc="id of ``<eos>``")
    unk_id = property(lambda self: 3, doc="id of ``<unk>``")

    def __len__(self) -> int:
        return len(self._id_to_token)

    def __contains__(self, token: object) -> bool:
        return token in self._token_to_id

    def __getitem__(self, token: str) -> int:
        """The id of ``token``; unknown tokens get ``unk_id``."""
        return self._token_to_id.get(token, self.unk_id)

    def __repr__(self) -> str:
        return f"Vocab(size={len(self)}, min_freq={self.min_freq})"

    @property
    def tokens(self) -> list[str]:
        """All tokens, in id order (specials first)."""
        return list(self._id_to_token)

    def encode(
        self, tokens: Sequence[str], add_bos: bool = False, add_eos: bool = False
    ) -> list[int]:
        """Map tokens to ids, optionally framed by ``<bos>`` and ``<eos>``."""
        _check_tokens("tokens", tokens)  # a str of several characters would be split
        try:
            ids = [self[token] for token in tokens]
        except TypeError:  # not iterable, or an unhashable token: say which
            check_sequence("tokens", tokens, **HASHABLE)
            raise
        return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos

    def decode(
        self, ids: Int[Tensor, " T"] | Iterable[SupportsIndex], skip_specials: bool = True
    ) -> list[str]:
        """Map ids back to tokens; stops at the first ``<eos>`` when skipping specials."""
        check_sequence("ids", ids, what="an iterable of int ids", iterable=True, tensor=True)
        tokens = []
        for i in ids:
            i = _check_id("ids", i, len(self))
            if skip_specials:
                if i == self.eos_id:
                    break
                if i in (self.pad_id, self.bos_id):
                    continue
            tokens.append(self._id_to_token[i])
        return tokens
