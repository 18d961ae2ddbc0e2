"""notebooks/*.ipynb are the Colab twins of book/*.md; this module makes and checks them.

A twin is what ``jupytext`` makes of the chapter, without outputs, with one change:
jupytext gives cells random ids, so each regeneration would differ. Here cell ids are
derived from the chapter's name and the cell's position, so regenerating an unchanged
chapter gives a byte-identical notebook and "in sync" can be checked exactly.

    python tests/notebook_twins.py --write   # regenerate (what `make notebooks` runs)
    python tests/notebook_twins.py --check   # exit 1 if any twin is stale or missing
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import jupytext
import nbformat

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
NOTEBOOKS = ROOT / "notebooks"


def chapters() -> list[Path]:
    """The book's executable pages: MyST Markdown files with a Jupyter kernelspec."""
    return sorted(
        path for path in BOOK.glob("*.md")
        if "kernelspec:" in path.read_text(encoding="utf-8")[:1000]
    )


def twin_path(chapter: Path) -> Path:
    return NOTEBOOKS / f"{chapter.stem}.ipynb"


def twin_text(chapter: Path) -> str:
    """The exact text notebooks/<chapter>.ipynb must have."""
    notebook = jupytext.read(chapter)
    for index, cell in enumerate(notebook.cells):
        cell.id = f"{chapter.stem[:50]}-{index}"
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
    # jupytext records its own version in the text file's header; the notebook does not
    # need it, and dropping it keeps twins stable across jupytext upgrades.
    notebook.metadata.pop("jupytext", None)
    return nbformat.writes(notebook) + "\n"


def stale_twins() -> list[str]:
    """Human-readable problems: missing, stale or orphaned notebooks."""
    problems = []
    for chapter in chapters():
        twin = twin_path(chapter)
        if not twin.exists():
            problems.append(f"missing twin {twin.relative_to(ROOT)} of {chapter.relative_to(ROOT)}")
        elif twin.read_text(encoding="utf-8") != twin_text(chapter):
            problems.append(
                f"{twin.relative_to(ROOT)} is out of date with {chapter.relative_to(ROOT)}")
    expected = {twin_path(chapter) for chapter in chapters()}
    for notebook in sorted(NOTEBOOKS.glob("*.ipynb")):
        if notebook not in expected:
            problems.append(f"{notebook.relative_to(ROOT)} has no chapter in book/")
    return problems


def write_twins() -> None:
    NOTEBOOKS.mkdir(exist_ok=True)
    for chapter in chapters():
        twin_path(chapter).write_text(twin_text(chapter), encoding="utf-8")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="regenerate notebooks/")
    action.add_argument("--check", action="store_true", help="fail if notebooks/ is stale")
    args = parser.parse_args()
    if args.write:
        write_twins()
    else:
        problems = stale_twins()
        print("\n".join(problems) or "notebooks/ is in sync with book/")
        sys.exit(1 if problems else 0)
