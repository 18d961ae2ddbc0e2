"""Execute the book's outdated chapters into jupyter-cache, in parallel, before Sphinx.

myst-nb (``execute_notebooks: cache`` in ``_config.yml``) reuses a chapter's cached
outputs for as long as its code cells are unchanged. A chapter also depends on the
``seqbook`` modules it imports (directly or through other ``seqbook`` modules, with the
results and checkpoints shipped in their packages) and on ``requirements.txt``: its
*dependency key* hashes those. This script, which ``make book`` runs before
``jupyter-book build``,

1. removes the cached notebook of every chapter whose key changed since the last run,
2. executes the chapters that have no cached notebook with jupyter-cache's own
   ``local-parallel`` executor (one kernel per CPU), which stores them in the cache,

so that myst-nb then finds every chapter in the cache. A chapter that fails is not
cached: the build executes it again and reports its error.

    python tools/execution_cache.py            # what make book runs
    python tools/execution_cache.py --longest-first notebooks

The second form prints the chapters' twins in notebooks/, the longest to execute first
by the times this cache recorded (make test's nbval takes them in that order, so that
its workers end together instead of one running the last long chapter alone).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import json
import logging
import math
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = "seqbook"
CACHE = ROOT / "_build" / ".jupyter_cache"  # where Jupyter Book 1 keeps myst-nb's cache
KEYS = CACHE / "dependency_keys.json"  # chapter -> key, as of the last run
ENVIRONMENT = ROOT / "requirements.txt"
READER = {"name": "jupytext", "type": "plugin"}  # jupyter-cache reads MyST Markdown so


def chapters(root: Path = ROOT) -> list[Path]:
    """The pages of book/ that are notebooks (a jupytext header with a kernelspec)."""
    pages = {path: path.read_text(encoding="utf-8") for path in (root / "book").glob("*.md")}
    return sorted(path for path, text in pages.items()
                  if text.startswith("---\n") and "kernelspec:" in text.split("\n---")[0])


def imported_names(source: str, module: str = "", is_package: bool = False) -> set[str]:
    """Every dotted name under PACKAGE that ``source`` imports, anywhere in it.

    ``from seqbook.data import Vocab`` gives ``seqbook.data`` and ``seqbook.data.Vocab``
    (which may be a module); relative imports are resolved against ``module``."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = module.split(".")[: None if is_package else -1]
                parts = parts[: len(parts) - node.level + 1]
                base = ".".join(parts + ([base] if base else []))
            names |= {base} | {f"{base}.{alias.name}" for alias in node.names}
    return {name for name in names if name.split(".")[0] == PACKAGE}


def module_file(name: str, root: Path) -> Path | None:
    base = root.joinpath(*name.split("."))
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def resolve(name: str, root: Path) -> set[str]:
    """The modules that importing ``name`` runs: its longest prefix that is a module,
    and every package above it."""
    parts = name.split(".")
    for end in range(len(parts), 0, -1):
        if module_file(".".join(parts[:end]), root):
            return {".".join(parts[:i]) for i in range(1, end + 1)}
    return set()


def closure(names: set[str], root: Path) -> set[str]:
    """The modules that importing ``names`` runs, through each other's imports."""
    todo = set().union(*(resolve(name, root) for name in names))
    done: set[str] = set()
    while todo:
        module = todo.pop()
        done.add(module)
        path = module_file(module, root)
        assert path is not None  # resolve() gives only names that are modules
        for name in parsed_imports(path, stamp(path), module):
            todo |= resolve(name, root) - done
    return done


def stamp(path: Path) -> tuple[int, int]:
    """A file's version, as far as a cache needs it: its modification time and size."""
    status = path.stat()
    return status.st_mtime_ns, status.st_size


# The docs build asks for the dependencies of every page, and every page asks for the
# same hundred modules: each file is parsed once per version (its ``stamp``).
@functools.cache
def parsed_imports(path: Path, version: tuple[int, int], module: str = "") -> frozenset[str]:
    """``imported_names`` of a module's file, or of a chapter's code cells (``module``
    empty and a ``.md`` path)."""
    if path.suffix != ".md":
        source = path.read_text(encoding="utf-8")
        return frozenset(imported_names(source, module, path.name == "__init__.py"))
    import jupytext

    names: set[str] = set()
    for cell in jupytext.read(path).cells:
        if cell.cell_type == "code":  # IPython's %magics and !commands are not Python
            names |= imported_names(re.sub(r"^(\s*)[%!].*$", r"\1pass", cell.source,
                                           flags=re.M))
    return frozenset(names)


