"""The claims ledger: every chapter run as many readers would run it, every claim tabulated.

A chapter checks each result it states with ``seqbook.notebook.claim``. A reader's
machine (another CPU's kernels, another thread count, a GPU) or another seed takes a
trained model down another path, so a claim about a random quantity is only as good as
its distribution over many runs. This script executes every chapter
(``book/<chapter>.md``, as a notebook) in the reader's mode, with every claim logging
its measurement (``SEQBOOK_CLAIMS_LOG``), under these configurations:

* ``printed``: seed shift 0, the run the book prints;
* ``shift N`` for twelve or more shifts that were never used to set a bound
  (``SEQBOOK_SEED_SHIFT``: other initialisations, batches, samples);
* ``default kernels, 1 thread``: the printed seeds on torch's portable CPU kernels
  (``ATEN_CPU_CAPABILITY=default``), one thread.

For every claim it writes the chapter, the statement, the bound, the printed value, the
minimum, median and maximum over the runs, how many runs it held in, and its margin: the
smallest distance between a run's value and the bound, which must exceed the margin
the claim deserves (three standard deviations of its values, or a quarter of their
range where they are not roughly normal: Shapiro-Wilk p < 0.05). Outputs:
``seqbook/claims.json`` (read by a reader's note) and ``book/claims.md`` (the book's
page "How sure is each claim")::

    python tools/claims_ledger.py [--shifts 101-112] [--only CHAPTER ...] [--jobs N]
    python tools/claims_ledger.py --page   # book/claims.md again from the JSON
    python tools/claims_ledger.py --adopt trial.json ...   # take a trial's chapters

``--only`` replaces those chapters' rows and keeps the others. A trial (``--only ...
--ledger trial.json``) run after a chapter's last edit, on shifts that set no bound, can
be adopted as it is (``--adopt``): the ledger records each chapter's configurations.
Exit status 1 when a claim fails in a run, falls short of its margin, or a chapter stops
on an error. A timing claim
must also hold on a busy machine: run its chapter with ``--jobs`` above the CPU count.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import html
import json
import os
import platform
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import quote as url_quote

ROOT = Path(__file__).resolve().parent.parent
LEDGER = ROOT / "seqbook" / "claims.json"
PAGE = ROOT / "book" / "claims.md"
PRINTED, KERNELS = "printed", "default kernels, 1 thread"
TIMEOUT_S = 600  # one cell; a chapter's budget is 90 s in all
MARGIN_SD, MARGIN_RANGE = 3.0, 0.25


def environment(configuration: str) -> dict[str, str]:
    if configuration == PRINTED:
        return {"SEQBOOK_SEED_SHIFT": "0"}
    if configuration == KERNELS:
        return {"SEQBOOK_SEED_SHIFT": "0", "ATEN_CPU_CAPABILITY": "default",
                "OMP_NUM_THREADS": "1"}
    name, _, shift = configuration.partition(" ")
    if name != "shift" or not shift.isdigit():
        raise SystemExit(f"unknown configuration {configuration!r}")
    return {"SEQBOOK_SEED_SHIFT": shift}


def execute(notebook: Path) -> dict:
    """Execute one notebook in a fresh kernel; every cell runs, even after an error."""
    import nbclient
    import nbformat

    if notebook.suffix == ".md":  # the chapter itself, so that an edit counts at once
        import jupytext

        nb = jupytext.read(notebook, fmt="md:myst")
    else:
        nb = nbformat.read(notebook, as_version=4)
    client = nbclient.NotebookClient(nb, timeout=TIMEOUT_S, kernel_name="python3",
                                     allow_errors=True,
                                     resources={"metadata": {"path": str(ROOT)}})
    start = time.perf_counter()
    client.execute()
    errors = [f"cell {number}: {output['ename']}: {output['evalue']}"[:300]
              for number, cell in enumerate(nb.cells) for output in cell.get("outputs", [])
              if output.get("output_type") == "error"]
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return {"errors": errors, "wall_s": time.perf_counter() - start,
            "cpu_s": usage.ru_utime + usage.ru_stime}


def run_one(chapter: str, configuration: str) -> dict:
    """One chapter under one configuration, in a subprocess: its claims and errors."""
    with tempfile.NamedTemporaryFile(suffix=".jsonl") as log:
        env = {**os.environ, "TQDM_DISABLE": "1", "SEQBOOK_CLAIMS": "reader",
               "SEQBOOK_CLAIMS_LOG": log.name, **environment(configuration)}
        done = subprocess.run(
            [sys.executable, __file__, "--execute", str(ROOT / "book" / f"{chapter}.md")],
            env=env, capture_output=True, text=True)
        if done.returncode != 0:
            return {"errors": [f"runner failed: {done.stderr.strip()[-300:]}"], "claims": [],
                    "cpu_s": 0}
        result = json.loads(done.stdout.strip().splitlines()[-1])
        result["claims"] = [json.loads(line) for line in Path(log.name).read_text().splitlines()]
    return result


def summarise(chapter: str, runs: dict[str, dict]) -> list[dict]:
    """One row per claim of a chapter, from its runs (configuration -> run)."""
    by_statement: dict[str, dict[str, dict]] = {}
    for configuration, run in runs.items():
        for record in run["claims"]:  # a claim checked in a loop: its worst check
            seen = by_statement.setdefault(record["statement"], {})
            if configuration not in seen or record["slack"] < seen[configuration]["slack"]:
                seen[configuration] = record
    rows = []
    for statement, records in by_statement.items():
        values = [r["value"] for r in records.values()]
        slacks = [r["slack"] for r in records.values()]
        required, rule = required_margin(values)
        first = records.get(PRINTED) or next(iter(records.values()))
        rows.append({
            "chapter": chapter, "statement": statement, "quote": first["quote"],
            "identity": first["identity"], "bound": first["bound"],
            "printed": records[PRINTED]["value"] if PRINTED in records else None,
            "min": min(values), "median": statistics.median(values), "max": max(values),
            "runs": len(records), "held": sum(r["held"] for r in records.values()),
            "margin": min(slacks), "required": required, "rule": rule,
            "values": {c: float(f"{r['value']:.6g}") for c, r in records.items()},
        })
    return rows


def required_margin(values: list[float]) -> tuple[float, str]:
    """The distance a claim's bound must keep from its worst run, and the rule used.

    Three standard deviations for a roughly normal quantity; a quarter of the observed
    range otherwise (Shapiro-Wilk p < 0.05, e.g. rounding errors spread over decades).
    """
    finite = [v for v in values if v == v and abs(v) != float("inf")]
    if len(finite) < 3 or max(finite) == min(finite):
        return 0.0, "constant"
    from scipy.stats import shapiro

    if shapiro(finite).pvalue < 0.05:
        return MARGIN_RANGE * (max(finite) - min(finite)), "range / 4"
    return MARGIN_SD * statistics.stdev(finite), "3 sd"


def problems(rows: list[dict], errors: dict[str, list[str]]) -> list[str]:
    found = [f"{chapter}: {error}" for chapter, errs in errors.items() for error in errs]
    for row in rows:
        where = f"{row['chapter']}: claim '{row['statement']}'"
        if row["held"] < row["runs"]:
            found.append(f"{where} failed in {row['runs'] - row['held']} of {row['runs']} runs")
        elif row["margin"] < row["required"]:
            found.append(f"{where}: margin {row['margin']:.3g} < {row['required']:.3g} "
                         f"({row['rule']})")
    seen: dict[str, str] = {}
    for row in rows:
        other = seen.setdefault(row["statement"], row["chapter"])
        if other != row["chapter"]:
            found.append(f"claim '{row['statement']}' is in {other} and {row['chapter']}: "
                         "statements are unique in the book")
    return found


def machine() -> dict:
    import torch

    commit = subprocess.run(["git", "describe", "--always", "--dirty"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    return {"commit": commit, "torch": torch.__version__,
            "kernels": torch.backends.cpu.get_cpu_capability(),
            "threads": os.environ.get("OMP_NUM_THREADS", str(torch.get_num_threads())),
            "machine": f"{platform.machine()}, {os.cpu_count()} CPUs, "
                       f"Python {platform.python_version()}",
            "date": time.strftime("%Y-%m-%d")}


# --------------------------------------------------------------------------------------
# The page
# --------------------------------------------------------------------------------------

def _text(text: str) -> str:
    """Text that neither Markdown nor HTML reads as markup."""
    text = html.escape(text, quote=True)
    return re.sub(r"[*_`|$\\\[\]<>]", lambda m: f"&#{ord(m.group())};", text)


def _number(value: float | None) -> str:
    return "" if value is None else f"{value:.3g}"


def _configurations(names: list[str]) -> str:
    shifts = [int(c.split()[1]) for c in names if c.startswith("shift ")]
    ranges = ", ".join(f"{a}-{b}" if a != b else f"{a}" for a, b in _runs(shifts))
    return f"the printed run, shifts {ranges} and the printed seeds on {KERNELS}"


def _runs(numbers: list[int]) -> list[tuple[int, int]]:
    runs: list[list[int]] = []
    for n in sorted(numbers):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return [(a, b) for a, b in runs]


def page(ledger: dict) -> str:
    """book/claims.md: the ledger as a page, one table a chapter."""
    rows, chapters = ledger["claims"], ledger["chapters"]
    identities = sum(r["identity"] for r in rows)
    tightest = sorted((r for r in rows if r["required"] > 0),
                      key=lambda r: r["margin"] / r["required"])[:5]
    runs = {len(i["configurations"]) for i in chapters.values()}
    lines = [
        "(claims-ledger)=", "# How sure is each claim", "",
        "Every result this book states is checked by its chapter, in a hidden cell, by a",
        "*claim*: the sentence, the value the run measured, and the bound the value must",
        "keep. The numbers on the pages come from one run, the printed one. Your run draws",
        "other numbers: another seed, or the same seed on another CPU or GPU, which adds",
        "in another order and so trains another model. This page says how each claim fares",
        "over many runs: which statements are *identities* (true up to rounding in any",
        "run), which are *statistics* of a random run, and how close each came to its bound.",
        "",
        "Each chapter ran as printed, at twelve or more seed shifts, and with the printed",
        "seeds on torch's portable CPU kernels and one thread; its section below says which",
        "shifts, and on which commit and machine. A shift moves every seed the chapter",
        "draws, and no shift used here set a bound. A claim must hold in every",
        "run, and its bound must lie beyond the worst run by a margin: three standard",
        "deviations of its values, or a quarter of their range where they are not roughly",
        "normal (Shapiro-Wilk test, p < 0.05). In a notebook you run yourself, a claim your",
        "run does not confirm shows a note with its row of this table, and the notebook",
        "goes on; in the book's own build and tests (`SEQBOOK_CLAIMS=strict`, read by",
        "{py:func}`~seqbook.claims.claims_mode`) it raises a",
        "{py:class}`~seqbook.claims.ClaimError` and stops the build. Each claim is a call",
        "of {py:func}`~seqbook.notebook.claim` in a hidden cell of its chapter.", "",
        f"**{len(rows)} claims**: {identities} identities and {len(rows) - identities} "
        f"statistics, over {' or '.join(str(n) for n in sorted(runs))} runs each; "
        f"{sum(r['held'] == r['runs'] for r in rows)} held in every run, "
        f"{sum(r['held'] == r['runs'] and r['margin'] >= r['required'] for r in rows)} "
        "with their margin. Made by `python tools/claims_ledger.py` (`make claims`).", "",
        "The five claims nearest their bound, for the margin they need:", "",
        "| chapter | claim | worst run's distance to the bound | margin needed |",
        "| --- | --- | --- | --- |",
    ]
    lines += [f"| {{doc}}`{r['chapter']}` | {_link(r)} | {_number(r['margin'])} | "
              f"{_number(r['required'])} ({r['rule']}) |" for r in tightest]
    lines += ["", "Each chapter's table is folded under its section; open it to read, for each",
              "claim: the bound; the printed run's value; the minimum,",
              "median and maximum over the runs; the runs the claim held in; and the worst",
              "run's distance to the bound, beside the margin the claim needs. A claim's",
              "link opens the sentence of the page it backs.", ""]
    for chapter in dict.fromkeys(r["chapter"] for r in rows):
        info = chapters[chapter]
        lines += [f"## {{doc}}`{chapter}`", "",
                  f"Runs: {_configurations(info['configurations'])}; at `{info['commit']}`, "
                  f"torch {info['torch']} ({info['kernels']} kernels, {info['threads']} "
                  f"thread{'' if info['threads'] == '1' else 's'}), {info['machine']}"
                  + (f", {info['jobs']} chapters run at once" if "jobs" in info else "")
                  + f", {info['date']}.", ""]
        chapter_rows = [r for r in rows if r["chapter"] == chapter]
        # folded: a reader opens the chapter whose claim a note sent them to
        lines += [f"```{{admonition}} Its {len(chapter_rows)} claims "
                  f"({sum(r['identity'] for r in chapter_rows)} identities)",
                  ":class: dropdown", "",
                  "| claim | kind | bound | printed | min / median / max | held | margin |",
                  "| --- | --- | --- | --- | --- | --- | --- |"]
        for r in chapter_rows:
            spread = " / ".join(_number(r[k]) for k in ("min", "median", "max"))
            lines.append(
                f"| {_link(r)} | {'identity' if r['identity'] else 'statistic'} | "
                f"{_text(r['bound'])} | {_number(r['printed'])} | {spread} | "
                f"{r['held']} of {r['runs']} | {_margin(r)} |")
        lines += ["```", ""]
    return "\n".join(lines)


def _margin(row: dict) -> str:
    if row["bound"].startswith("=="):
        return "exact"
    needed = "none: the same value in every run" if row["rule"] == "constant" else (
        f"needs {_number(row['required'])}, {row['rule']}")
    return f"{_number(row['margin'])} ({needed})"


def _link(row: dict) -> str:
    """The statement, linked to the words of its page that it backs."""
    target = f"{row['chapter']}.html"
    if row["quote"]:
        target += "#:~:text=" + url_quote(row["quote"], safe="")
    return f'<a href="{target}">{_text(row["statement"])}</a>'


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--shifts", default="101-112",
                        help="seed shifts, e.g. 101-112 or 5,7,9 (at least 12 for the ledger)")
    parser.add_argument("--only", nargs="*", help="chapter names (default: every notebook)")
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--page", action="store_true", help="only write book/claims.md")
    parser.add_argument("--ledger", type=Path, default=LEDGER,
                        help="the JSON to update (another path: a trial, and no page)")
    parser.add_argument("--adopt", type=Path, nargs="+",
                        help="trial ledgers whose chapters replace the ledger's")
    parser.add_argument("--execute", type=Path, help=argparse.SUPPRESS)  # the worker
    args = parser.parse_args()
    if args.execute:
        print(json.dumps(execute(args.execute)))
        return 0
    if args.adopt:
        return adopt(args.adopt)
    if args.page:
        PAGE.write_text(page(json.loads(LEDGER.read_text())), encoding="utf-8")
        return 0
    shifts = parse_shifts(args.shifts)
    configurations = [PRINTED, *(f"shift {s}" for s in shifts), KERNELS]
    chapters = args.only or [p.stem for p in chapter_files()]
    results: dict[str, dict[str, dict]] = {c: {} for c in chapters}
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        futures = {pool.submit(run_one, c, k): (c, k) for c in chapters for k in configurations}
        for future in concurrent.futures.as_completed(futures):
            chapter, configuration = futures[future]
            results[chapter][configuration] = run = future.result()
            failed = [r["statement"] for r in run["claims"] if not r["held"]]
            print(f"{chapter:>20} | {configuration:<26} | {run['cpu_s']:5.0f} s | "
                  f"{len(run['claims'])} checks | failed: {failed[:3]} | errors: "
                  f"{run['errors'][:2]}", flush=True)
    made, rows, runs = {**machine(), "jobs": args.jobs}, [], {}
    for chapter in chapters:
        rows += summarise(chapter, results[chapter])
        runs[chapter] = {
            "configurations": configurations, **made,
            "errors": [f"{k}: {e}" for k, run in results[chapter].items() for e in run["errors"]],
            "cpu_s": round(max(run["cpu_s"] for run in results[chapter].values()), 1)}
    old = json.loads(args.ledger.read_text()) if args.ledger.exists() and args.only else {}
    return write(args.ledger, merged(old, rows, runs))


def merged(old: dict, rows: list[dict], runs: dict[str, dict]) -> dict:
    """A ledger whose chapters in ``runs`` are replaced, in the book's order."""
    rows = [r for r in old.get("claims", []) if r["chapter"] not in runs] + rows
    runs = {**{c: i for c, i in old.get("chapters", {}).items() if c not in runs}, **runs}
    order = [p.stem for p in chapter_files()]
    rows.sort(key=lambda r: order.index(r["chapter"]) if r["chapter"] in order else 99)
    return {"chapters": dict(sorted(runs.items(), key=lambda kv: order.index(kv[0]))),
            "claims": rows}


