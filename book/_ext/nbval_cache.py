"""A pytest plugin: keep what nbval executed, so that the book's build executes nothing twice.

``make test`` validates the notebooks readers open in Colab with nbval (``notebooks/``,
the twins of ``book/*.md``) and builds the HTML book, whose pages need the executed
outputs. Without this plugin every chapter runs twice. With it, nbval stores each
notebook it ran from start to end without an error, outputs included, in the
jupyter-cache the build reads, under the dependency key that
``book/_ext/execution_cache.py`` computes for the chapter (its code, the ``seqbook``
modules it imports, ``requirements.txt``). The build then finds every chapter executed
and reads the outputs.

This hides no broken chapter: ``make test`` empties the cache before nbval, so every
chapter in it was executed from scratch in this very run, and a notebook with a failing,
skipped or missing cell is not stored (the build then executes that chapter itself and
fails on it). A twin whose code cells differ from its chapter's (``make notebooks`` not
run) is not found by the build's lookup either, and is executed again.

Use: ``PYTHONPATH=book/_ext python -m pytest -p nbval_cache --nbval-lax
--nbval-cache=_build/.jupyter_cache notebooks/`` (with pytest-xdist, ``--dist loadfile``
keeps each notebook in one worker).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]  # the repository: book/_ext/ is two below
CHAPTERS = ROOT / "book"


def pytest_addoption(parser: Any) -> None:
    parser.addoption(
        "--nbval-cache", metavar="DIR", default=None,
        help="store every notebook nbval ran without error, with its outputs, in the "
             "jupyter-cache DIR that the book's build reads (book/_ext/nbval_cache.py)",
    )


class _Run:
    """What nbval did with one notebook: each code cell's outputs and outcome."""

    def __init__(self) -> None:
        self.outputs: dict[int, list] = {}
        self.passed: set[int] = set()
        self.spoiled = False  # a cell failed or was skipped
        self.seconds = 0.0


_runs: dict[Path, _Run] = {}


def _is_nbval_cell(item: Any) -> bool:
    return type(item).__name__ == "IPyNbCell" and hasattr(item, "cell_num")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: Any, call: Any):
    outcome = yield
    if not _is_nbval_cell(item) or not item.config.getoption("--nbval-cache"):
        return
    report = outcome.get_result()
    run = _runs.setdefault(Path(str(item.fspath)), _Run())
    if report.when == "call":
        run.seconds += call.duration
        if report.passed:
            run.passed.add(item.cell_num)
            run.outputs[item.cell_num] = list(getattr(item, "test_outputs", None) or [])
        else:
            run.spoiled = True
    elif report.failed or report.skipped:  # setup or teardown
        run.spoiled = True


def pytest_runtest_teardown(item: Any, nextitem: Any) -> None:
    """After a notebook's last cell: store it if every code cell ran and passed."""
    directory = item.config.getoption("--nbval-cache")
    if not directory or not _is_nbval_cell(item):
        return
    if nextitem is not None and Path(str(nextitem.fspath)) == Path(str(item.fspath)):
        return
    path = Path(str(item.fspath))
    run = _runs.pop(path, None)
    if run is not None and not run.spoiled:
        store(path, run, Path(directory))


def _coalesced(outputs: list) -> list:
    """nbval keeps one output per stream message; a notebook keeps one per stream run."""
    merged: list = []
    for output in outputs:
        if (output.get("output_type") == "stream" and merged
                and merged[-1].get("output_type") == "stream"
                and merged[-1].get("name") == output.get("name")):
            merged[-1]["text"] += output.get("text", "")
        else:
            merged.append(dict(output))
    return merged


def executed_notebook(path: Path, outputs: dict[int, list]) -> Any | None:
    """The notebook at ``path`` with nbval's outputs, or None if a code cell is missing."""
    import nbformat

    notebook = nbformat.read(path, as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    if set(outputs) != set(range(len(code))):
        return None
    for count, cell in enumerate(code, start=1):
        cell.execution_count = count
        cell.outputs = [nbformat.from_dict(o) for o in _coalesced(outputs[count - 1])]
        for output in cell.outputs:
            if output.get("output_type") == "execute_result":
                output["execution_count"] = count
    nbformat.validate(notebook)
    return notebook


def store(path: Path, run: _Run, directory: Path) -> bool:
    """Cache the executed twin of ``book/<name>.md`` as the build would have."""
    import sys

    from jupyter_cache import get_cache
    from jupyter_cache.base import CacheBundleIn

    chapter = CHAPTERS / f"{path.stem}.md"
    notebook = executed_notebook(path, run.outputs)
    if notebook is None or not chapter.is_file():
        return False
    sys.path.insert(0, str(Path(__file__).parent))
    try:
        from execution_cache import KEY_FIELD, dependency_key
    finally:
        sys.path.pop(0)
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    key = dependency_key(cells, ROOT)
    cache = get_cache(str(directory))
    # several workers may write at once: jupyter-cache's SQLite database serialises them,
    # but a locked database raises, so try again for a while
    for attempt in range(20):
        try:
            cache.cache_notebook_bundle(
                CacheBundleIn(notebook, str(chapter),
                              data={"execution_seconds": run.seconds, KEY_FIELD: key,
                                    "executed_by": "nbval"}),
                check_validity=False, overwrite=True,
            )
            return True
        except Exception as error:  # sqlite3.OperationalError: database is locked
            if "locked" not in str(error) or attempt == 19:
                raise
            time.sleep(0.5)
    return False
