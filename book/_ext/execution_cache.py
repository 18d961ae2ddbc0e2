"""Execute each chapter once per change that matters, several at a time.

myst-nb's ``cache`` execution mode (``execute_notebooks: cache`` in ``_config.yml``)
keeps every chapter's executed notebook in jupyter-cache (``_build/.jupyter_cache``),
keyed by the chapter's code cells, so an edit of the prose executes nothing. It does
not notice a change in the code that a chapter imports, and it executes one chapter
at a time while Sphinx reads it. This extension

* gives every chapter a *dependency key*: a hash of the ``seqbook`` modules it imports,
  directly or through other ``seqbook`` modules (with the data files of their packages,
  such as trained checkpoints), of ``requirements.txt``, of the versions of every
  installed package and of the Python version;
* stores the key in Sphinx's environment, and marks a chapter outdated (Sphinx re-reads
  it) when its key has changed, although its source file has not;
* stores the key with the chapter's cached notebook too, and drops a cached notebook
  made under another key (so a cache left from an older checkout is never used);
* before Sphinx reads the chapters, executes those that have no valid cached notebook,
  in parallel, one kernel per worker (``SEQBOOK_EXECUTION_WORKERS``, default: one per
  CPU this process may use), and caches them; myst-nb then finds every notebook in the
  cache.

A chapter that fails stops the build after every chapter has run, with each failing
chapter's traceback (as ``nb_execution_raise_on_error`` does). ``make test`` deletes
the cache and builds with ``--all``, so CI always executes every chapter from scratch.

The functions above ``setup``'s hooks need no Sphinx and are tested on their own
(``tests/test_execution_cache.py``).
"""

from __future__ import annotations

import ast
import functools
import hashlib
import os
import re
import sys
import time
import traceback
from collections.abc import Iterable
from concurrent.futures import ProcessPoolExecutor
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any

PACKAGE = "seqbook"
KEY_FIELD = "seqbook_dependency_key"  # in the cached notebook's record and in the env
WORKERS_VARIABLE = "SEQBOOK_EXECUTION_WORKERS"
ENVIRONMENT_FILES = ("requirements.txt",)
VERSIONS_KEPT = 3  # cached notebooks per chapter (its latest code versions)
# each chapter's seconds as the chapter benchmark measured them: the order in which to
# start the chapters when no cached notebook tells their time (a fresh clone)
ESTIMATES_CONFIG = "seqbook_execution_estimates"
DEFAULT_ESTIMATES = "benchmarks/chapter_seconds.json"  # relative to the book's root


# --- what a chapter depends on (no Sphinx needed) --------------------------------------


def python_source(cell: str) -> str:
    """A notebook cell as plain Python: IPython's magics (``%pip``, ``!ls``) translated."""
    try:
        from IPython.core.inputtransformer2 import TransformerManager
    except ImportError:  # pragma: no cover - ipykernel brings IPython
        return re.sub(r"^(\s*)[%!].*$", r"\1pass", cell, flags=re.M)
    return _transformer(TransformerManager).transform_cell(cell)


@functools.lru_cache(maxsize=1)
def _transformer(manager: type) -> Any:
    return manager()


