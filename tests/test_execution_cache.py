"""book/_ext/execution_cache.py: which edit re-executes which chapter.

`make book` must re-execute nothing after a prose edit, only the edited chapter after
a code edit, exactly the chapters that import a seqbook module (directly or through
other seqbook modules) after that module changes, and every chapter after
requirements.txt changes. The first tests check the dependency keys on a small
project whose answers are known; the last ones check the real chapters against what
Python really imports, and build a small book with Sphinx to check what is executed.
"""

from __future__ import annotations

import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import jupytext
import pytest

from book_files import ROOT, chapters, code_cells

sys.path.insert(0, str(ROOT / "book" / "_ext"))
import execution_cache as ec  # noqa: E402

HEADER = """---
jupytext:
  text_representation:
    extension: .md
    format_name: myst
kernelspec:
  display_name: Python 3
  language: python
  name: python3
---
"""

INSTALL_CELL = """try:
    import seqbook
except ImportError:
    %pip install -q "seqbook"
"""

# A small project: which chapter imports what, directly or through other modules.
PACKAGE = {
    "seqbook/__init__.py": '"""The package."""\n',
    "seqbook/_checks.py": "def check(x):\n    return x\n",
    "seqbook/utils.py": "from seqbook._checks import check\n\nVALUE = check(1)\n",
    "seqbook/alpha/__init__.py": "from seqbook.alpha.core import A\n",
    "seqbook/alpha/core.py": "from .. import utils\n\nA = utils.VALUE + 1\n",
    "seqbook/alpha/checkpoints/weights.txt": "1 2 3\n",
    "seqbook/beta.py": "def load():\n    from seqbook.alpha import core\n    return core.A\n",
    "seqbook/gamma.py": "G = 3\n",
}
CHAPTERS = {
    "one": ["import numpy as np\nfrom seqbook.utils import VALUE\nprint(VALUE)"],
    "two": ["from seqbook.alpha import A\nprint(A)"],
    "three": ["import seqbook.beta as beta\nprint(beta.load())"],
    "four": ["print('no seqbook here but the install cell')"],
}
# the chapters each file's change must re-execute
EXPECTED = {
    "seqbook/__init__.py": {"one", "two", "three", "four"},
    "seqbook/_checks.py": {"one", "two", "three"},
    "seqbook/utils.py": {"one", "two", "three"},
    "seqbook/alpha/__init__.py": {"two", "three"},
    "seqbook/alpha/core.py": {"two", "three"},
    "seqbook/alpha/checkpoints/weights.txt": {"two", "three"},
    "seqbook/beta.py": {"three"},
    "seqbook/gamma.py": set(),
    "requirements.txt": {"one", "two", "three", "four"},
}


def chapter_text(cells: list[str], prose: str = "Some prose.") -> str:
    body = "\n\n".join(f"```{{code-cell}} ipython3\n{cell}\n```" for cell in cells)
    return (f"{HEADER}\n# A chapter\n\n```{{code-cell}} ipython3\n{INSTALL_CELL}```\n\n"
            f"{prose}\n\n{body}\n")


def write_project(root: Path) -> None:
    for name, text in PACKAGE.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / "requirements.txt").write_text("torch==2.13.0\n")
    (root / "book").mkdir()
    for name, cells in CHAPTERS.items():
        (root / "book" / f"{name}.md").write_text(chapter_text(cells))


def keys(root: Path) -> dict[str, str]:
    found = {}
    for path in sorted((root / "book").glob("*.md")):
        cells = [c.source for c in jupytext.read(path).cells if c.cell_type == "code"]
        found[path.stem] = ec.dependency_key(cells, root)
    return found


def changed_by(root: Path, edit) -> set[str]:
    before = keys(root)
    edit()
    after = keys(root)
    return {name for name in before if before[name] != after[name]}


@pytest.fixture
def project(tmp_path):
    write_project(tmp_path)
    return tmp_path


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_changed_file_invalidates_exactly_the_chapters_that_depend_on_it(project, name):
    path = project / name
    assert changed_by(project, lambda: path.write_text(path.read_text() + "# edited\n")) \
        == EXPECTED[name]


