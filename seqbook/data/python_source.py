"""Python source code from the running interpreter's own standard library.

Every Python installation carries a few megabytes of carefully written, real code:
a corpus for character-level language models that needs no download. Note that the
text depends on the Python version (Colab's may differ from the book's build).
"""

from __future__ import annotations

import os
import random
import sysconfig
from pathlib import Path
from typing import NamedTuple

from seqbook._checks import check_int, check_positive_int
from seqbook.data.splits import Splits, split_dataset

__all__ = ["SourceFile", "python_source_corpus"]

# Tests, GUI demos, vendored wheels and codec tables are not the code we want to imitate.
_EXCLUDED_DIRS = {
    "test", "tests", "idlelib", "turtledemo", "site-packages", "dist-packages",
    "lib2to3", "ensurepip", "encodings", "pydoc_data", "__pycache__",
}


class SourceFile(NamedTuple):
    path: str  # relative to the standard library's directory
    text: str


def _stdlib_files() -> list[Path]:
    """Every ``*.py`` file under the standard library's directory, outside the excluded
    folders, sorted. The walk prunes those folders instead of filtering afterwards: the
    interpreter's own ``site-packages`` (torch and the like, on many installations) lies
    inside the standard library's directory and holds far more files than the library."""
    root = Path(sysconfig.get_paths()["stdlib"])
    found = []
    for folder, subfolders, names in os.walk(root):
        subfolders[:] = [name for name in subfolders if name not in _EXCLUDED_DIRS]
        found += [Path(folder, name) for name in names if name.endswith(".py")]
    return sorted(found)


def python_source_corpus(
    num_chars: int = 300_000,
    max_file_chars: int = 30_000,
    valid_fraction: float = 0.1,
    test_fraction: float = 0.1,
    seed: int = 0,
) -> Splits[SourceFile]:
    """Standard-library source files, split disjointly *by file*.

    Files are drawn in a seeded random order until their total length reaches
    ``num_chars``; files longer than ``max_file_chars`` are skipped so that one huge
    module cannot make up the whole corpus.

    Args:
        num_chars: roughly how many characters to collect (>= 1).
        max_file_chars: skip files longer than this (>= 1).
        valid_fraction, test_fraction: shares of files held out.
        seed: seeds the draw and the split.

    Returns:
        :class:`~seqbook.data.Splits` of :class:`SourceFile`; join the texts of a split
        to get one training string.

    Example:
        >>> corpus = python_source_corpus(num_chars=20_000, seed=0)
        >>> sum(len(f.text) for split in corpus for f in split) >= 20_000
        True
    """
    check_positive_int("num_chars", num_chars)
    check_positive_int("max_file_chars", max_file_chars)
    check_int("seed", seed, min_value=0)
    split_dataset([], valid_fraction, test_fraction, seed=seed)  # checks the fractions first
    files = _stdlib_files()
    random.Random(seed).shuffle(files)
    root = Path(sysconfig.get_paths()["stdlib"])
    chosen: list[SourceFile] = []
    total = 0
    for path in files:
        if total >= num_chars:
            break
        try:
            text = path.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        if not text.strip() or len(text) > max_file_chars:
            continue
        chosen.append(SourceFile(path.relative_to(root).as_posix(), text))
        total += len(text)
    if total < num_chars:
        raise ValueError(
            f"num_chars={num_chars} is more than the {total} characters available in files "
            f"of at most max_file_chars={max_file_chars} characters"
        )
    return split_dataset(chosen, valid_fraction, test_fraction, seed=seed)
