"""python -m benchmarks: print the table and write benchmarks/results.md."""

from __future__ import annotations

import platform
from pathlib import Path

import torch

from benchmarks.harness import MARKDOWN_HEADER
from benchmarks.rows import ROWS


def main() -> None:
    lines = [MARKDOWN_HEADER]
    for row in ROWS:
        result = row()
        lines.append(result.markdown_row())
        print(lines[-1], flush=True)
    machine = f"{platform.processor() or platform.machine()}, {torch.get_num_threads()} torch threads, torch {torch.__version__}"
    text = "# Benchmark results\n\nMeasured with `python -m benchmarks` on: " + machine + "\n\n" + "\n".join(lines) + "\n"
    (Path(__file__).parent / "results.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
