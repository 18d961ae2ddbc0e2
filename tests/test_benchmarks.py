"""The benchmark machinery (the full rows run in `make bench`, not here: minutes)."""

import os

import pytest

from benchmarks import chapters
from benchmarks.harness import compare
from benchmarks.rows import ROWS, TARGETS, padding


def test_compare_reports_medians_and_their_ratio(monkeypatch):
    # a clock that only the timed calls move (sleeps measured on a busy machine
    # overshot by 16 ms and blurred the factor of two): seqbook's call takes 4 ms but
    # once 1 s, an outlier the median ignores; the reference's 2 ms
    import types

    from benchmarks import harness

    now = [0.0]
    monkeypatch.setattr(harness, "time", types.SimpleNamespace(perf_counter=lambda: now[0]))
    ours = iter([0.004, 0.004, 1.0, 0.004])  # the warm-up call first

    def advance(seconds):
        now[0] += seconds

    result = compare("sleep", lambda: advance(next(ours)), lambda: advance(0.002), repeats=3)
    assert result.seqbook_seconds == pytest.approx(0.004)
    assert result.reference_seconds == pytest.approx(0.002)
    assert result.ratio == pytest.approx(2.0)
    assert result.markdown_row().startswith("| sleep |")


def test_compare_bad_input():
    with pytest.raises(ValueError, match="repeats"):
        compare("x", lambda: None, lambda: None, repeats=0)


def test_rows_are_distinct_callables():
    assert len({row.__name__ for row in ROWS}) == len(ROWS) >= 6


def test_a_cheap_row_runs_end_to_end():
    result = padding()
    assert result.seqbook_seconds > 0 and result.reference_seconds > 0


def test_peak_memory_is_read_from_proc():
    peak = chapters.peak_resident_bytes(os.getpid())
    assert 10 * 1024**2 < peak < 64 * 1024**3
    run = chapters.ChapterRun("x", 100.0, 1)
    assert "**over**" in run.markdown_row()
    assert "within" in chapters.ChapterRun("x", 10.0, 1).markdown_row()


def test_targets_name_existing_rows():
    names = {row.__name__ for row in ROWS}
    assert set(TARGETS) <= names
    assert all(0 < target <= 2 for target, _ in TARGETS.values())
