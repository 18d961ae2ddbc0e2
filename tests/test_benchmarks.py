import time

import pytest

from benchmarks.harness import compare
from benchmarks.rows import ROWS


def test_compare_reports_medians_and_their_ratio():
    result = compare("sleep", lambda: time.sleep(0.004), lambda: time.sleep(0.002), repeats=3)
    assert result.seqbook_seconds > result.reference_seconds
    assert 1.2 < result.ratio < 4
    assert result.markdown_row().startswith("| sleep |")


def test_compare_bad_input():
    with pytest.raises(ValueError, match="repeats"):
        compare("x", lambda: None, lambda: None, repeats=0)


@pytest.mark.parametrize("row", ROWS, ids=[r.__name__ for r in ROWS])
def test_every_row_runs(row):
    result = row()
    assert result.seqbook_seconds > 0 and result.reference_seconds > 0