def test_a_prose_edit_changes_no_key_and_not_the_code_that_jupyter_cache_hashes(project):
    chapter = project / "book" / "two.md"
    code_before = [c.source for c in jupytext.read(chapter).cells if c.cell_type == "code"]
    edited = chapter_text(CHAPTERS["two"], prose="Other prose, and $x^2$ in it.")
    assert changed_by(project, lambda: chapter.write_text(edited)) == set()
    code_after = [c.source for c in jupytext.read(chapter).cells if c.cell_type == "code"]
    assert code_before == code_after


def test_another_version_of_an_installed_package_changes_every_key(project, monkeypatch):
    listed = ec.installed_packages()
    assert any(line.startswith("torch==2.13.0") for line in listed.splitlines())
    upgraded = listed.replace("\nnumpy==", "\nnumpy==0.0.0+")
    assert upgraded != listed
    assert changed_by(project, lambda: monkeypatch.setattr(
        ec, "installed_packages", lambda: upgraded)) == set(CHAPTERS)


def test_a_new_import_in_a_chapter_changes_its_key_only(project):
    chapter = project / "book" / "one.md"
    edited = chapter_text([*CHAPTERS["one"], "import seqbook.gamma"])
    assert changed_by(project, lambda: chapter.write_text(edited)) == {"one"}


def test_relative_and_lazy_imports_and_magics_are_followed(project):
    cells = [INSTALL_CELL, "!ls\nimport seqbook.beta"]
    modules = ec.chapter_modules(cells, project)
    assert modules == {"seqbook", "seqbook.beta", "seqbook.alpha", "seqbook.alpha.core",
                       "seqbook.utils", "seqbook._checks"}


def test_a_chapter_that_is_not_python_depends_on_the_whole_package(project):
    modules = ec.chapter_modules(["def broken(:\n    pass"], project)
    assert "seqbook.gamma" in modules and "seqbook.beta" in modules


def test_dependency_files_name_the_package_data_and_requirements(project):
    files = ec.dependency_files(["from seqbook.alpha import A"], project)
    relative = {p.relative_to(project).as_posix() for p in files}
    assert "seqbook/alpha/checkpoints/weights.txt" in relative
    assert "requirements.txt" in relative
    assert "seqbook/gamma.py" not in relative and "seqbook/beta.py" not in relative


def test_worker_count_reads_the_environment(monkeypatch):
    monkeypatch.setenv(ec.WORKERS_VARIABLE, "3")
    assert ec.worker_count(jobs=10) == 3
    assert ec.worker_count(jobs=2) == 2  # never more workers than chapters
    monkeypatch.setenv(ec.WORKERS_VARIABLE, "two")
    with pytest.raises(ValueError, match=ec.WORKERS_VARIABLE):
        ec.worker_count(jobs=2)


