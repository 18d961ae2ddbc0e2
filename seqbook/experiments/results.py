"""Small result tables as CSV files: written by the experiment scripts, read by chapters.

A table is a list of frozen dataclass records (one row each, e.g.
:class:`~seqbook.experiments.long_lag.RunRecord`); the CSV file has one column per
field. The committed tables live in ``seqbook/experiments/results/`` and ship with the
package, so a chapter can load them in Colab too.
"""

from __future__ import annotations

import argparse
import csv
import dataclasses
import sys
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, TypeVar

import torch

from seqbook.provenance import record
from seqbook.utils import SEED_SHIFT_VARIABLE, seed_shift

__all__ = ["RESULTS_DIR", "save_table", "load_table"]

#: Where the committed result tables live.
RESULTS_DIR = Path(__file__).parent / "results"

R = TypeVar("R")

_CONVERT: dict[str, Callable[[str], Any]] = {
    "bool": lambda s: s == "True", "int": int, "float": float, "str": str}


def save_table(records: Sequence[object], path: str | Path) -> None:
    """Write dataclass ``records`` (all of one type) to a CSV file with a header.

    Floats are written with 6 significant digits (the tables hold accuracies, errors
    and seconds).

    Example:
        >>> import tempfile
        >>> from seqbook.experiments.long_lag import RunRecord
        >>> row = RunRecord("RNN", "rnn", True, 0.0, 0.0, 0.0, "first_symbol", 10, 0, 150,
        ...                 0.5, 150, False, 1.0)
        >>> path = Path(tempfile.mkdtemp()) / "table.csv"
        >>> save_table([row], path)
        >>> load_table(path, RunRecord) == [row]
        True
    """
    records = list(records)
    first = records[0] if records else None
    if not dataclasses.is_dataclass(first) or isinstance(first, type):
        raise TypeError("records must be a non-empty sequence of dataclass instances")
    kind = type(first)
    if any(type(r) is not kind for r in records):
        raise TypeError(f"records must all be {kind.__name__} instances")
    names = [f.name for f in dataclasses.fields(first)]
    with open(Path(path), "w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=names, lineterminator="\n")
        writer.writeheader()
        for record in records:
            row = {name: getattr(record, name) for name in names}  # scalar fields
            writer.writerow({k: f"{v:.6g}" if isinstance(v, float) else v for k, v in row.items()})


def load_table(path: str | Path, record_type: type[R]) -> list[R]:
    """Read a CSV file written by :func:`save_table` back into ``record_type`` records.

    Args:
        path: the CSV file.
        record_type: the dataclass of its rows (fields of type bool, int, float or str).

    Returns:
        The records, in the file's order.
    """
    make: Callable[..., R] = record_type  # builds the rows (typed before the check)
    if not (isinstance(record_type, type) and dataclasses.is_dataclass(record_type)):
        raise TypeError(f"record_type must be a dataclass, got {record_type!r}")
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"path must be a CSV table written by save_table; {path} does "
                                "not exist")
    types = {f.name: f.type if isinstance(f.type, str) else f.type.__name__
             for f in dataclasses.fields(record_type)}
    with open(path, newline="", encoding="utf-8") as handle:
        reader = csv.DictReader(handle)
        if set(reader.fieldnames or ()) != set(types):
            raise ValueError(f"{path} has columns {reader.fieldnames}, but "
                             f"{record_type.__name__} has fields {sorted(types)}")
        return [make(**{k: _CONVERT[types[k]](v) for k, v in row.items()}) for row in reader]


def _table_options(
    argv: Sequence[str] | None, prog: str, description: str, seeds: Sequence[int], out: Path
) -> argparse.Namespace:
    """The options of a script that writes a seed table (``--seeds``, ``--threads``,
    ``--out``, ``--smoke``), parsed; the thread count set; a shifted seed refused (the
    table holds the printed book's seeds)."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}", description=description)
    parser.add_argument("--seeds", type=int, nargs="+", default=list(seeds))
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--smoke", action="store_true", help="a tiny run")
    args = parser.parse_args(argv)
    if seed_shift() != 0:
        parser.error("run without SEQBOOK_SEED_SHIFT (the table's seeds are unshifted)")
    torch.set_num_threads(args.threads)
    return args


def _checkpoint_options(argv: Sequence[str] | None, prog: str, description: str,
                        out: Path, smoke_help: str) -> argparse.Namespace:
    """The options of a script that writes trained weights (``--threads``, ``--out``,
    ``--smoke``), parsed; the thread count set where given; a shifted seed refused (the
    file holds the printed run's models); a smoke run written to the temporary folder
    unless ``--out`` says otherwise."""
    parser = argparse.ArgumentParser(prog=f"python -m {prog}", description=description)
    parser.add_argument("--threads", type=int, default=0, help="torch threads (0: default)")
    parser.add_argument("--out", type=Path, default=out)
    parser.add_argument("--smoke", action="store_true", help=smoke_help)
    args = parser.parse_args(argv)
    if seed_shift():
        parser.error(f"the file holds the printed run's models: unset {SEED_SHIFT_VARIABLE}")
    if args.threads:
        torch.set_num_threads(args.threads)
    if args.smoke and args.out == out:
        args.out = Path(tempfile.gettempdir()) / f"seqbook_{prog.rsplit('.', 1)[-1]}_smoke.pt"
    return args


def _write_table(records: Sequence[object], args: argparse.Namespace, module: str,
                 argv: Sequence[str] | None) -> None:
    """Save a seed table where ``args.out`` says and record the run beside it."""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_table(records, args.out)
    record(args.out, module, argv, threads=args.threads)
    print(f"wrote {len(records)} rows to {args.out}", file=sys.stderr)

