"""Surnames labelled by locale, from the name lists that ``faker`` ships for each one.

The lists are real surnames collected by faker's contributors for each country. A
label (the field ``language``) names the locale's main language, but it says which
country's list a surname comes from, not the surname's linguistic origin: faker's list
for Estonia, for instance, joins an Estonian and a Russian list, so "Maslov" is labelled
Estonian. Names that occur in more than one of the chosen lists (``Becker`` is in the
French and the German one) are dropped, so that no name in the data carries two labels.
"""

from __future__ import annotations

import importlib
import random
import warnings
from collections.abc import Sequence
from functools import lru_cache
from typing import NamedTuple

from seqbook._checks import check_int, check_positive_int
from seqbook.data.splits import Splits, split_dataset

__all__ = ["Surname", "SURNAME_LOCALES", "surnames"]

#: The labels of :func:`~seqbook.data.surnames` and the faker locale whose surname list each
#: stands for: Latin-script locales with about 200 or more distinct surnames. Scripts that give the
#: language away at the first character (Greek, Cyrillic, CJK) would make the task trivial.
SURNAME_LOCALES: dict[str, str] = {
    "Croatian": "hr_HR",
    "Czech": "cs_CZ",
    "Dutch": "nl_NL",
    "English": "en_GB",
    "Estonian": "et_EE",
    "Finnish": "fi_FI",
    "French": "fr_FR",
    "German": "de_DE",
    "Irish": "ga_IE",
    "Italian": "it_IT",
    "Spanish": "es_ES",
    "Swedish": "sv_SE",
}


class Surname(NamedTuple):
    name: str
    language: str


@lru_cache(maxsize=None)
def _locale_surnames(locale: str) -> frozenset[str]:
    """Every distinct surname in the person provider of a faker locale.

    The lists are class attributes of the locale's provider, read without building a
    ``faker.Faker``: that would set up the locale's two dozen other providers too, a
    second and a half for the twelve locales."""
    with warnings.catch_warnings():  # some locales warn that they are deprecated
        warnings.simplefilter("ignore")
        provider = importlib.import_module(f"faker.providers.person.{locale}").Provider
    names: set[str] = set()
    for attribute in ("last_names", "last_names_male", "last_names_female"):
        names.update(getattr(provider, attribute, None) or ())  # lists or weighted dicts
    return frozenset(name.strip() for name in names if name.strip())


def _check_languages(name: str, languages: object) -> Sequence[str]:
    """A non-empty list of labels of :data:`SURNAME_LOCALES`."""
    if (isinstance(languages, str) or not isinstance(languages, (list, tuple))
            or not languages or not all(isinstance(lang, str) for lang in languages)):
        raise TypeError(f"{name} must be a non-empty list of names, got {languages!r:.60}")
    unknown = [lang for lang in languages if lang not in SURNAME_LOCALES]
    if unknown:
        raise ValueError(
            f"{name} has unknown entries {unknown}; choose from {sorted(SURNAME_LOCALES)}"
        )
    return languages


def surnames(
    languages: Sequence[str] | None = None,
    per_language: int = 180,
    valid_fraction: float = 0.1,
    test_fraction: float = 0.1,
    seed: int = 0,
) -> Splits[Surname]:
    """A balanced (surname, locale label) data set, split with the same balance in each split.

    Each label is the language of a faker locale (``"Estonian"`` for ``et_EE``) and
    means "from that locale's list of surnames"; see the module's note on how far that
    is from the name's language.

    Args:
        languages: names from :data:`~seqbook.data.surnames.SURNAME_LOCALES` (default: all 12 of
            them).
        per_language: how many surnames to draw from each language (>= 1).
        valid_fraction, test_fraction: shares of the held-out splits, per language.
        seed: seeds both the draw and the split.

    Returns:
        :class:`~seqbook.data.Splits` of :class:`Surname` pairs.

    Example:
        >>> data = surnames(["German", "Italian"], per_language=50)
        >>> data.sizes()
        (80, 10, 10)
    """
    if languages is None:
        languages = list(SURNAME_LOCALES)
    _check_languages("languages", languages)
    check_positive_int("per_language", per_language), check_int("seed", seed, min_value=0)
    pools = {lang: _locale_surnames(SURNAME_LOCALES[lang]) for lang in languages}
    examples: list[Surname] = []
    rng = random.Random(seed)
    for lang in languages:
        others = set().union(*(pool for other, pool in pools.items() if other != lang))
        unambiguous = sorted(pools[lang] - others)
        if len(unambiguous) < per_language:
            raise ValueError(f"per_language={per_language} is more than the {len(unambiguous)} "
                             f"unambiguous {lang} surnames available")
        examples += [Surname(name, lang) for name in rng.sample(unambiguous, per_language)]
    return split_dataset(
        examples, valid_fraction, test_fraction, seed=seed, stratify=lambda s: s.language
    )
