r"""The long-time-lag and forgetting experiments of the LSTM and GRU chapters.

A long-lag run trains one recurrent layer (a :class:`~seqbook.experiments.LayerSpec`)
with a linear readout on the :class:`~seqbook.experiments.FirstSymbolTask` of length
``T`` until it is solved or its budget is spent
(:func:`~seqbook.experiments.train_until_solved`): how far back can the network learn
to look? The forgetting runs (:func:`~seqbook.experiments.value_stream_run`) ask
whether it can keep doing so on a stream that is never reset.

Training outcomes depend on the initialisation, so every cell of a table is run from
several seeds. The full tables take longer than a chapter may run; this module's
command line computes them and writes the small CSV files of
``seqbook/experiments/results/`` that the chapters load (each chapter also reruns a few
cells live and checks that they agree with the table)::

    python -m seqbook.experiments --threads 1

``--help`` lists the options; ``--smoke`` runs a tiny grid (a test that it works).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from seqbook._checks import check_int, check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.classifier import LastOutputClassifier
from seqbook.experiments.first_symbol import FirstSymbolTask
from seqbook.experiments.layers import LayerSpec, recurrent_layer
from seqbook.experiments.results import RESULTS_DIR, load_table, save_table
from seqbook.experiments.until_solved import SolveResult, train_until_solved
from seqbook.experiments.value_stream import ValueStreamRecord, value_stream_grid
from seqbook.provenance import record
from seqbook.utils import seed_everything

__all__ = [
    "RunRecord", "long_lag_run", "run_grid", "FIRST_SYMBOL_SPECS", "FIRST_SYMBOL_TS",
    "LONG_BUDGET_SPECS", "LONG_BUDGET", "CHRONO_SPECS", "load_chrono_table",
    "STREAM_SPECS", "TABLES", "load_first_symbol_table", "load_value_stream_table", "main",
]


def long_lag_run(
    spec: LayerSpec,
    T: int,
    seed: int,
    hidden_size: int = 32,
    max_steps: int = 150,
    lr: float = 0.01,
) -> SolveResult:
    r"""Train ``spec``'s layer and a readout on the first-symbol task of length ``T``.

    Seeds everything with ``seed``, builds the layer
    (:func:`~seqbook.experiments.recurrent_layer`, ``hidden_size`` units) and a
    :class:`~seqbook.experiments.LastOutputClassifier`, and trains them with
    :func:`~seqbook.experiments.train_until_solved`: Adam at learning rate ``lr``,
    batches of 64 fresh sequences, gradient norm clipped at 1, until 99% accuracy on
    500 validation sequences or ``max_steps`` steps; the accuracy is measured on 2,000
    test sequences. It runs on one CPU thread (restored afterwards), as the committed
    tables were computed.

    .. math::
        \text{solved} \iff \mathrm{acc}_{\text{valid}} \ge 0.99
        \text{ within } \texttt{max\_steps} \text{ steps}.

    Args:
        spec: the recurrent layer.
        T: the length of the task's sequences (>= 1).
        seed: seeds the initialisation and the training batches (>= 0).
        hidden_size: units or blocks (>= 1).
        max_steps: the training budget (>= 25).
        lr: Adam's learning rate.

    Returns:
        A :class:`~seqbook.experiments.SolveResult`.

    Example:
        >>> result = long_lag_run(LayerSpec("rnn"), T=3, seed=0, hidden_size=4, max_steps=25)
        >>> result.steps, 0.0 <= result.accuracy <= 1.0
        (25, True)
    """
    check_positive_int("T", T)
    check_int("seed", seed, min_value=0)
    task = FirstSymbolTask(T)
    with one_thread():
        seed_everything(seed)
        layer = recurrent_layer(spec, task.input_size, hidden_size)
        model = LastOutputClassifier(layer, hidden_size, task.num_classes)
        return train_until_solved(model, task, seed, max_steps=max_steps, lr=lr)


@dataclass(frozen=True)
class RunRecord:
    """One row of the first-symbol table: a layer, a length, a seed, and the outcome."""

    label: str  # LayerSpec.label
    kind: str
    forget_gate: bool
    input_gate_bias: float
    forget_gate_bias: float
    update_gate_bias: float
    task: str
    T: int
    seed: int
    max_steps: int
    accuracy: float  # test accuracy after training
    steps: int  # training steps taken
    solved: bool  # validation accuracy reached 99%
    seconds: float  # CPU time of this process for the run
    chrono_t_max: float = 0.0  # LayerSpec.chrono_t_max (0: no chrono initialisation)

    @property
    def spec(self) -> LayerSpec:
        """The :class:`~seqbook.experiments.LayerSpec` of this row."""
        return LayerSpec(self.kind, self.forget_gate, self.input_gate_bias,
                         self.forget_gate_bias, self.update_gate_bias, self.chrono_t_max)


def run_grid(
    specs: Iterable[LayerSpec],
    Ts: Iterable[int],
    seeds: Iterable[int],
    max_steps: int = 150,
    log=None,
) -> list[RunRecord]:
    """:func:`long_lag_run` for every spec at every ``T`` from every seed.

    Args:
        specs, Ts, seeds: the grid.
        max_steps: the training budget of every run.
        log: a file to print one line per run to (e.g. ``sys.stderr``), or None.

    Returns:
        One :class:`RunRecord` per run, in grid order.

    Example:
        >>> rows = run_grid([LayerSpec("rnn")], [3], [0, 1], max_steps=25)
        >>> [(row.label, row.T, row.seed, row.steps) for row in rows]
        [('RNN', 3, 0, 25), ('RNN', 3, 1, 25)]
    """
    records = []
    Ts, seeds = list(Ts), list(seeds)
    for spec in specs:
        for T in Ts:
            for seed in seeds:
                start = time.process_time()
                result = long_lag_run(spec, T, seed, max_steps=max_steps)
                seconds = time.process_time() - start
                records.append(RunRecord(
                    spec.label, spec.kind, spec.forget_gate, spec.input_gate_bias,
                    spec.forget_gate_bias, spec.update_gate_bias, "first_symbol", T, seed,
                    max_steps, result.accuracy, result.steps, result.solved, round(seconds, 2),
                    spec.chrono_t_max,
                ))
                if log is not None:
                    print(f"{spec.label:28s} T={T:4d} seed={seed} {result.describe():>12s} "
                          f"{seconds:6.1f} s", file=log, flush=True)
    return records


# ---------------------------------------------------------------------------------------
# The chapters' tables
# ---------------------------------------------------------------------------------------

#: The first-symbol table of the LSTM chapter (which the GRU chapter reads too).
FIRST_SYMBOL_SPECS = (
    LayerSpec("rnn"),
    LayerSpec("gru"),
    LayerSpec("gru", update_gate_bias=3.0),
    LayerSpec("lstm"),
    LayerSpec("lstm", forget_gate_bias=1.0),
    LayerSpec("lstm", forget_gate_bias=3.0),
    LayerSpec("lstm", forget_gate_bias=3.0, input_gate_bias=-2.0),
    LayerSpec("lstm", forget_gate=False),
    LayerSpec("lstm", forget_gate=False, input_gate_bias=-2.0),
    LayerSpec("lstm", forget_gate=False, input_gate_bias=-4.0),
)
FIRST_SYMBOL_TS = (10, 30, 100)
#: Rows rerun at T = 100 with four times the budget (600 steps): is it the budget?
LONG_BUDGET_SPECS = (
    LayerSpec("gru"),
    LayerSpec("lstm"),
    LayerSpec("lstm", forget_gate_bias=1.0),
    LayerSpec("lstm", forget_gate_bias=3.0),
)
LONG_BUDGET = 600
#: The chrono table: Tallec and Ollivier's initialisation with T_max = 100, the longest
#: lag of the first-symbol table, at every T and with the long budget at T = 100.
CHRONO_SPECS = (LayerSpec("lstm", chrono_t_max=100.0),)

#: The forgetting table of the LSTM chapter (value streams).
STREAM_SPECS = (
    LayerSpec("lstm", forget_gate=False, input_gate_bias=-2.0),
    LayerSpec("lstm"),
    LayerSpec("lstm", forget_gate_bias=1.0),
    LayerSpec("lstm", forget_gate_bias=3.0),
)

#: The committed tables: name -> (file, record type).
TABLES = {
    "first_symbol": (RESULTS_DIR / "first_symbol.csv", RunRecord),
    "chrono": (RESULTS_DIR / "chrono.csv", RunRecord),
    "value_stream": (RESULTS_DIR / "value_stream.csv", ValueStreamRecord),
}


def load_first_symbol_table() -> list[RunRecord]:
    """The committed first-symbol table (``results/first_symbol.csv``).

    Example:
        >>> rows = load_first_symbol_table()
        >>> sorted({row.T for row in rows})
        [10, 30, 100]
    """
    path, record_type = TABLES["first_symbol"]
    return load_table(path, record_type)


def load_chrono_table() -> list[RunRecord]:
    """The committed chrono-initialisation table (``results/chrono.csv``): the rows of
    ``CHRONO_SPECS`` on the first-symbol task, as in the first-symbol table.

    Example:
        >>> rows = load_chrono_table()
        >>> sorted({(row.T, row.max_steps) for row in rows})
        [(10, 150), (30, 150), (100, 150), (100, 600)]
    """
    path, record_type = TABLES["chrono"]
    return load_table(path, record_type)


def load_value_stream_table() -> list[ValueStreamRecord]:
    """The committed forgetting table (``results/value_stream.csv``).

    Example:
        >>> rows = load_value_stream_table()
        >>> sorted({row.label for row in rows})[0]
        'LSTM'
    """
    path, record_type = TABLES["value_stream"]
    return load_table(path, record_type)


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The command line's options (see ``python -m seqbook.experiments --help``)."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.experiments",
        description="Compute the long-time-lag and forgetting tables of the LSTM and GRU chapters.",
    )
    parser.add_argument("--table", choices=(*TABLES, "all"), default="all")
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0, 1, ... per cell")
    parser.add_argument("--threads", type=int, default=1, help="torch threads")
    parser.add_argument("--out", type=Path, default=None,
                        help="folder for the CSV files (default: the package's results/)")
    parser.add_argument("--smoke", action="store_true", help="a tiny grid, a test that it runs")
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the grids and write their CSV files; returns the exit status."""
    args = parse_args(argv)
    check_positive_int("--seeds", args.seeds)
    torch.set_num_threads(check_positive_int("--threads", args.threads))
    torch.set_flush_denormal(True)  # vanished gradients are slow as denormal numbers
    seeds = range(1 if args.smoke else args.seeds)
    for name in (TABLES if args.table == "all" else (args.table,)):
        path, _ = TABLES[name]
        if args.out is not None:
            path = args.out / path.name
        if name in ("first_symbol", "chrono"):
            grid = FIRST_SYMBOL_SPECS if name == "first_symbol" else CHRONO_SPECS
            long_specs = LONG_BUDGET_SPECS if name == "first_symbol" else CHRONO_SPECS
            specs, Ts = (grid[-1:], (5,)) if args.smoke else (grid, FIRST_SYMBOL_TS)
            runs = run_grid(
                specs, Ts, seeds, max_steps=25 if args.smoke else 150, log=sys.stderr
            )
            if not args.smoke:
                runs += run_grid(
                    long_specs, (100,), seeds, max_steps=LONG_BUDGET, log=sys.stderr
                )
            records: list[RunRecord] | list[ValueStreamRecord] = runs
        else:
            options = (
                dict(steps=2, train_length=30, long_length=60, eval_size=4) if args.smoke else {}
            )
            records = value_stream_grid(STREAM_SPECS[:1] if args.smoke else STREAM_SPECS,
                                        seeds, log=sys.stderr, **options)
        path.parent.mkdir(parents=True, exist_ok=True)
        save_table(records, path)
        record(path, "seqbook.experiments", argv, threads=args.threads)
        print(f"wrote {len(records)} rows to {path}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
