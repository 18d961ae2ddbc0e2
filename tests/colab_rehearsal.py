"""Run chapters' notebooks the way Colab does, in a bare environment.

Colab starts with torch, numpy, matplotlib, tqdm and ipykernel installed and nothing
of ours; the notebook's first cell must install seqbook (with loose requirements, so
that Colab's torch stays) and the chapter must then run to its end. `make colab-check`
creates such an environment (_build/colab-venv) and runs this script with its interpreter:

    _build/colab-venv/bin/python tests/colab_rehearsal.py [chapter ...]
    _build/colab-venv/bin/python tests/colab_rehearsal.py --first   # what make test runs

For each notebook it removes seqbook from the environment, executes the notebook in an
empty working directory (as Colab's /content, so the checkout's `seqbook/` folder
cannot be imported by accident) with SEQBOOK_PIP_SPEC pointing the install cell at
this checkout, and checks that torch was neither upgraded nor replaced. Times go to
_build/colab-report.json.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"
REPORT = ROOT / "_build" / "colab-report.json"
KERNEL = "seqbook-colab-rehearsal"
# how a reader's note on a claim this run did not confirm begins (seqbook/claims.py)
NOTE = "This run does not confirm a claim of the page"


def toc_chapters() -> list[str]:
    """The book's pages in _toc.yml's order (read without yaml, which Colab's set lacks)."""
    toc = (ROOT / "_toc.yml").read_text(encoding="utf-8")
    return re.findall(r"^\s*-?\s*(?:file|root):\s*book/([\w-]+)", toc, re.M)


def installed_version(package: str) -> str | None:
    """The version pip sees now (a fresh process: no stale import caches)."""
    result = subprocess.run(
        [sys.executable, "-c",
         f"import importlib.metadata as m; print(m.version({package!r}))"],
        capture_output=True, text=True,
    )
    return result.stdout.strip() if result.returncode == 0 else None


def ensure_kernel() -> None:
    """A kernelspec of this interpreter, so the notebooks run here and nowhere else."""
    subprocess.run(
        [sys.executable, "-m", "ipykernel", "install", "--sys-prefix", "--name", KERNEL],
        check=True, capture_output=True,
    )


def rehearse(notebook_path: Path, timeout: int) -> tuple[float, int]:
    """Seconds the notebook ran, and how many reader's notes on claims it showed."""
    subprocess.run([sys.executable, "-m", "pip", "uninstall", "-y", "-q", "seqbook"],
                   check=True, capture_output=True)
    notebook = nbformat.read(notebook_path, as_version=4)
    with tempfile.TemporaryDirectory(prefix="colab-content-") as content:
        client = NotebookClient(
            notebook, kernel_name=KERNEL, timeout=timeout,
            resources={"metadata": {"path": content}},
        )
        start = time.perf_counter()
        client.execute()
        seconds = time.perf_counter() - start
    notes = sum(NOTE in "".join(output.get("data", {}).get("text/markdown", ""))
                for cell in notebook.cells for output in cell.get("outputs", []))
    # seqbook was uninstalled above, so only the notebook's install cell can have put
    # it back
    if installed_version("seqbook") is None:
        raise AssertionError(f"{notebook_path.name}: the install cell did not install seqbook")
    return seconds, notes


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("chapters", nargs="*", help="chapter names (default: all notebooks)")
    parser.add_argument("--first", action="store_true",
                        help="only the book's first chapter (in _toc.yml) that has a notebook")
    parser.add_argument("--timeout", type=int, default=600, help="seconds per cell")
    args = parser.parse_args()
    names = args.chapters or sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))
    if args.first:
        names = [name for name in toc_chapters() if (NOTEBOOKS / f"{name}.ipynb").exists()][:1]
        if not names:
            parser.error(f"no chapter of {ROOT / '_toc.yml'} has a notebook in {NOTEBOOKS}")
    missing = [n for n in names if not (NOTEBOOKS / f"{n}.ipynb").exists()]
    if missing:
        parser.error(f"no notebook for {missing} in {NOTEBOOKS}")

    os.environ.pop("PYTHONPATH", None)
    ensure_kernel()
    # The install cell installs this checkout: a copy of what the package build reads,
    # because pip builds a local directory in place and would leave build/ behind.
    source = Path(tempfile.mkdtemp(prefix="seqbook-source-"))
    for item in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / item, source / item)
    shutil.copytree(ROOT / "seqbook", source / "seqbook",
                    ignore=shutil.ignore_patterns("__pycache__"))
    os.environ["SEQBOOK_PIP_SPEC"] = str(source)
    torch_before = installed_version("torch")
    report = {"torch": torch_before, "seconds": {}, "claim notes": {}}
    failures = []
    for name in names:
        print(f"colab rehearsal: {name} ...", flush=True)
        try:
            seconds, notes = rehearse(NOTEBOOKS / f"{name}.ipynb", args.timeout)
        except Exception as error:  # report every chapter, then fail
            failures.append(f"{name}: {type(error).__name__}: {str(error)[-2000:]}")
            print(f"  FAILED: {failures[-1]}", flush=True)
            continue
        report["seconds"][name] = round(seconds, 1)
        report["claim notes"][name] = notes
        torch_after = installed_version("torch")
        if torch_after != torch_before:
            failures.append(f"{name}: torch changed from {torch_before} to {torch_after}")
        print(f"  ran to the end in {seconds:.1f} s, {notes} claim notes shown; torch still "
              f"{torch_after}", flush=True)
    shutil.rmtree(source, ignore_errors=True)
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(report, indent=2), encoding="utf-8")
    if failures:
        print("\n".join(["colab rehearsal failed:", *failures]), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
