"""Run every chapter as readers on other machines would, and tabulate what fails.

A reader's CPU, thread count or GPU takes training down another floating-point path,
so a claim about a trained model must hold for other runs than the printed one. This
script executes each chapter's notebook (``notebooks/*.ipynb``, the Colab twins) under
configurations that stand in for such readers:

* ``shift 2`` and ``shift 3``: every seed shifted (``SEQBOOK_SEED_SHIFT``, read by
  ``seqbook.utils``), so that initialisations, batches and samples differ;
* ``default kernels, 1 thread``: the printed seeds, with torch's portable CPU kernels
  instead of the vectorised ones (``ATEN_CPU_CAPABILITY=default``) and one thread;
* ``avx2 kernels``: the printed seeds, with the AVX2 kernels a CPU without AVX-512 runs
  (``ATEN_CPU_CAPABILITY=avx2``; on such a CPU this is the path torch takes anyway).

It writes ``benchmarks/robustness.md``: chapter x configuration -> ``pass``, or the
failing cell's error (a hidden assert names its claim, value and bound). Usage::

    python tools/robustness.py [--jobs N] [--only CHAPTER ...] [--out PATH]

``make robustness`` runs it; it is not part of ``make test`` (it executes the book four
times). Exit status 1 when any chapter fails in any configuration.

A claim about a timing must also hold on a busy machine: ``make test`` runs its checks
side by side, two or three kernels to a core. Run such a chapter with ``--jobs`` above the
number of CPUs, e.g. ``--only CHAPTER --configs "shift 0" "shift 1" "shift 4" "shift 5"
--jobs 6 --out /tmp/busy.md`` on 2 CPUs.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CONFIGURATIONS = {
    "shift 2": {"SEQBOOK_SEED_SHIFT": "2"},
    "shift 3": {"SEQBOOK_SEED_SHIFT": "3"},
    "default kernels, 1 thread": {"ATEN_CPU_CAPABILITY": "default", "OMP_NUM_THREADS": "1"},
    "avx2 kernels": {"ATEN_CPU_CAPABILITY": "avx2"},
}
TIMEOUT_S = 600  # one cell; a chapter's budget is 90 s in all


def environment(configuration: str) -> dict[str, str]:
    """The variables of a configuration: one of CONFIGURATIONS, or "shift N"."""
    if configuration in CONFIGURATIONS:
        return CONFIGURATIONS[configuration]
    name, _, shift = configuration.partition(" ")
    if name != "shift" or not shift.isdigit():
        raise SystemExit(f"unknown configuration {configuration!r}: {list(CONFIGURATIONS)} "
                         "or 'shift N'")
    return {"SEQBOOK_SEED_SHIFT": shift}


def execute(notebook: Path) -> dict:
    """Execute one notebook in a fresh kernel (in this process's environment).

    Every cell runs, even after one fails, so that one run names every failing claim.
    """
    import nbclient
    import nbformat

    nb = nbformat.read(notebook, as_version=4)
    client = nbclient.NotebookClient(
        nb, timeout=TIMEOUT_S, kernel_name="python3", allow_errors=True,
        resources={"metadata": {"path": str(ROOT)}},
    )
    start = time.perf_counter()
    client.execute()
    errors = []
    for number, cell in enumerate(nb.cells):
        for output in cell.get("outputs", []):
            if output.get("output_type") == "error":
                # IPython marks the failing line with an arrow: name it (an assert's
                # own message says the rest)
                trace = _plain("\n".join(output.get("traceback", [])))
                arrows = [x for x in trace.splitlines() if x.lstrip().startswith("--->")]
                where = f" at `{arrows[-1].split('>', 1)[1].strip()[:120]}`" if arrows else ""
                errors.append(f"cell {number}: {output['ename']}: {output['evalue']}{where}")
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {
        "error": "; ".join(errors) if errors else None,
        "wall_s": time.perf_counter() - start,
        "cpu_s": usage.ru_utime + usage.ru_stime,
    }


def _plain(text: str) -> str:
    """Text without the terminal's colour codes."""
    import re

    return re.sub(r"\x1b\[[0-9;]*m", "", text)


def run_one(chapter: str, configuration: str) -> dict:
    env = {**os.environ, "TQDM_DISABLE": "1", **environment(configuration)}
    notebook = ROOT / "notebooks" / f"{chapter}.ipynb"
    done = subprocess.run(
        [sys.executable, __file__, "--execute", str(notebook)],
        env=env, capture_output=True, text=True,
    )
    if done.returncode != 0:
        return {"error": f"runner failed: {done.stderr.strip()[-500:]}", "wall_s": 0, "cpu_s": 0}
    return json.loads(done.stdout.strip().splitlines()[-1])


def table(results: dict[tuple[str, str], dict], chapters: list[str],
          configurations: list[str]) -> str:
    lines = [
        "# Robustness: every chapter under other seeds and another CPU kernel path",
        "",
        "Written by `python tools/robustness.py` (`make robustness`). Each cell: `pass`, or each",
        "failing cell's error and line. In brackets: the chapter's CPU seconds in that run.",
        f"Machine: {platform.machine()}, {platform.processor() or 'unknown processor'}, "
        f"Python {platform.python_version()}, torch {_torch_version()}, "
        f"{os.cpu_count()} CPUs.",
        "",
        "| chapter | " + " | ".join(configurations) + " |",
        "| --- |" + " --- |" * len(configurations),
    ]
    for chapter in chapters:
        cells = []
        for configuration in configurations:
            result = results[chapter, configuration]
            verdict = "pass" if result["error"] is None else result["error"].replace("|", "\\|")
            cells.append(f"{verdict} ({result['cpu_s']:.0f} s)")
        lines.append(f"| {chapter} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _merge(old: str, new: str) -> str:
    """The old table with the rows of the new one's chapters replaced (or added)."""
    def rows(text: str) -> dict[str, str]:
        return {line.split("|")[1].strip(): line for line in text.splitlines()
                if line.startswith("| ") and not line.startswith(("| chapter", "| ---"))}
    head = [line for line in new.splitlines() if not line.startswith("| ")]
    header = list(dict.fromkeys(line for line in new.splitlines()
                                if line.startswith(("| chapter", "| ---"))))
    merged = {**rows(old), **rows(new)}
    return "\n".join(head + header + [merged[c] for c in sorted(merged)]) + "\n"


def _torch_version() -> str:
    import torch

    gpu = torch.cuda.get_device_name() if torch.cuda.is_available() else "no GPU"
    return f"{torch.__version__} ({gpu})"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--only", nargs="*", help="chapter names (default: every notebook)")
    parser.add_argument("--configs", nargs="*", default=list(CONFIGURATIONS),
                        help="configurations (default: all of them); 'shift N' is also accepted")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "robustness.md")
    parser.add_argument("--execute", type=Path, help=argparse.SUPPRESS)  # the worker's mode
    args = parser.parse_args()
    if args.execute:
        print(json.dumps(execute(args.execute)))
        return 0
    chapters = args.only or sorted(p.stem for p in (ROOT / "notebooks").glob("*.ipynb"))
    for configuration in args.configs:
        environment(configuration)  # refuse a misspelt one before running anything
    jobs = [(c, k) for c in chapters for k in args.configs]
    results = {}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, *job): job for job in jobs}
        for future in concurrent.futures.as_completed(futures):
            results[futures[future]] = result = future.result()
            print(f"{futures[future][0]:>20} | {futures[future][1]:<26} | "
                  f"{'pass' if result['error'] is None else result['error'][:200]}", flush=True)
    text = table(results, chapters, args.configs)
    if args.only and args.out.exists():  # a partial run replaces its chapters' rows only
        text = _merge(args.out.read_text(), text)
    args.out.write_text(text)
    print(f"wrote {args.out}")
    return int(any(r["error"] is not None for r in results.values()))


if __name__ == "__main__":
    sys.exit(main())