def dependency_files(chapter: Path, root: Path = ROOT) -> list[Path]:
    """The files a chapter's outputs depend on besides its own code: the modules it
    imports, the data files of their packages (folders without an ``__init__.py``,
    such as ``checkpoints/``), and requirements.txt."""
    names = set(parsed_imports(chapter, stamp(chapter)))
    files = {root / "requirements.txt"}
    for module in closure(names, root):
        path = module_file(module, root)
        files.add(path)
        if path.name == "__init__.py":
            files |= package_data(path.parent)
    return sorted(files)


# The claims ledger changes only the note a reader's run shows when a claim fails; the
# book is built in strict mode, where a failed claim stops the build whatever the ledger
# says. So a new ledger leaves every chapter's outputs as they are.
NOT_READ_BY_THE_BUILD = {"claims.json"}


def package_data(package: Path) -> set[Path]:
    """A package's files that are not Python and not in a subpackage (its results)."""
    return {path for path in package.rglob("*")
            if path.is_file() and path.suffix not in (".py", ".pyc")
            and path.name not in NOT_READ_BY_THE_BUILD
            and next(f for f in path.parents if (f / "__init__.py").exists()) == package}


def dependency_key(chapter: Path, root: Path = ROOT) -> str:
    digest = hashlib.sha256()
    for path in dependency_files(chapter, root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def recorded_seconds() -> dict[str, float]:
    """Each chapter's execution time as this cache recorded it (empty: no cache)."""
    if not (CACHE / "global.db").exists():
        return {}
    from jupyter_cache import get_cache

    return {Path(record.uri).stem: record.data["execution_seconds"]
            for record in get_cache(str(CACHE)).list_cache_records()
            if "execution_seconds" in record.data}


def longest_first(folder: str, seconds: dict[str, float]) -> list[str]:
    """The twins ``folder/<chapter>.ipynb`` by decreasing ``seconds`` (the chapters
    without a time first); the folder itself when no time is known."""
    if not seconds:
        return [folder]
    order = sorted(chapters(), key=lambda chapter: -seconds.get(chapter.stem, math.inf))
    return [f"{folder}/{chapter.stem}.ipynb" for chapter in order]


def main() -> int:
    if sys.argv[1:2] == ["--longest-first"]:
        folder = sys.argv[2] if len(sys.argv) > 2 else "notebooks"
        print(" ".join(longest_first(folder, recorded_seconds())))
        return 0
    import yaml
    from jupyter_cache import get_cache
    from jupyter_cache.executors import load_executor

    logging.basicConfig(format="%(message)s")
    logger = logging.getLogger("execution_cache")
    logger.setLevel(logging.INFO)  # and jupyter-cache's workers report each chapter
    cache = get_cache(str(CACHE))
    old = json.loads(KEYS.read_text()) if KEYS.exists() else {}
    keys = {}
    for chapter in chapters():
        uri = str(chapter)
        keys[chapter.stem] = dependency_key(chapter)
        cache.add_nb_to_project(uri, read_data=READER)
        record = cache.get_cached_project_nb(uri)
        if record is not None and old.get(chapter.stem) != keys[chapter.stem]:
            cache.remove_cache(record.pk)  # as `jcache notebook invalidate` does
    for record in cache.list_project_records():  # a chapter renamed or deleted
        if Path(record.uri).stem not in keys:
            cache.remove_nb_from_project(record.pk)
    KEYS.write_text(json.dumps(keys, indent=1) + "\n")
    outdated = cache.list_unexecuted()
    print(f"executing {len(outdated)} chapter(s):",
          " ".join(Path(record.uri).stem for record in outdated) or "none", flush=True)
    if not outdated:
        return 0
    settings = yaml.safe_load((ROOT / "_config.yml").read_text())["execute"]
    executor = load_executor("local-parallel", cache, logger=logger)
    result = executor.run_and_cache(filter_pks=[record.pk for record in outdated],
                                    timeout=settings["timeout"],
                                    allow_errors=settings["allow_errors"])
    failed = result.excepted + result.errored
    for uri in failed:
        print(f"FAILED: {uri}\n{cache.get_project_record(uri).traceback}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