def imported_names(source: str, module: str | None = None, is_package: bool = False) -> set[str]:
    """Every dotted name of ``PACKAGE`` that ``source`` imports, anywhere in it.

    ``from seqbook.data import Vocab`` gives ``seqbook.data`` and ``seqbook.data.Vocab``
    (which may be a submodule); relative imports are resolved against ``module``, the
    name of the module whose source this is. Imports inside functions count too: a
    superset is safe, a missed dependency is not.

    Raises:
        SyntaxError: if ``source`` is not Python.
    """
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                if module is None:
                    continue
                package = module.split(".") if is_package else module.split(".")[:-1]
                package = package[: len(package) - (node.level - 1)]
                base = ".".join(package + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return {name for name in names if name == PACKAGE or name.startswith(PACKAGE + ".")}


@dataclass(frozen=True)
class PackageSources:
    """The ``PACKAGE`` package's modules under ``root`` (a checkout), by dotted name."""

    root: Path

    def module_file(self, name: str) -> Path | None:
        base = self.root.joinpath(*name.split("."))
        for candidate in (base / "__init__.py", base.with_suffix(".py")):
            if candidate.is_file():
                return candidate
        return None

    def all_modules(self) -> set[str]:
        names = set()
        for path in (self.root / PACKAGE).rglob("*.py"):
            parts = path.relative_to(self.root).with_suffix("").parts
            names.add(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
        return names

    def resolve(self, name: str) -> set[str]:
        """The modules that importing ``name`` runs: its longest prefix that is a module,
        and every package above it."""
        parts = name.split(".")
        for end in range(len(parts), 0, -1):
            if self.module_file(".".join(parts[:end])) is not None:
                return {".".join(parts[:i]) for i in range(1, end + 1)}
        return set()

    def closure(self, names: Iterable[str]) -> set[str]:
        """The modules that importing ``names`` runs, through each other's imports."""
        todo = set().union(*(self.resolve(name) for name in names))
        done: set[str] = set()
        while todo:
            module = todo.pop()
            done.add(module)
            path = self.module_file(module)
            try:
                imports = _module_imports(path, module, path.stat().st_mtime_ns)
            except SyntaxError:  # a broken module: the chapter depends on all of it
                return self.all_modules()
            for name in imports:
                todo |= self.resolve(name) - done
        return done

    def files(self, modules: Iterable[str]) -> set[Path]:
        """The modules' sources, and for packages the data files that ship with them
        (files of folders that are not packages, such as ``checkpoints/``)."""
        found = set()
        for module in modules:
            path = self.module_file(module)
            found.add(path)
            if path.name == "__init__.py":
                found |= _package_data(path.parent)
        return found


@functools.lru_cache(maxsize=4096)
def _module_imports(path: Path, module: str, mtime_ns: int) -> frozenset[str]:
    # parsed once per build for all chapters (mtime_ns: a changed file is parsed again)
    source = path.read_text(encoding="utf-8")
    return frozenset(imported_names(source, module, is_package=path.name == "__init__.py"))


def _package_data(folder: Path) -> set[Path]:
    data = set()
    for item in folder.iterdir():
        if item.name == "__pycache__":
            continue
        if item.is_file() and item.suffix not in (".py", ".pyc"):
            data.add(item)
        elif item.is_dir() and not (item / "__init__.py").exists():
            data |= {p for p in item.rglob("*") if p.is_file() and "__pycache__" not in p.parts}
    return data


def chapter_modules(code_cells: Iterable[str], root: Path) -> set[str]:
    """The ``PACKAGE`` modules a chapter with these code cells imports, directly or not.

    A cell that is not Python even after its magics are translated makes the chapter
    depend on the whole package (safe: it executes more often, never less)."""
    sources = PackageSources(root)
    names: set[str] = set()
    for cell in code_cells:
        try:
            names |= imported_names(python_source(cell))
        except SyntaxError:
            return sources.all_modules()
    return sources.closure(names)


def dependency_files(code_cells: Iterable[str], root: Path) -> list[Path]:
    """Every file whose content a chapter's execution depends on, besides its own code."""
    sources = PackageSources(root)
    files = sources.files(chapter_modules(code_cells, root))
    files |= {root / name for name in ENVIRONMENT_FILES if (root / name).is_file()}
    return sorted(files)


def dependency_key(code_cells: Iterable[str], root: Path) -> str:
    """A hash of what a chapter's outputs depend on besides its own code cells: the
    sources (and package data) of the seqbook modules it imports, requirements.txt,
    the installed packages' versions and the Python version. Its code cells themselves
    are jupyter-cache's key."""
    digest = hashlib.sha256(f"python {sys.version}\n{installed_packages()}\n".encode())
    for path in dependency_files(code_cells, root):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


@functools.lru_cache(maxsize=1)
def installed_packages() -> str:
    """Every package installed beside this Python, as ``name==version`` lines: the
    pins of requirements.txt do not fix what they depend on, and an environment
    installed again may resolve those to other versions."""
    from importlib import metadata

    return "\n".join(sorted({f"{(d.metadata['Name'] or '').lower()}=={d.version}"
                              for d in metadata.distributions()}))


# --- executing notebooks in worker processes --------------------------------------------


def execute_notebook(notebook_json: str, cwd: str, timeout: int | None,
                     allow_errors: bool) -> tuple[str, float, str | None, str | None]:
    """Run in a worker: execute a notebook as myst-nb does (``single_nb_execution``).

    Returns the executed notebook (JSON), the seconds it took, and the error's class
    name and traceback if a cell failed."""
    import nbformat
    from jupyter_cache.executors.utils import single_nb_execution

    notebook = nbformat.reads(notebook_json, as_version=4)
    result = single_nb_execution(notebook, cwd=cwd, timeout=timeout,
                                 allow_errors=allow_errors, meta_override=True)
    error = type(result.err).__name__ if result.err is not None else None
    return nbformat.writes(notebook), result.time, error, result.exc_string


def worker_count(jobs: int) -> int:
    wanted = os.environ.get(WORKERS_VARIABLE, "").strip()
    if wanted:
        if not wanted.isdigit() or int(wanted) < 1:
            raise ValueError(f"{WORKERS_VARIABLE} must be a positive integer, got {wanted!r}")
        count = int(wanted)
    else:
        count = usable_cpus()
    return max(1, min(count, jobs))


def usable_cpus(cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this process may use: those it may run on, fewer if its container's
    CPU quota allows fewer. ``os.cpu_count()`` counts the host's: in a container limited
    to 2 CPUs on a 64-core host it would start every chapter at once."""
    try:
        count = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):  # not on Linux
        count = os.cpu_count() or 1
    quota = None
    with suppress(OSError, ValueError):  # cgroup v2: "max 100000" or "200000 100000"
        limit, period = (cgroup / "cpu.max").read_text().split()[:2]
        if limit != "max":
            quota = int(limit) / int(period)
    if quota is None:
        with suppress(OSError, ValueError):  # cgroup v1: -1 means no limit
            limit = int((cgroup / "cpu" / "cpu.cfs_quota_us").read_text())
            period = int((cgroup / "cpu" / "cpu.cfs_period_us").read_text())
            if limit > 0:
                quota = limit / period
    if quota is not None:
        count = min(count, max(1, int(quota)))
    return max(1, count)


def read_estimates(path: Path) -> dict[str, float]:
    """Seconds per chapter (by file stem) as the chapter benchmark last measured them
    (``python -m benchmarks --chapters`` writes the file); empty if there is none."""
    import json

    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(data, dict):
        return {}
    return {str(name): float(seconds) for name, seconds in data.items()
            if isinstance(seconds, (int, float)) and seconds >= 0}


def execution_plan(expected: dict[str, float | None], sizes: dict[str, int],
                   workers: int) -> tuple[list[str], list[str]]:
    """The order in which to start the chapters, and the order they should finish in.

    ``expected`` holds each chapter's expected seconds (None: unknown), ``sizes`` the
    length of its code. Chapters start longest first, so that the last to finish is a
    short one; those with no known time start before all others (a new chapter may be
    long), the longest code first. The finishing order simulates ``workers`` workers,
    each taking the next chapter when it is free, with the unknown times set to the
    mean of the known ones (or to the code's length, if no time is known)."""
    import heapq

    if workers < 1:
        raise ValueError(f"workers must be at least 1, got {workers}")
    starts = sorted(expected, key=lambda name: (
        expected[name] is not None, -(expected[name] or 0.0), -sizes.get(name, 0), name))
    known = [seconds for seconds in expected.values() if seconds is not None]
    free = [(0.0, worker) for worker in range(workers)]
    finishes = []
    for name in starts:
        seconds = expected[name]
        if seconds is None:
            seconds = sum(known) / len(known) if known else float(sizes.get(name, 0))
        start, worker = heapq.heappop(free)
        finishes.append((start + seconds, len(finishes), name))
        heapq.heappush(free, (start + seconds, worker))
    return starts, [name for _, _, name in sorted(finishes)]


# --- Sphinx -----------------------------------------------------------------------------


def _sphinx_imports():
    from sphinx.errors import SphinxError
    from sphinx.util import logging

    class ChapterExecutionError(SphinxError):
        category = "Chapter execution error"

    return ChapterExecutionError, logging.getLogger(__name__)


@dataclass
class _Chapter:
    docname: str
    path: Path
    notebook: Any  # nbformat.NotebookNode, as myst-nb reads it
    nb_config: Any  # myst_nb's NbParserConfig, with the notebook's own overrides
    key: str


def _read_chapter(env: Any, docname: str, root: Path) -> _Chapter | None:
    """The notebook myst-nb will make of ``docname``, or None if it is not one."""
    from myst_nb.core.read import create_nb_reader

    path = Path(env.doc2path(docname))
    if path.suffix not in (".md", ".ipynb") or not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    nb_config = env.mystnb_config
    reader = create_nb_reader(str(path), env.myst_config, nb_config, text)
    if reader is None:
        return None
    notebook = reader.read(text)
    # as myst_nb.sphinx_.Parser.parse does before it executes
    kernel = notebook.metadata.get("kernelspec", {}).get("name")
    if kernel is not None:
        for pattern, alias in (nb_config.kernel_rgx_aliases or {}).items():
            if re.fullmatch(pattern, kernel):
                notebook.metadata["kernelspec"]["name"] = alias
                break
    if nb_config.metadata_key in notebook.metadata:
        overrides = dict(notebook.metadata[nb_config.metadata_key])
        overrides.pop("output_folder", None)
        with suppress(Exception):  # myst-nb warns about bad overrides when it reads
            nb_config = nb_config.copy(**overrides)
    cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
    return _Chapter(docname, path, notebook, nb_config, dependency_key(cells, root))


def _root(app: Any) -> Path:
    return Path(app.srcdir)


def compute_keys(app: Any, env: Any, added: set, changed: set, removed: set) -> list[str]:
    """env-get-outdated: chapters whose dependency key changed since they were read."""
    chapters = {}
    for docname in sorted(env.found_docs):
        chapter = _read_chapter(env, docname, _root(app))
        if chapter is not None:
            chapters[docname] = chapter
    app.seqbook_chapters = chapters
    stored = getattr(env, KEY_FIELD, {})
    outdated = [d for d, c in chapters.items() if d in env.all_docs and stored.get(d) != c.key]
    if outdated:
        _, logger = _sphinx_imports()
        logger.info(f"[execution_cache] imported code changed for: {', '.join(outdated)}")
    return outdated


def _uses_cache(chapter: _Chapter) -> bool:
    from pathlib import PurePosixPath

    config = chapter.nb_config
    if config.execution_mode != "cache":
        return False
    posix = PurePosixPath(chapter.path.as_posix())
    return not any(posix.match(pattern) for pattern in config.execution_excludepatterns or ())


def execute_outdated(app: Any, env: Any, docnames: list[str]) -> None:
    """env-before-read-docs: start executing, in parallel, the chapters to be read that
    have no cached notebook made under their current dependency key.

    Sphinx then reads the other pages first (the API reference's autodoc alone takes
    seconds) while the chapters execute, and each chapter in the order the chapters are
    expected to finish: :func:`wait_for_chapter` holds a chapter's reading until its
    notebook is cached. Under parallel reading (``-j``), Sphinx's reading processes
    could not wait on this process's workers, so every chapter is executed first."""
    from jupyter_cache import get_cache

    _, logger = _sphinx_imports()
    chapters = getattr(app, "seqbook_chapters", {})
    jobs: dict[str, tuple[_Chapter, Any]] = {}
    expected: dict[str, float | None] = {}
    estimates = read_estimates(_root(app) / app.config[ESTIMATES_CONFIG])
    for docname in docnames:
        chapter = chapters.get(docname)
        if chapter is None or not _uses_cache(chapter):
            continue
        cache = get_cache(chapter.nb_config.execution_cache_path or ".jupyter_cache")
        record = None
        with suppress(KeyError):
            record = cache.match_cache_notebook(chapter.notebook)
        seconds = estimates.get(chapter.path.stem)
        if record is not None:
            data = record.data or {}
            if data.get(KEY_FIELD) == chapter.key:
                continue
            seconds = float(data.get("execution_seconds") or 0.0) or seconds
            with suppress(KeyError):
                cache.remove_cache(record.pk)  # made under other imported code
        jobs[docname] = (chapter, cache)
        expected[docname] = seconds
    if not jobs:
        return
    workers = worker_count(len(jobs))
    sizes = {docname: sum(len(cell.source) for cell in chapter.notebook.cells
                          if cell.cell_type == "code") for docname, (chapter, _) in jobs.items()}
    starts, finishes = execution_plan(expected, sizes, workers)
    logger.info(f"[execution_cache] executing {len(jobs)} chapter(s) with {workers} "
                f"worker(s): {', '.join(starts)}")
    executions = _Executions(workers, logger)
    app.seqbook_executions = executions
    for docname in starts:
        executions.submit(docname, *jobs[docname])
    if app.parallel > 1:
        executions.wait_for_all()
        executions.finish()
        return
    # the other pages first, then the chapters as they should finish
    others = [docname for docname in docnames if docname not in jobs]
    docnames[:] = others + finishes


class _Executions:
    """The chapters executing in worker processes, and what became of them."""

    def __init__(self, workers: int, logger: Any) -> None:
        import multiprocessing

        self.pool = ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("spawn"))
        self.logger = logger
        self.pending: dict[str, tuple[Any, _Chapter, Any]] = {}  # docname -> future, ...
        self.failures: list[tuple[_Chapter, str, str | None]] = []
        self.count = 0
        self.started = time.perf_counter()

    def submit(self, docname: str, chapter: _Chapter, cache: Any) -> None:
        import nbformat

        config = chapter.nb_config
        cwd = str(chapter.path.parent)
        if config.execution_in_temp:  # pragma: no cover - not this book's setting
            import tempfile

            cwd = tempfile.mkdtemp(prefix="seqbook-execution-")
        future = self.pool.submit(execute_notebook, nbformat.writes(chapter.notebook), cwd,
                                  config.execution_timeout, config.execution_allow_errors)
        self.pending[docname] = (future, chapter, cache)
        self.count += 1

    def collect(self, docname: str) -> None:
        """Wait for one chapter's execution; cache its notebook, or note its failure."""
        import nbformat
        from jupyter_cache.base import CacheBundleIn

        future, chapter, cache = self.pending.pop(docname)
        try:
            executed, seconds, error, trace = future.result()
        except Exception as exc:  # noqa: BLE001 - reported as this chapter's failure
            # what the worker does not catch: a kernel that died (out of memory, a
            # cell's os._exit), a kernel that could not start, a worker that was killed
            self.failures.append((chapter, type(exc).__name__,
                                  "".join(traceback.format_exception(exc))))
            self.logger.info(f"[execution_cache] {docname}: {type(exc).__name__}")
            return
        if error is not None:
            self.failures.append((chapter, error, trace))
            self.logger.info(f"[execution_cache] {docname}: {error} after {seconds:.1f} s")
            return
        self.logger.info(f"[execution_cache] {docname}: executed in {seconds:.1f} s")
        notebook = nbformat.reads(executed, as_version=4)
        uri = str(chapter.path)
        # keep the last few versions of the chapter (an edit undone executes nothing),
        # not all of them
        older = sorted(r.pk for r in cache.list_cache_records() if r.uri == uri)
        for pk in older[: max(0, len(older) - (VERSIONS_KEPT - 1))]:
            with suppress(KeyError):
                cache.remove_cache(pk)
        data = {"execution_seconds": seconds, KEY_FIELD: chapter.key}
        cache.cache_notebook_bundle(CacheBundleIn(notebook, uri, data=data),
                                    check_validity=False, overwrite=True)

    def collect_finished(self) -> None:
        for docname in [d for d, (future, _, _) in self.pending.items() if future.done()]:
            self.collect(docname)

    def wait_for_all(self) -> None:
        """Every chapter executed and collected; raise if one that must not fail did."""
        for docname in list(self.pending):
            self.collect(docname)
        raising = [f for f in self.failures if f[0].nb_config.execution_raise_on_error]
        if raising:
            self.finish()
            ChapterExecutionError, _ = _sphinx_imports()
            report = "\n\n".join(f"{chapter.path}: {error}\n{trace}"
                                   for chapter, error, trace in raising)
            raise ChapterExecutionError(
                f"{len(raising)} chapter(s) failed to execute: "
                f"{', '.join(str(f[0].path) for f in raising)}\n\n{report}")
        # chapters that may fail are left uncached: myst-nb executes them again as it
        # reads them and reports their errors as warnings

    def finish(self) -> None:
        if self.pool is None:
            return
        self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None
        self.logger.info(f"[execution_cache] {self.count} chapter(s) executed in "
                         f"{time.perf_counter() - self.started:.1f} s")


def wait_for_chapter(app: Any, docname: str, source: list[str]) -> None:
    """source-read: cache the chapters that have finished; hold a chapter still
    executing until it has. A chapter that failed stops the build once every chapter
    has run, with each failing chapter's traceback."""
    executions = getattr(app, "seqbook_executions", None)
    if executions is None or executions.pool is None:
        return
    executions.collect_finished()
    if docname in executions.pending:
        executions.collect(docname)
    if any(chapter.docname == docname and chapter.nb_config.execution_raise_on_error
           for chapter, _, _ in executions.failures):
        executions.wait_for_all()  # raises, once the other chapters have run
    if not executions.pending:
        executions.wait_for_all()
        executions.finish()


def stop_executions(app: Any, exception: Exception | None) -> None:
    """build-finished: no worker outlives the build, even one that failed."""
    executions = getattr(app, "seqbook_executions", None)
    if executions is not None:
        executions.finish()


def remember_key(app: Any, doctree: Any) -> None:
    """doctree-read: the key under which this chapter's outputs were made."""
    chapter = getattr(app, "seqbook_chapters", {}).get(app.env.docname)
    if chapter is not None:
        _stored(app.env)[app.env.docname] = chapter.key


def _stored(env: Any) -> dict[str, str]:
    if not hasattr(env, KEY_FIELD):
        setattr(env, KEY_FIELD, {})
    return getattr(env, KEY_FIELD)


def purge(app: Any, env: Any, docname: str) -> None:
    _stored(env).pop(docname, None)


def merge(app: Any, env: Any, docnames: Iterable[str], other: Any) -> None:
    for docname in docnames:
        if docname in _stored(other):
            _stored(env)[docname] = _stored(other)[docname]


def setup(app: Any) -> dict[str, Any]:
    app.setup_extension("myst_nb")
    app.connect("env-get-outdated", compute_keys)
    app.connect("env-before-read-docs", execute_outdated)
    app.connect("source-read", wait_for_chapter)
    app.connect("build-finished", stop_executions)
    app.add_config_value(ESTIMATES_CONFIG, DEFAULT_ESTIMATES, "env", types=[str])
    app.connect("doctree-read", remember_key)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 1}
