"""A piece tokenizer: greedy longest match over an inventory learned from the data.

German writes a number as one compound word ("vierunddreißig"). Characters make the
targets long (up to ~40 tokens) and words make every number one token; the pieces the
compound is built from ("vier", "und", "dreißig") are short *and* line up with the
English words. :meth:`PieceTokenizer.learn` finds them from training targets alone:
start from the spellings of the numbers that English writes as a single word, then
repeatedly promote the most frequent stretch of text that the current pieces leave
unexplained, until every stretch is explained (or rare).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence

from seqbook._checks import check_positive_int, check_sequence

__all__ = ["PieceTokenizer", "join_words"]


def _check_strings(name: str, values: object, *, allow_empty_str: bool = False) -> list[str]:
    """``values`` as a list of str (non-empty unless ``allow_empty_str``), or a
    TypeError/ValueError naming ``name``."""
    values = list(check_sequence(name, values, what="an iterable of str", iterable=True))
    check_sequence(name, values, what="an iterable of str", of=str)  # once a list: every item
    if not allow_empty_str and "" in values:
        raise ValueError(f"{name} must be non-empty strings, got '' at index {values.index('')}")
    return values


class PieceTokenizer:
    """Cut text into the longest known pieces, left to right.

    Where no piece matches, the single character becomes a token of its own, so
    ``"".join(tokenize(text)) == text`` holds for every text.

    Args:
        pieces: the inventory (non-empty strings).

    Example:
        >>> tok = PieceTokenizer(["vier", "und", "drei", "dreißig"])
        >>> tok.tokenize("vierunddreißig")
        ['vier', 'und', 'dreißig']
        >>> tok.tokenize("dreiundx")
        ['drei', 'und', 'x']
        >>> tok.detokenize(tok.tokenize("vierunddreißig"))
        'vierunddreißig'
    """

    def __init__(self, pieces: Iterable[str]) -> None:
        pieces = _check_strings("pieces", pieces)
        # longest first: the regex tries alternatives in order, so the first that
        # matches at a position is the longest one
        self.pieces: list[str] = sorted(set(pieces), key=lambda p: (-len(p), p))
        alternatives = [re.escape(p) for p in self.pieces] + ["."]
        self._pattern = re.compile("|".join(alternatives), re.DOTALL)

    def __len__(self) -> int:
        return len(self.pieces)

    def __repr__(self) -> str:
        return f"PieceTokenizer({len(self.pieces)} pieces)"

    def tokenize(self, text: str) -> list[str]:
        """Greedy longest-match segmentation of ``text``."""
        return self._pattern.findall(text)

    def detokenize(self, tokens: Iterable[str]) -> str:
        """The inverse of :meth:`tokenize`: concatenate."""
        return "".join(_check_strings("tokens", tokens, allow_empty_str=True))

    def unexplained(self, text: str) -> list[str]:
        """The maximal stretches of ``text`` that no piece covers."""
        stretches: list[str] = []
        current: list[str] = []
        for token in self.tokenize(text):
            if token in self._known:
                if current:
                    stretches.append("".join(current))
                    current = []
            else:
                current.append(token)
        if current:
            stretches.append("".join(current))
        return stretches

    @property
    def _known(self) -> set[str]:
        if not hasattr(self, "_known_set"):
            self._known_set = set(self.pieces)
        return self._known_set

    @classmethod
    def learn(
        cls,
        texts: Iterable[str],
        seed_pieces: Iterable[str],
        min_count: int = 2,
        max_new: int = 100,
    ) -> PieceTokenizer:
        """Grow ``seed_pieces`` until the pieces explain ``texts``.

        Each round segments every text, counts the stretches left unexplained and
        adds the one that explains the most characters (count times length; the
        longer, then the alphabetically first, on ties) as a piece. Only stretches
        that occur at least ``min_count`` times qualify; learning stops when none
        does, or after ``max_new`` new pieces.

        Args:
            texts: the training targets.
            seed_pieces: the initial pieces (may be empty).
            min_count: the smallest count that earns a stretch a piece (>= 1).
            max_new: the most pieces to add (>= 1).

        Example:
            >>> texts = ["einundzwanzig", "zweiundzwanzig", "dreiundzwanzig",
            ...          "einhundert", "zweihundert", "dreihundert"]
            >>> PieceTokenizer.learn(texts, ["zwei", "drei", "zwanzig"]).pieces
            ['hundert', 'zwanzig', 'drei', 'zwei', 'ein', 'und']
        """
        texts = _check_strings("texts", texts, allow_empty_str=True)
        seed_pieces = _check_strings("seed_pieces", seed_pieces)
        check_positive_int("min_count", min_count), check_positive_int("max_new", max_new)
        tokenizer = cls(seed_pieces)
        for _ in range(max_new):
            counts = Counter(s for text in texts for s in tokenizer.unexplained(text))
            frequent = [(s, c) for s, c in counts.items() if c >= min_count]
            if not frequent:
                break
            # the stretch that explains the most characters (count times length):
            # "hundert" before the shorter but more frequent "und", which would
            # otherwise cut it into "h", "und", "ert"
            stretch, _ = max(
                frequent, key=lambda kv: (kv[1] * len(kv[0]), len(kv[0]), _desc(kv[0]))
            )
            tokenizer = cls([*tokenizer.pieces, stretch])
        return tokenizer


def _desc(text: str) -> tuple[int, ...]:
    # sorts so that max() prefers the alphabetically first string
    return tuple(-ord(c) for c in text)


def join_words(tokens: Sequence[str]) -> str:
    """Undo ``tokenize(text, "word")`` for number words: spaces, but none around ``-``.

    Example:
        >>> join_words(["quatre", "-", "vingt", "-", "dix", "-", "sept"])
        'quatre-vingt-dix-sept'
        >>> join_words(["mille", "deux", "cent", "un"])
        'mille deux cent un'
    """
    text = " ".join(_check_strings("tokens", tokens, allow_empty_str=True))
    return text.replace(" - ", "-").replace(" , ", ", ")
