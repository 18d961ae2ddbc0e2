"""What the book-level tests need to know about the repository's files."""

from __future__ import annotations

import functools
import re
from pathlib import Path

import yaml

from colab_edition import BOOK, NOTEBOOKS, ROOT, chapters  # noqa: F401  (re-exported)


def twin_path(chapter: Path) -> Path:
    """The Colab edition of a chapter."""
    return NOTEBOOKS / f"{chapter.stem}.ipynb"


def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def toc_files() -> list[str]:
    """Every file named in _toc.yml, without its suffix (e.g. 'book/sequences')."""
    found: list[str] = []

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for key in ("root", "file"):
                if key in node:
                    found.append(str(node[key]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8")))
    return [re.sub(r"\.(md|ipynb)$", "", f) for f in found]


def repository_url() -> str:
    return config()["repository"]["url"].rstrip("/")


def notebook(chapter: Path):  # noqa: ANN201 (a jupytext notebook)
    """The chapter as jupytext reads it, parsed once per version of the file (many
    tests read every chapter; do not modify what it returns)."""
    return _read(chapter, chapter.stat().st_mtime_ns)


@functools.cache
def _read(chapter: Path, mtime_ns: int):  # noqa: ANN202
    import jupytext

    return jupytext.read(chapter)


def code_cells(chapter: Path) -> list[str]:
    """Sources of the chapter's code cells, in order."""
    return [cell.source for cell in notebook(chapter).cells if cell.cell_type == "code"]
