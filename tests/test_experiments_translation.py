"""seqbook.experiments.translation: where the first German number word comes from."""

import pytest

from seqbook.data import spell_number, tokenize
from seqbook.experiments.translation import first_word_source_index, german_number_words


@pytest.mark.parametrize(
    "number, index",
    [
        (0, 0),          # zero -> null
        (1, 0),          # one -> eins
        (14, 0),         # fourteen -> vierzehn (not "vier" of four)
        (17, 0),         # seventeen -> siebzehn
        (21, 2),         # twenty - one -> einundzwanzig
        (34, 2),         # thirty - four -> vierunddreißig
        (60, 0),         # sixty -> sechzig
        (100, 0),        # one hundred -> einhundert
        (1021, 0),       # one thousand and twenty - one -> eintausend...
        (21_000, 2),     # twenty - one thousand -> einundzwanzigtausend
        (45_678, 2),     # forty - five thousand, ... -> fünfundvierzigtausend...
        (345_678, 0),    # three hundred ... -> dreihundert...
        (999_999, 0),
    ],
)
def test_known_numbers(number, index):
    assert first_word_source_index(number) == index


def test_the_found_word_translates_the_start_of_the_german_number():
    words = german_number_words()
    for number in range(0, 10_000, 7):
        english = tokenize(spell_number(number, "en"), "word")
        index = first_word_source_index(number)
        assert spell_number(number, "de").startswith(words[english[index]])


def test_reading_ahead_happens_below_one_hundred_and_in_five_digit_numbers_only():
    # the first German word translates a later English word only for a leading
    # tens-unit pair: 21..99 (the last word) or the thousands of 21,000..99,999
    for number in [*range(0, 1100), *range(20_000, 100_000, 97), *range(100_000, 999_999, 4999)]:
        index = first_word_source_index(number)
        leading = number // 1000 if number >= 1000 else number
        inverted = 20 < leading < 100 and leading % 10 != 0
        assert (index > 0) == inverted, number


@pytest.mark.parametrize("bad", [-1, 1_000_000])
def test_out_of_range_numbers_are_refused(bad):
    with pytest.raises(ValueError, match="number must be"):
        first_word_source_index(bad)


@pytest.mark.parametrize("bad", [3.0, "34", True, None])
def test_non_integers_are_refused(bad):
    with pytest.raises(TypeError, match="number must be an int"):
        first_word_source_index(bad)
