"""How long `make book` takes on a scratch clone: from scratch, and after typical edits.

    python -m benchmarks --build            # make bench-build; writes benchmarks/results.md
    python -m benchmarks.build [--keep]     # the same, printing only

The checkout's committed HEAD is cloned into a temporary folder, where `make book`
runs six times:

1. on the fresh clone (creating .venv first, timed apart and with an empty uv cache as
   on a new machine, then executing every chapter);
2. with nothing changed;
3. after a prose edit of the first chapter (a sentence added): nothing may execute;
4. after a code edit of the first chapter (a comment added to its last code cell):
   only that chapter may execute;
5. after an edit of the seqbook module that the fewest chapters import (a comment
   appended): exactly those chapters may execute;
6. after requirements.txt changes (a comment appended): every chapter executes.
   (Skipped unless --all-cases: it takes as long as case 1.)

Each case reports the wall time and the CPU time of `make book` and everything it
started (the kernels included), which chapters the build executed (from its log) and
whether that is the set expected. On a machine shared with other work, wall times are
inflated and CPU times are the measure to compare.
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MARKER = "benchmark edit"
SECTION = "Building the book: `make book` on a scratch clone"
FRESH_BUDGET, EDIT_BUDGET = 300.0, 45.0  # seconds: a fresh clone; an edit, besides execution
INTRODUCTION = (
    "Written by `python -m benchmarks --build` (`make bench-build`): the checkout's HEAD "
    "cloned into a temporary folder, `make book` run there from scratch and then after "
    "each edit. CPU is user + system time of `make book` and all it started (kernels "
    "included); on a machine shared with other work, wall times are inflated and CPU "
    "times are the ones to compare. The budgets: a fresh clone within "
    f"{FRESH_BUDGET:.0f} s (the environment included), a prose edit within "
    f"{EDIT_BUDGET:.0f} s, a code edit within the chapter's execution plus "
    f"{EDIT_BUDGET:.0f} s."
)


@dataclass
class BuildCase:
    name: str
    wall_seconds: float
    cpu_seconds: float
    executed: set[str]
    expected: set[str] | None  # None: no expectation (the from-scratch build)
    chapter_seconds: dict[str, float] = field(default_factory=dict)

    @property
    def as_expected(self) -> bool:
        return self.expected is None or self.executed == self.expected

    def markdown_row(self) -> str:
        executed = ", ".join(sorted(self.executed)) or "none"
        verdict = "" if self.expected is None else (
            " (as expected)" if self.as_expected
            else f" (**expected {', '.join(sorted(self.expected)) or 'none'}**)")
        return (f"| {self.name} | {self.wall_seconds:.0f} | {self.cpu_seconds:.0f} | "
                f"{executed}{verdict} |")


MARKDOWN_HEADER = (
    "| `make book` on a scratch clone | wall (s) | CPU (s) | chapters executed |\n"
    "| --- | ---: | ---: | --- |"
)


def timed(command: list[str], cwd: Path, log: Path,
          env: dict[str, str] | None = None) -> tuple[float, float, int]:
    """Wall and CPU seconds (user + system, of the command and all it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    with log.open("w") as out:
        status = subprocess.run(command, cwd=cwd, stdout=out, stderr=subprocess.STDOUT,
                                env=env).returncode
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, status


def executed_chapters(log_text: str) -> tuple[set[str], dict[str, float]]:
    """The chapters book/_ext/execution_cache.py executed, and their seconds."""
    seconds = {m.group(1): float(m.group(2)) for m in re.finditer(
        r"^\[execution_cache\] book/(\S+): executed in ([\d.]+) s", log_text, re.M)}
    names = set()
    for line in re.findall(r"^\[execution_cache\] executing .*?: (.*)$", log_text, re.M):
        names |= {name.strip().removeprefix("book/") for name in line.split(",")}
    return names, seconds


def chapter_order(clone: Path) -> list[str]:
    """The executable chapters, in the book's order."""
    sys.path.insert(0, str(clone / "tests"))
    try:
        from notebook_twins import chapters
    finally:
        sys.path.pop(0)
    toc = (clone / "_toc.yml").read_text(encoding="utf-8")
    ordered = re.findall(r"file:\s*book/([\w-]+)", toc)
    names = {path.stem for path in chapters()}
    return [name for name in ordered if name in names]


def dependents(clone: Path, chapters: list[str]) -> dict[str, set[str]]:
    """seqbook module file -> the chapters whose dependency key covers it."""
    sys.path.insert(0, str(clone / "book" / "_ext"))
    try:
        import jupytext
        from execution_cache import PackageSources, chapter_modules
    finally:
        sys.path.pop(0)
    sources = PackageSources(clone)
    found: dict[str, set[str]] = {}
    for name in chapters:
        notebook = jupytext.read(clone / "book" / f"{name}.md")
        cells = [cell.source for cell in notebook.cells if cell.cell_type == "code"]
        for module in chapter_modules(cells, clone):
            path = sources.module_file(module).relative_to(clone).as_posix()
            found.setdefault(path, set()).add(name)
    return found


def prose_edit(chapter: Path) -> None:
    text = chapter.read_text(encoding="utf-8")
    title = re.search(r"^# .*$", text, re.M)
    position = title.end()
    chapter.write_text(text[:position] + f"\n\nA sentence added by a {MARKER}.\n"
                       + text[position:], encoding="utf-8")


def code_edit(chapter: Path) -> None:
    text = chapter.read_text(encoding="utf-8")
    closing = text.rstrip().rfind("```{code-cell}")
    end = text.index("\n```", closing + 1)
    chapter.write_text(text[:end] + f"\n# {MARKER}" + text[end:], encoding="utf-8")


def append_comment(path: Path) -> None:
    path.write_text(path.read_text(encoding="utf-8") + f"\n# {MARKER}\n", encoding="utf-8")


def run(keep: bool = False, all_cases: bool = False) -> list[BuildCase]:
    scratch = Path(tempfile.mkdtemp(prefix="seqbook-bench-build-"))
    clone = scratch / "seqbook"
    subprocess.run(["git", "clone", "--quiet", str(ROOT), str(clone)], check=True)
    env_make = ["make", "--no-print-directory"]
    cases: list[BuildCase] = []
    try:
        # uv's cache emptied, as on a new machine (uv would otherwise copy every
        # package from the cache of this machine's earlier installs)
        fresh_machine = {**os.environ, "UV_CACHE_DIR": str(scratch / "uv-cache")}
        wall, cpu, status = timed([*env_make, ".venv/.installed"], clone, scratch / "venv.log",
                                  env=fresh_machine)
        if status:
            raise RuntimeError(f"installing .venv failed: see {scratch / 'venv.log'}")
        print(f"  .venv installed in {wall:.0f} s (CPU {cpu:.0f} s)", flush=True)
        cases.append(BuildCase("the Python environment (.venv), fresh clone", wall, cpu,
                               set(), None))

        chapters = chapter_order(clone)
        first = clone / "book" / f"{chapters[0]}.md"
        modules = dependents(clone, chapters)
        module, readers = min(modules.items(), key=lambda item: (
            len(item[1]), item[0].endswith("__init__.py"), item[0]))

        plan = [
            ("from scratch (every chapter)", lambda: None, None),
            ("nothing changed", lambda: None, set()),
            (f"prose edit in {chapters[0]}", lambda: prose_edit(first), set()),
            (f"code edit in {chapters[0]}", lambda: code_edit(first), {chapters[0]}),
            (f"edit of {module} (imported by {len(readers)} chapter(s))",
             lambda: append_comment(clone / module), readers),
        ]
        if all_cases:
            plan.append(("edit of requirements.txt",
                         lambda: append_comment(clone / "requirements.txt"), set(chapters)))
        for index, (name, edit, expected) in enumerate(plan):
            edit()
            log = scratch / f"book-{index}.log"
            wall, cpu, status = timed([*env_make, "book"], clone, log)
            if status:
                raise RuntimeError(f"make book failed ({name}): see {log}")
            executed, seconds = executed_chapters(log.read_text(encoding="utf-8"))
            if expected is None:
                expected_now = None
                if executed != set(chapters):
                    raise RuntimeError(f"the fresh build executed {executed}, not every chapter")
            else:
                expected_now = expected
            case = BuildCase(name, wall, cpu, executed, expected_now, seconds)
            cases.append(case)
            print("  " + case.markdown_row(), flush=True)
    finally:
        if keep:
            print(f"  scratch clone kept in {clone}")
        else:
            shutil.rmtree(scratch, ignore_errors=True)
    return cases


def markdown(cases: list[BuildCase]) -> list[str]:
    lines = [MARKDOWN_HEADER, *(case.markdown_row() for case in cases)]
    verdicts = []

    def verdict(seconds: float, budget: float) -> str:
        return f"within {budget:.0f} s" if seconds <= budget else f"**over {budget:.0f} s**"

    venv = next((c for c in cases if c.name.startswith("the Python environment")), None)
    fresh = next((c for c in cases if c.name.startswith("from scratch")), None)
    if venv is not None and fresh is not None:
        total = venv.wall_seconds + fresh.wall_seconds
        verdicts.append(f"a fresh clone, environment included: {total:.0f} s "
                        f"({verdict(total, FRESH_BUDGET)})")
    prose = next((c for c in cases if c.name.startswith("prose edit")), None)
    if prose is not None:
        verdicts.append(f"after a prose edit: {prose.wall_seconds:.0f} s "
                        f"({verdict(prose.wall_seconds, EDIT_BUDGET)})")
    code = next((c for c in cases if c.name.startswith("code edit")), None)
    if code is not None and code.chapter_seconds:
        chapter_time = sum(code.chapter_seconds.values())
        overhead = code.wall_seconds - chapter_time
        verdicts.append(f"after a code edit: {code.wall_seconds:.0f} s, of which {overhead:.0f} s "
                        f"besides executing the chapter ({chapter_time:.0f} s) "
                        f"({verdict(overhead, EDIT_BUDGET)})")
    if verdicts:
        lines += ["", "Against the budgets:", "", *(f"- {line}" for line in verdicts)]
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--keep", action="store_true", help="keep the scratch clone")
    parser.add_argument("--all-cases", action="store_true",
                        help="also edit requirements.txt (executes every chapter again)")
    args = parser.parse_args(argv)
    print(f"load average before: {os.getloadavg()}", flush=True)
    cases = run(keep=args.keep, all_cases=args.all_cases)
    print("\n".join(markdown(cases)))
    return 0 if all(case.as_expected for case in cases) else 1


if __name__ == "__main__":
    sys.exit(main())
