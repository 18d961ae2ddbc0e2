"""Each chapter's execution time and peak memory, against the book's budgets.

The budgets are 90 s and 2 GB a chapter on a quiet 2-core machine.

Every notebook of notebooks/ is executed in a fresh kernel, from the book's folder as
the book build does. Time is the wall-clock time of executing all cells, and the
kernel's CPU time (user + system, with the processes it waited for, from
/proc/<pid>/stat) over the same cells: chapters run torch on one thread, so on a quiet
machine the two agree, and on a busy one the CPU time is the measure that holds (the
budget is judged on it when it is known). Peak memory is the kernel process's
high-water mark of resident memory (VmHWM in /proc/<pid>/status), read just before
the kernel shuts down.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
BUDGET_SECONDS = 90.0
BUDGET_BYTES = 2 * 1024**3


@dataclass(frozen=True)
class ChapterRun:
    name: str
    seconds: float
    peak_bytes: int
    cpu_seconds: float | None = None  # the kernel's, over the same cells

    @property
    def budget_seconds(self) -> float:
        """The time judged against the budget: CPU time where known, else wall time."""
        return self.seconds if self.cpu_seconds is None else self.cpu_seconds

    def markdown_row(self) -> str:
        ok = self.budget_seconds <= BUDGET_SECONDS and self.peak_bytes <= BUDGET_BYTES
        cpu = "" if self.cpu_seconds is None else f"{self.cpu_seconds:.1f}"
        return (
            f"| {self.name} | {self.seconds:.1f} | {cpu} | {self.peak_bytes / 1024**3:.2f} | "
            f"{'within' if ok else '**over**'} |"
        )


MARKDOWN_HEADER = (
    "| chapter | execution, wall (s) | execution, CPU (s) | peak memory (GB) "
    "| budget (90 s, 2 GB) |\n"
    "| --- | ---: | ---: | ---: | --- |"
)


def peak_resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # reported in kB
    raise RuntimeError(f"no VmHWM for process {pid}")


def cpu_seconds(pid: int) -> float:
    """User + system time of a process and of the children it waited for."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    # after the command's closing parenthesis: utime, stime, cutime, cstime are the
    # 12th to 15th fields (14 to 17 in proc(5)'s numbering)
    ticks = sum(int(value) for value in fields[11:15])
    return ticks / os.sysconf("SC_CLK_TCK")


def run_chapter(notebook: Path, timeout: int = 600) -> ChapterRun:
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=timeout,
                            resources={"metadata": {"path": str(ROOT / "book")}})
    with client.setup_kernel(env={**os.environ, "TQDM_DISABLE": "1"}):
        pid = client.km.provisioner.process.pid
        cpu_start = cpu_seconds(pid)
        start = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        seconds = time.perf_counter() - start
        cpu = cpu_seconds(pid) - cpu_start
        peak = peak_resident_bytes(pid)
    return ChapterRun(notebook.stem, seconds, peak, cpu)


def run_all() -> list[ChapterRun]:
    return [run_chapter(path) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))]
