"""python -m benchmarks: print the tables and write benchmarks/results.md.

    python -m benchmarks              # both tables
    python -m benchmarks --rows       # only seqbook against its references
    python -m benchmarks --chapters   # only the chapters' time and memory
    python -m benchmarks --checks     # only what checking the arguments costs per call

Sections that a run does not measure are kept from the previous results.md.
"""

from __future__ import annotations

import argparse
import platform
import time
from pathlib import Path

import torch

from benchmarks import chapters, checks, harness
from benchmarks.rows import ROWS, TARGETS

RESULTS = Path(__file__).parent / "results.md"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", action="store_true", help="only the comparison rows")
    parser.add_argument("--chapters", action="store_true", help="only the chapters")
    parser.add_argument("--checks", action="store_true", help="only the cost of the checks")
    args = parser.parse_args()
    only = args.rows or args.chapters or args.checks
    do_rows, do_chapters, do_checks = (args.rows or not only, args.chapters or not only,
                                       args.checks or not only)
    started = time.perf_counter()
    sections = [
        "# Benchmark results",
        "",
        f"Written by `python -m benchmarks` (`make bench`) on {platform.machine()} with "
        f"{torch.get_num_threads()} torch threads, torch {torch.__version__}, Python "
        f"{platform.python_version()}.",
    ]
    if do_rows:
        lines = [harness.MARKDOWN_HEADER]
        print(lines[0], flush=True)
        misses: dict[str, list[str]] = {}  # why -> rows that miss their target for it
        for row in ROWS:
            result = row()
            target, why = TARGETS.get(row.__name__, (None, ""))
            if target is None:
                verdict = "(none)"
            elif result.ratio <= target:
                verdict = f"<= {target}: met"
            else:
                verdict = f"<= {target}: **missed**"
                misses.setdefault(why or "(no reason recorded)", []).append(
                    f"{result.name} (ratio {result.ratio:.2f})")
            lines.append(result.markdown_row(verdict))
            print(lines[-1], flush=True)
        sections += ["", "## seqbook against its reference implementations", "",
                     "Medians of alternating runs; ratio = seqbook / reference (below 1: "
                     "seqbook is faster).", "", *lines]
        if misses:
            sections += ["", "### Why some targets are missed", ""]
            sections += [f"- {'; '.join(rows)}: {why}" for why, rows in misses.items()]
    if do_chapters:
        lines = [chapters.MARKDOWN_HEADER]
        print(lines[0], flush=True)
        runs = chapters.run_all()
        for run in runs:
            lines.append(run.markdown_row())
            print(lines[-1], flush=True)
        total = sum(run.seconds for run in runs)
        cpu = sum(run.budget_seconds for run in runs)
        lines.append(f"| **whole book** | {total:.1f} | {cpu:.1f} | | "
                     f"{'within' if cpu <= 600 else '**over**'} 10 min |")
        print(lines[-1], flush=True)
        sections += ["", "## Chapters: execution time and peak memory", "", *lines]
    if do_checks:
        lines = [checks.MARKDOWN_HEADER]
        print(lines[0], flush=True)
        for cost in checks.run_all():
            lines.append(cost.markdown_row())
            print(lines[-1], flush=True)
        sections += ["", "## The cost of checking arguments, per public call", "",
                     checks.__doc__.strip().split("\n\n")[1].replace("\n", " "), "", *lines]
    sections = merged_sections(sections)
    sections += ["", f"Total time of this benchmark run: {time.perf_counter() - started:.0f} s."]
    RESULTS.write_text("\n".join(sections) + "\n", encoding="utf-8")


def _split(lines: list[str]) -> tuple[list[str], dict[str, list[str]]]:
    """The lines before the first "## " heading, and each "## " section's lines (the
    heading first, trailing blank lines and the closing total left out), in order."""
    head: list[str] = []
    parts: dict[str, list[str]] = {}
    current = head
    for line in lines:
        if line.startswith("## "):
            current = parts.setdefault(line, [])
        elif line.startswith("Total time of this benchmark run"):
            current = []
            continue
        current.append(line)
    for part in [head, *parts.values()]:
        while part and not part[-1].strip():
            part.pop()
    return head, parts


def merged_sections(written: list[str]) -> list[str]:
    """This run's sections, with the previous results.md's sections that it did not
    write, each where it was (a new section goes last): the file keeps its order."""
    head, new = _split(written)
    old: dict[str, list[str]] = {}
    if RESULTS.exists():
        old = _split(RESULTS.read_text(encoding="utf-8").splitlines())[1]
    merged = list(head)
    for heading in [*old, *(h for h in new if h not in old)]:
        merged += ["", *new.get(heading, old.get(heading, []))]
    return merged


if __name__ == "__main__":
    main()
