r"""Measurements on the number-translation task shared by the attention chapters.

Where does the first German word of a number come from? German says the unit of a
tens-unit pair before the tens ("vierunddreißig", *four-and-thirty*), so the first
German number word does not always translate the first English word.
:func:`first_word_source_index` finds the English word it translates, which the
chapters on sequences and on sequence-to-sequence models use to measure how far a
translator must read ahead before it can write.
"""

from __future__ import annotations

from functools import lru_cache

from seqbook._checks import check_int
from seqbook.data import spell_number, tokenize

__all__ = ["first_word_source_index", "german_number_words"]


@lru_cache(maxsize=1)
def german_number_words() -> dict[str, str]:
    """English number words and the German words that start their translations.

    The atoms of English number names (``zero`` to ``nineteen``, the tens, ``hundred``
    and ``thousand``) mapped to German as ``num2words`` writes them, except that
    ``one`` maps to ``ein``: the form that begins "einhundert", "eintausend" and
    "einundzwanzig" (and "eins").

    Example:
        >>> words = german_number_words()
        >>> words["four"], words["thirty"], words["one"], words["thousand"]
        ('vier', 'dreißig', 'ein', 'tausend')
    """
    atoms = [*range(20), *range(20, 100, 10)]
    words = {spell_number(n, "en"): spell_number(n, "de") for n in atoms}
    words["one"] = "ein"
    words["hundred"], words["thousand"] = "hundert", "tausend"
    return words


def first_word_source_index(number: int) -> int:
    r"""The index of the English word that the German number's first word translates.

    English is cut into word tokens as by :func:`seqbook.data.tokenize` (hyphens and
    commas are tokens of their own). Among the English number words whose German
    translation (:func:`german_number_words`) begins the German number, the longest
    translation wins ("vierzehn" for *fourteen* over "vier" for *four*), then the
    earliest word.

    Args:
        number: an integer in ``[0, 999_999]``, the range of the book's translation
            task.

    Returns:
        A 0-based index into ``tokenize(spell_number(number, "en"), "word")``.

    Example:
        >>> first_word_source_index(345)       # three hundred and forty - five
        0
        >>> first_word_source_index(34)        # thirty - four: "vier..." is word 2
        2
        >>> first_word_source_index(45_678)    # forty - five thousand, ...
        2
    """
    number = check_int("number", number, min_value=0)
    if number > 999_999:
        raise ValueError(f"number must be <= 999999, got {number}")
    english = tokenize(spell_number(number, "en"), "word")
    german = spell_number(number, "de")
    words = german_number_words()
    matches = [
        (len(words[token]), -index)
        for index, token in enumerate(english)
        if token in words and german.startswith(words[token])
    ]
    if not matches:  # pragma: no cover - every number in range has one (tested)
        raise ValueError(f"no English word of {number} begins its German translation")
    _, negative_index = max(matches)
    return -negative_index
