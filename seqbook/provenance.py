"""Where a committed result comes from: the command, the code and the machine that made it.

The chapters load results that take longer to compute than a chapter may run (tables of
many seeds, checkpoints, sweeps). Each such file has a sidecar beside it,
``<file>.provenance.json``: a list of the runs that wrote it, each with the command,
the commit of seqbook it ran at (and whether the code had uncommitted changes), the
versions of Python and torch, the CPU kernel path torch chose, the number of threads,
the machine and the date. A script records its run with ``record`` after writing
its result; a run that rewrites part of a table (some models, some seeds) adds an entry
and keeps the earlier ones.

Training does not take the same path on every machine: another CPU kernel path or
thread count rounds differently, and the rounding grows over thousands of steps. A
chapter that reruns one row of a committed table live therefore compares its run with
that row *to rounding* only where :func:`made_here` says this machine is the one that
made the row, and within a stated tolerance elsewhere.
"""

from __future__ import annotations

import datetime
import json
import platform
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

__all__ = ["environment", "made_here", "provenance_path", "read_provenance", "record"]

_PACKAGE = Path(__file__).resolve().parent
# what has to match for a rerun to repeat a committed row to rounding
_SAME_PATH = ("torch", "cpu_capability", "threads", "machine")


def provenance_path(result: str | Path) -> Path:
    """The sidecar of ``result``: ``<result>.provenance.json`` beside it."""
    result = Path(result)
    return result.with_name(result.name + ".provenance.json")


def _git(*args: str) -> str | None:
    """The output of a git command in seqbook's checkout, or None outside one."""
    try:
        done = subprocess.run(["git", *args], cwd=_PACKAGE, capture_output=True, text=True,
                              timeout=30)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def environment(threads: int | None = None) -> dict[str, object]:
    """This process's code and machine, as ``record`` stores them.

    Args:
        threads: the torch thread count of the run (default: ``torch.get_num_threads()``).
    """
    commit = _git("rev-parse", "HEAD")
    changed = _git("status", "--porcelain", "--untracked-files=no", "--", "*.py")
    return {
        "commit": commit or "not a git checkout",
        "uncommitted_changes": bool(changed) if commit else None,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "cpu_capability": torch.backends.cpu.get_cpu_capability(),
        "threads": torch.get_num_threads() if threads is None else threads,
        "machine": platform.machine(),
        "processor": _processor(),
    }


def _processor() -> str:
    """The CPU's model name where the system tells it (Linux), else platform's guess."""
    try:
        for line in Path("/proc/cpuinfo").read_text(encoding="utf-8").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def record(result: str | Path, module: str, argv: Sequence[str] | None = None,
           threads: int | None = None, rows: str = "all") -> Path:
    """Add this run to ``result``'s sidecar and return the sidecar's path.

    Args:
        result: the file the run wrote (it must exist).
        module: the script, as run with ``python -m`` (e.g. ``"seqbook.experiments.recall"``).
        argv: its arguments (default: ``sys.argv[1:]``).
        threads: the torch thread count the run used.
        rows: which part of the result this run wrote, in words (``"mixer mlstm"``).

    Example:
        >>> import tempfile
        >>> table = Path(tempfile.mkdtemp()) / "table.csv"
        >>> _ = table.write_text("seed,accuracy\\n0,1.0\\n")
        >>> path = record(table, "seqbook.experiments.recall", ["--seeds", "0"], threads=1)
        >>> [run["command"] for run in read_provenance(table)]
        ['python -m seqbook.experiments.recall --seeds 0']
    """
    result = Path(result)
    if not result.is_file():
        raise FileNotFoundError(f"result must be the file the run wrote; {result} does not exist")
    argv = list(sys.argv[1:] if argv is None else argv)
    entry = {
        "command": shlex.join(["python", "-m", module, *argv]),
        "rows": rows,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        **environment(threads),
    }
    path = provenance_path(result)
    runs = read_provenance(result) if path.is_file() else []
    path.write_text(json.dumps(runs + [entry], indent=1) + "\n", encoding="utf-8")
    return path


def read_provenance(result: str | Path) -> list[dict]:
    """The runs recorded for ``result``, oldest first."""
    path = provenance_path(result)
    if not path.is_file():
        raise FileNotFoundError(f"result must have a provenance sidecar; {path} does not exist")
    return json.loads(path.read_text(encoding="utf-8"))


def made_here(result: str | Path, threads: int | None = None) -> bool:
    """Whether this machine would repeat every run that wrote ``result``'s current rows
    to rounding (the last run that wrote ``rows="all"`` and the runs after it): the same
    torch version, CPU kernel path, thread count (``threads``, default torch's) and
    processor architecture as each. Where it would not (or a run's machine was not
    recorded), a live rerun of a row may differ by more than rounding."""
    here = environment(threads)
    return all(run.get(key) == here[key] for run in _current_runs(result)
               for key in _SAME_PATH)


def _current_runs(result: str | Path) -> list[dict]:
    """The runs that wrote ``result``'s current rows: the last run that wrote them all
    (``rows="all"``) and the runs after it; the runs before it are history, and so is a
    run whose rows a later run wrote again (the same ``rows``)."""
    runs = read_provenance(result)
    rewrites = [i for i, run in enumerate(runs) if run.get("rows") == "all"]
    current = runs[rewrites[-1]:] if rewrites else runs
    return [run for i, run in enumerate(current)
            if all(later.get("rows") != run.get("rows") for later in current[i + 1:])]
