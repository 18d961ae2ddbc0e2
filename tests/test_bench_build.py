"""benchmarks/build.py and the chapters' CPU time (the full runs take minutes: make
bench-build, make bench)."""

from __future__ import annotations

import os
import shutil

import jupytext

from benchmarks import build, chapters
from book_files import ROOT
from book_files import chapters as book_chapters

LOG = """Running Sphinx
[execution_cache] executing 2 chapter(s) with 2 worker(s): book/gru, book/lstm
[IPKernelApp] WARNING | Kernel is running over TCP
[execution_cache] book/lstm: executed in 43.1 s
[execution_cache] book/gru: executed in 33.5 s
[execution_cache] 2 chapter(s) executed in 45.0 s
"""


def code(path):
    return [c.source for c in jupytext.read(path).cells if c.cell_type == "code"]


def test_executed_chapters_are_read_from_the_build_log():
    names, seconds = build.executed_chapters(LOG)
    assert names == {"gru", "lstm"}
    assert seconds == {"lstm": 43.1, "gru": 33.5}
    assert build.executed_chapters("build succeeded.") == (set(), {})


def test_the_edits_change_prose_or_code_as_they_say(tmp_path):
    original = book_chapters()[0]
    chapter = tmp_path / original.name
    shutil.copy(original, chapter)
    build.prose_edit(chapter)
    assert code(chapter) == code(original)
    assert build.MARKER in chapter.read_text()
    build.code_edit(chapter)
    before, after = code(original), code(chapter)
    assert len(before) == len(after) and before[:-1] == after[:-1]
    assert after[-1] == before[-1] + f"\n# {build.MARKER}"


def test_rows_say_whether_the_executed_chapters_were_expected():
    ok = build.BuildCase("prose edit", 30.0, 20.0, set(), set())
    assert ok.as_expected and "none (as expected)" in ok.markdown_row()
    wrong = build.BuildCase("code edit", 60.0, 50.0, {"gru", "lstm"}, {"gru"})
    assert not wrong.as_expected and "**expected gru**" in wrong.markdown_row()
    fresh = build.BuildCase("from scratch", 300.0, 500.0, {"gru"}, None)
    assert fresh.as_expected and "| 300 | 500 |" in fresh.markdown_row()


def test_the_modules_each_chapter_depends_on_are_found():
    names = build.chapter_order(ROOT)
    assert set(names) == {c.stem for c in book_chapters()}
    found = build.dependents(ROOT, names)
    assert set().union(*found.values()) == set(names)
    assert found["seqbook/__init__.py"] == set(names)  # every chapter imports seqbook


def test_kernel_cpu_time_is_read_from_proc():
    start = chapters.cpu_seconds(os.getpid())
    total = 0
    for i in range(2_000_000):
        total += i
    spent = chapters.cpu_seconds(os.getpid()) - start
    assert 0.01 < spent < 60
    run = chapters.ChapterRun("x", seconds=200.0, peak_bytes=1, cpu_seconds=50.0)
    assert "within" in run.markdown_row()  # judged on CPU time: 50 s of 90
    assert "**over**" in chapters.ChapterRun("x", 200.0, 1, 95.0).markdown_row()


def test_results_keep_the_sections_a_run_did_not_write_in_their_place(tmp_path, monkeypatch):
    from benchmarks import __main__ as main

    results = tmp_path / "results.md"
    results.write_text("# Benchmark results\n\n## Rows\n\n| a |\n\n### Why\n\n- w\n\n"
                       "## Building the book\n\n| b |\n\n## By hand\n\n| c |\n\n"
                       "Total time of this benchmark run: 3 s.\n")
    monkeypatch.setattr(main, "RESULTS", results)
    merged = main.merged_sections(["# Benchmark results", "", "intro", "",
                                   "## Building the book", "", "| new b |", "",
                                   "## Brand new", "", "| d |", ""])
    assert merged == ["# Benchmark results", "", "intro",
                      "", "## Rows", "", "| a |", "", "### Why", "", "- w",
                      "", "## Building the book", "", "| new b |",
                      "", "## By hand", "", "| c |",
                      "", "## Brand new", "", "| d |"]


def test_the_budgets_are_judged_on_the_measured_cases():
    cases = [build.BuildCase("the Python environment (.venv), fresh clone", 50, 40, set(), None),
             build.BuildCase("from scratch (every chapter)", 260, 500, {"a", "b"}, None),
             build.BuildCase("prose edit in a", 46, 40, set(), set()),
             build.BuildCase("code edit in a", 60, 60, {"a"}, {"a"}, {"a": 20.0})]
    verdicts = "\n".join(build.markdown(cases))
    assert "environment included: 310 s (**over 300 s**)" in verdicts
    assert "after a prose edit: 46 s (**over 45 s**)" in verdicts
    assert "of which 40 s besides executing the chapter (20 s) (within 45 s)" in verdicts


def test_the_chapter_benchmark_writes_the_estimates_the_build_reads(tmp_path):
    import sys

    sys.path.insert(0, str(ROOT / "book" / "_ext"))
    import execution_cache

    runs = [chapters.ChapterRun("b", 20.0, 1, 12.34), chapters.ChapterRun("a", 5.0, 1)]
    path = tmp_path / "chapter_seconds.json"
    chapters.write_estimates(runs, path)
    assert execution_cache.read_estimates(path) == {"a": 5.0, "b": 12.3}  # CPU where known
    # the book's default is the file the benchmark writes, and it times every chapter
    assert ROOT / execution_cache.DEFAULT_ESTIMATES == chapters.ESTIMATES
    committed = execution_cache.read_estimates(chapters.ESTIMATES)
    assert set(committed) == {path.stem for path in (ROOT / "notebooks").glob("*.ipynb")}
