"""Number words in two languages: a small, real translation task.

``num2words`` spells a number in dozens of languages. English -> German reverses the
order of units and tens ("thirty-four" -> "vierunddreißig") and writes a whole number
as one compound word; English -> French counts in twenties above sixty
("ninety-seven" -> "quatre-vingt-dix-sept"). Splits are disjoint *by number*, so no
test number is ever seen in training.
"""

from __future__ import annotations

import random
from typing import NamedTuple

from num2words import CONVERTER_CLASSES, num2words

from seqbook._checks import check_choice, check_int, check_positive_int
from seqbook.data.splits import Splits

__all__ = ["NumberPair", "number_translation", "spell_number"]


class NumberPair(NamedTuple):
    """One example: the number and its spelling in the source and target languages."""

    number: int
    source: str
    target: str


def _check_split_sizes(max_number: int, num_valid: int, num_test: int, num_train: int) -> None:
    """The three splits fit in the ``max_number + 1`` numbers."""
    check_positive_int("num_train", num_train)
    if num_train + num_valid + num_test > max_number + 1:
        raise ValueError(
            f"num_train + num_valid + num_test must be <= max_number + 1 = {max_number + 1}, "
            f"got {num_train} + {num_valid} + {num_test}"
        )


#: The num2words language codes, e.g. ``"en"``, ``"de"``, ``"fr"``.
LANGUAGES = tuple(sorted(CONVERTER_CLASSES))


def _check_counts(max_number: int, num_valid: int, num_test: int, seed: int) -> None:
    """The sizes and the seed of a data set of numbers, each an int >= 0."""
    for name, value in dict(max_number=max_number, num_valid=num_valid, num_test=num_test,
                            seed=seed).items():
        check_int(name, value, min_value=0)


def spell_number(number: int, lang: str = "en") -> str:
    """Spell ``number`` in words, e.g. ``spell_number(34, "de") == "vierunddreißig"``."""
    check_int("number", number, min_value=0), check_choice("lang", lang, LANGUAGES)
    return num2words(number, lang=lang)


def number_translation(
    src: str = "en",
    tgt: str = "de",
    max_number: int = 9999,
    num_valid: int = 500,
    num_test: int = 500,
    num_train: int | None = None,
    seed: int = 0,
) -> Splits[NumberPair]:
    """Pairs (number, words in ``src``, words in ``tgt``) split disjointly by number.

    The numbers ``0..max_number`` are shuffled with ``seed``; the first ``num_valid`` go
    to validation, the next ``num_test`` to test and the next ``num_train`` (default: all
    the rest) to training.

    Args:
        src, tgt: num2words language codes, e.g. ``"en"``, ``"de"``, ``"fr"``.
        max_number: the largest number, inclusive (>= 0).
        num_valid, num_test: sizes of the held-out splits (>= 0).
        num_train: size of the training split (>= 1); ``None`` takes all the rest.
        seed: the shuffle's seed.

    Returns:
        :class:`~seqbook.data.Splits` of :class:`NumberPair`.

    Example:
        >>> data = number_translation("en", "de", max_number=99, num_valid=10, num_test=10)
        >>> data.sizes()
        (80, 10, 10)
        >>> spell_number(34, "en"), spell_number(34, "de")
        ('thirty-four', 'vierunddreißig')
    """
    check_choice("src", src, LANGUAGES), check_choice("tgt", tgt, LANGUAGES)
    _check_counts(max_number, num_valid, num_test, seed)
    available = max_number + 1 - num_valid - num_test
    if available < 1:
        raise ValueError(f"num_valid + num_test must leave at least one of the max_number + 1 = "
                         f"{max_number + 1} numbers for training, got {num_valid} + {num_test}")
    num_train = available if num_train is None else num_train
    _check_split_sizes(max_number, num_valid, num_test, num_train)
    numbers = list(range(max_number + 1))
    random.Random(seed).shuffle(numbers)

    def pairs(chosen: list[int]) -> list[NumberPair]:
        return [NumberPair(n, num2words(n, lang=src), num2words(n, lang=tgt)) for n in chosen]

    valid = numbers[:num_valid]
    test = numbers[num_valid : num_valid + num_test]
    train = numbers[num_valid + num_test : num_valid + num_test + num_train]
    return Splits(pairs(train), pairs(valid), pairs(test))