def test_the_default_worker_count_follows_the_containers_cpu_quota(tmp_path, monkeypatch):
    monkeypatch.delenv(ec.WORKERS_VARIABLE, raising=False)
    monkeypatch.setattr(ec.os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    (tmp_path / "cpu.max").write_text("200000 100000\n")  # 2 CPUs' worth of a 64-core host
    assert ec.usable_cpus(tmp_path) == 2
    (tmp_path / "cpu.max").write_text("50000 100000\n")  # half a CPU: still one worker
    assert ec.usable_cpus(tmp_path) == 1
    (tmp_path / "cpu.max").write_text("max 100000\n")
    assert ec.usable_cpus(tmp_path) == 64
    (tmp_path / "cpu.max").unlink()  # cgroup v1
    (tmp_path / "cpu").mkdir()
    (tmp_path / "cpu" / "cpu.cfs_quota_us").write_text("300000\n")
    (tmp_path / "cpu" / "cpu.cfs_period_us").write_text("100000\n")
    assert ec.usable_cpus(tmp_path) == 3
    monkeypatch.setattr(ec.os, "sched_getaffinity", lambda pid: {0}, raising=False)
    assert ec.usable_cpus(tmp_path) == 1  # pinned to one CPU
    assert 1 <= ec.worker_count(jobs=20) <= (os.cpu_count() or 1)


def test_the_plan_starts_the_longest_chapters_and_predicts_the_finishing_order():
    expected = {"a": 10.0, "b": 40.0, "c": 30.0, "d": 20.0}
    starts, finishes = ec.execution_plan(expected, dict.fromkeys(expected, 0), workers=2)
    assert starts == ["b", "c", "d", "a"]
    # b runs 0-40 s and c 0-30 s; d follows c (30-50 s) and a follows b (40-50 s)
    assert finishes == ["c", "b", "d", "a"]
    assert ec.execution_plan(expected, dict.fromkeys(expected, 0), workers=1)[1] == starts


def test_a_chapter_with_no_known_time_starts_first():
    # a new chapter may be long; its time is taken as the mean of the known ones
    starts, finishes = ec.execution_plan({"known": 5.0, "other": 1.0, "new": None},
                                         {"known": 1, "other": 1, "new": 100}, workers=1)
    assert starts == ["new", "known", "other"] and finishes == starts
    # with no time known at all, the longest code first
    starts, _ = ec.execution_plan({"x": None, "y": None}, {"x": 10, "y": 30}, workers=2)
    assert starts == ["y", "x"]
    with pytest.raises(ValueError, match="workers"):
        ec.execution_plan({"x": 1.0}, {"x": 1}, workers=0)


def test_estimates_are_read_leniently(tmp_path):
    # the estimates only order the work: a missing or damaged file orders by code size
    path = tmp_path / "seconds.json"
    assert ec.read_estimates(path) == {}
    path.write_text("not json")
    assert ec.read_estimates(path) == {}
    path.write_text('{"a": 3, "b": "slow", "c": -1, "d": 2.5}')
    assert ec.read_estimates(path) == {"a": 3.0, "d": 2.5}


# --- the real book ----------------------------------------------------------------------

ORACLE = r"""
import importlib, json, os, sys
import matplotlib, numpy, torch  # the heavy imports, once, before forking
matplotlib.use("Agg")
sys.path.insert(0, sys.argv[1])
results = {}
for name, statements in json.loads(sys.stdin.read()).items():
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(read)
        for statement in statements:
            exec(statement, {})
        loaded = sorted(m for m in sys.modules if m == "seqbook" or m.startswith("seqbook."))
        os.write(write, json.dumps(loaded).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        results[name] = json.loads(pipe.read() or "null")
    os.waitpid(pid, 0)
print(json.dumps(results))
"""


def top_level_imports(cells: list[str]) -> list[str]:
    import ast

    statements = []
    for cell in cells:
        tree = ast.parse(ec.python_source(cell))
        statements += [ast.unparse(node) for node in tree.body
                       if isinstance(node, (ast.Import, ast.ImportFrom))]
    return statements


@pytest.mark.slow
def test_every_module_a_chapter_really_imports_is_among_its_dependencies():
    """What Python loads when a chapter's imports run (a fork per chapter, so each
    starts from the same interpreter) is a subset of the modules its key covers: a
    change in any of them re-executes the chapter."""
    import json

    statements = {c.stem: top_level_imports(code_cells(c)) for c in chapters()}
    # the timeout only guards against a hang: make test runs this niced, beside the
    # book's build, and on a busy machine it waits long for the CPU
    result = subprocess.run([sys.executable, "-c", ORACLE, str(ROOT)],
                            input=json.dumps(statements), capture_output=True, text=True,
                            timeout=1800, cwd=ROOT)
    assert result.returncode == 0, result.stderr
    loaded = json.loads(result.stdout.strip().splitlines()[-1])
    for chapter in chapters():
        really = set(loaded[chapter.stem])
        assert really, f"{chapter.stem}: the oracle loaded no seqbook module"
        covered = ec.chapter_modules(code_cells(chapter), ROOT)
        assert really <= covered, f"{chapter.stem}: not covered {sorted(really - covered)}"


# --- a small book, built by Sphinx --------------------------------------------------------

CONF = f"""
import sys
sys.path.insert(0, {str(ROOT / "book" / "_ext")!r})
extensions = ["myst_nb", "execution_cache"]
nb_execution_mode = "cache"
nb_execution_raise_on_error = True
exclude_patterns = ["_build"]
"""


def build(root: Path) -> tuple[int, str]:
    env = {**os.environ, ec.WORKERS_VARIABLE: "2"}
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-b", "html", str(root),
         str(root / "_build" / "html"), "-d", str(root / "_build" / "doctrees")],
        capture_output=True, text=True, timeout=1800, cwd=root, env=env)
    return result.returncode, result.stdout + result.stderr


def executed(log: str) -> set[str]:
    lines = [line for line in log.splitlines() if line.startswith("[execution_cache] executing")]
    return set().union(*({name.strip() for name in line.split(": ", 1)[1].split(",")}
                         for line in lines)) if lines else set()


def html_text(root: Path, name: str) -> str:
    from bs4 import BeautifulSoup

    page = root / "_build" / "html" / f"{name}.html"
    return BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").get_text(" ")