def write(path: Path, ledger: dict) -> int:
    """Write a ledger (and the page, for the book's own), report its problems."""
    path.write_text(json.dumps(ledger, indent=1) + "\n", encoding="utf-8")
    if path == LEDGER:
        PAGE.write_text(page(ledger), encoding="utf-8")
    rows, runs = ledger["claims"], ledger["chapters"]
    found = problems(rows, {c: i["errors"] for c, i in runs.items()})
    print("\n".join(found) or "every claim held in every run, with its margin")
    print(f"wrote {path}" + (f" and {PAGE}" if path == LEDGER else ""))
    return int(bool(found))


def adopt(trials: list[Path]) -> int:
    """The book's ledger with each trial's chapters in place of its own."""
    ledger = json.loads(LEDGER.read_text()) if LEDGER.exists() else {}
    for trial in trials:
        found = json.loads(trial.read_text())
        ledger = merged(ledger, found["claims"], found["chapters"])
    return write(LEDGER, ledger)


def chapter_files() -> list[Path]:
    """The book's executable chapters (MyST Markdown with a kernelspec), by name."""
    return sorted(p for p in (ROOT / "book").glob("*.md")
                  if "kernelspec:" in p.read_text(encoding="utf-8")[:1000])


def parse_shifts(text: str) -> list[int]:
    shifts: list[int] = []
    for part in text.split(","):
        low, _, high = part.partition("-")
        shifts += range(int(low), int(high or low) + 1)
    return shifts


if __name__ == "__main__":
    sys.exit(main())
