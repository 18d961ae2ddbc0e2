"""Each chapter's execution time and peak memory, against the book's budgets.

The budgets are 90 s and 2 GB a chapter.

Every notebook of notebooks/ is executed in a fresh kernel, from the book's folder as
the book build does. Time is the wall-clock time of executing all cells; peak memory
is the kernel process's high-water mark of resident memory (VmHWM in
/proc/<pid>/status), read just before the kernel shuts down.
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

    def markdown_row(self) -> str:
        ok = self.seconds <= BUDGET_SECONDS and self.peak_bytes <= BUDGET_BYTES
        return (
            f"| {self.name} | {self.seconds:.1f} | {self.peak_bytes / 1024**3:.2f} | "
            f"{'within' if ok else '**over**'} |"
        )


MARKDOWN_HEADER = (
    "| chapter | execution (s) | peak memory (GB) | budget (90 s, 2 GB) |\n"
    "| --- | ---: | ---: | --- |"
)


def peak_resident_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) * 1024  # reported in kB
    raise RuntimeError(f"no VmHWM for process {pid}")


def run_chapter(notebook: Path, timeout: int = 600) -> ChapterRun:
    nb = nbformat.read(notebook, as_version=4)
    client = NotebookClient(nb, kernel_name="python3", timeout=timeout,
                            resources={"metadata": {"path": str(ROOT / "book")}})
    with client.setup_kernel(env={**os.environ, "TQDM_DISABLE": "1"}):
        pid = client.km.provisioner.process.pid
        start = time.perf_counter()
        for index, cell in enumerate(nb.cells):
            client.execute_cell(cell, index)
        seconds = time.perf_counter() - start
        peak = peak_resident_bytes(pid)
    return ChapterRun(notebook.stem, seconds, peak)


def run_all() -> list[ChapterRun]:
    return [run_chapter(path) for path in sorted((ROOT / "notebooks").glob("*.ipynb"))]