@pytest.mark.slow
def test_a_small_book_executes_what_changed_and_nothing_else(tmp_path):
    root = tmp_path
    write_project(root)
    for name in ("one", "two", "three", "four"):  # the book is the project's root
        (root / "book" / f"{name}.md").rename(root / f"{name}.md")
    (root / "book").rmdir()
    (root / "conf.py").write_text(CONF)
    (root / "index.md").write_text(
        "# Book\n\n```{toctree}\none\ntwo\nthree\nfour\n```\n")

    status, log = build(root)
    assert status == 0, log
    assert executed(log) == {"one", "two", "three", "four"}
    assert "2" in html_text(root, "two")  # A = 1 + 1
    # the page that is no chapter is read first, while the chapters execute
    assert re.findall(r"reading sources\.\.\. \[\s*\d+%\] (\S+)", log)[0] == "index"

    status, log = build(root)  # nothing changed
    assert status == 0, log
    assert executed(log) == set()

    # a module that two and three import (their outputs must follow the new code),
    # and the prose of one (its page changes, it is not executed)
    core = root / "seqbook" / "alpha" / "core.py"
    core.write_text(core.read_text().replace("+ 1", "+ 41"))
    one = root / "one.md"
    one.write_text(one.read_text().replace("Some prose.", "Edited prose."))
    status, log = build(root)
    assert status == 0, log
    assert executed(log) == {"two", "three"}
    assert "42" in html_text(root, "two") and "42" in html_text(root, "three")
    assert "Edited prose." in html_text(root, "one")
    environment = pickle.loads((root / "_build" / "doctrees" / "environment.pickle").read_bytes())
    assert set(getattr(environment, ec.KEY_FIELD)) == {"one", "two", "three", "four"}

    # a chapter that fails fails the build, with its traceback, and is never cached
    broken = "import seqbook.gamma\nraise RuntimeError('chapter four is broken')"
    (root / "four.md").write_text(chapter_text([broken]))
    for _ in range(2):
        status, log = build(root)
        assert status != 0
        assert executed(log) == {"four"}
        assert "chapter four is broken" in log and "four.md" in log


class _Log:
    def __init__(self) -> None:
        self.lines: list[str] = []

    def info(self, line: str) -> None:
        self.lines.append(line)


def test_a_kernel_that_dies_is_that_chapters_failure(tmp_path):
    # nbclient raises DeadKernelError, which jupyter-cache does not catch: the build
    # must name the chapter, not stop on a bare exception from the worker pool
    from types import SimpleNamespace

    import nbformat

    config = SimpleNamespace(execution_in_temp=False, execution_timeout=60,
                             execution_allow_errors=False, execution_raise_on_error=True)
    notebook = nbformat.v4.new_notebook(
        cells=[nbformat.v4.new_code_cell("import os\nos._exit(3)")],
        metadata={"kernelspec": {"name": "python3", "display_name": "Python 3",
                                 "language": "python"}})
    path = tmp_path / "dies.md"
    chapter = ec._Chapter("dies", path, notebook, config, key="k")
    log = _Log()
    executions = ec._Executions(1, log)
    try:
        executions.submit("dies", chapter, cache=None)
        with pytest.raises(Exception) as raised:
            executions.wait_for_all()
    finally:
        executions.finish()
    assert type(raised.value).__name__ == "ChapterExecutionError"
    message = str(raised.value)
    assert str(path) in message and "DeadKernelError" in message
    assert "[execution_cache] dies: DeadKernelError" in log.lines
    assert executions.pool is None and not executions.pending


def test_the_config_executes_through_the_cache():
    import yaml

    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert config["execute"]["execute_notebooks"] == "cache"
    assert config["sphinx"]["local_extensions"]["execution_cache"] == "book/_ext"
    assert config["sphinx"]["config"]["nb_execution_raise_on_error"] is True


def test_code_cells_are_what_myst_nb_reads():
    # the build computes keys from myst-nb's reader, these tests from jupytext's
    from myst_nb.core.read import read_myst_markdown_notebook
    from myst_parser.config.main import MdParserConfig

    for chapter in chapters():
        text = chapter.read_text(encoding="utf-8")
        notebook = read_myst_markdown_notebook(text, MdParserConfig())
        cells = [c.source for c in notebook.cells if c.cell_type == "code"]
        assert cells == code_cells(chapter), chapter.stem
