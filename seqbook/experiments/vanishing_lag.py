r"""The plain RNN on long time lags, and gradient clipping: the table of the chapter on
vanishing and exploding gradients.

Shape letters: ``B`` batch, ``T`` time, ``H`` hidden units (32).

The chapter trains a plain tanh :class:`~seqbook.recurrent.RNN` with a linear readout
on the :class:`~seqbook.experiments.FirstSymbolTask` with the signal 5, 10, 20 and 40
steps back, and 10 steps back in a sequence of 40 (a control), all with the gradient
norm clipped at 1; and then on the 10-step task from recurrent weights rescaled to
spectral radius 3, without and with clipping. Every run (:func:`train_long_lag`) first
measures how much of the gradient at the last state reaches the first
(:func:`gradient_reach`), then trains for a fixed budget.

Twenty seeds of every row take longer than the chapter may run, so they are computed
offline (:func:`vanishing_lag_grid`) into the table
``seqbook/experiments/results/vanishing_lag.csv`` that the chapter loads
(:func:`load_vanishing_lag_table`); the chapter reruns seed 0 of some rows live, with
the same :func:`train_long_lag`. The table was made with::

    python -m seqbook.experiments.vanishing_lag --threads 1

(about 2 minutes of CPU time on one core). ``--smoke`` runs a tiny version as a test that
the script works.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from seqbook._checks import check_int, check_positive_int, check_real
from seqbook.experiments._common import one_thread
from seqbook.experiments.classifier import LastOutputClassifier, accuracy, classify_loss
from seqbook.experiments.first_symbol import FirstSymbolTask
from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.recurrent import RNN, state_gradient_norms
from seqbook.train import History, fit
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "RESULTS", "ROWS", "SEEDS", "VanishingLagRecord", "gradient_reach", "train_long_lag",
    "vanishing_lag_grid", "load_vanishing_lag_table", "main",
]

#: The committed table.
RESULTS = RESULTS_DIR / "vanishing_lag.csv"
#: The seeds of the table, for every row: enough that a row's spread between seeds (a
#: seed that stops halfway, one that learns anyway) shows in the table, not only in
#: runs outside it.
SEEDS = tuple(range(20))
#: The rows of the table: name -> (task, clip, spectral radius of W_hh or None).
ROWS: dict[str, tuple[FirstSymbolTask, float | None, float | None]] = {
    "T = 5": (FirstSymbolTask(5), 1.0, None),
    "T = 10": (FirstSymbolTask(10), 1.0, None),
    "T = 20": (FirstSymbolTask(20), 1.0, None),
    "T = 40": (FirstSymbolTask(40), 1.0, None),
    # a control: the signal only 10 steps before the end of a 40-step sequence
    "T = 40, signal at step 31": (FirstSymbolTask(40, signal_position=30), 1.0, None),
    # the 10-step task from an exploding initialisation, without and with clipping
    "radius 3, no clipping": (FirstSymbolTask(10), None, 3.0),
    "radius 3, clipped at 1": (FirstSymbolTask(10), 1.0, 3.0),
}


def gradient_reach(model: LastOutputClassifier, task: FirstSymbolTask) -> float:
    r"""How much of the gradient at the last state reaches the first.

    .. math::
        \exp \Big( \frac{1}{B} \sum_{b=1}^{B} \log
        \frac{\lVert \partial L / \partial \mathbf{h}_1 \rVert}
             {\lVert \partial L / \partial \mathbf{h}_T \rVert} \Big)

    (the geometric mean over 256 sequences of the task, drawn with seed 7), for the
    summed cross-entropy of ``model``'s readout after the last step, measured with
    :func:`~seqbook.recurrent.state_gradient_norms` on ``model.rnn``.

    Example:
        >>> model = LastOutputClassifier(RNN(8, 4), 4, 4)
        >>> 0 < gradient_reach(model, FirstSymbolTask(5)) < 1
        True
    """
    x, y = task(256, seeded_generator(7))
    loss = lambda out, state: F.cross_entropy(model.readout(out[:, -1]), y,
                                              reduction="sum")
    g = state_gradient_norms(model.rnn, x, loss)            # (B, T)
    return torch.exp(torch.log(g[:, 0] / g[:, -1]).mean()).item()


def train_long_lag(
    task: FirstSymbolTask,
    clip: float | None = 1.0,
    radius: float | None = None,
    seed: int = 0,
    steps: int = 300,
) -> tuple[float, float, History]:
    """Train a 32-unit tanh RNN with a readout after the last step on ``task``.

    Seeds everything with ``seed``, builds :class:`~seqbook.recurrent.RNN` (PyTorch's
    initialisation for ``nn.RNN``) inside a
    :class:`~seqbook.experiments.LastOutputClassifier`, rescales :math:`W_{hh}` to
    spectral radius ``radius`` (unless None), measures :func:`gradient_reach`, and
    trains with :func:`~seqbook.train.fit`: SGD with momentum 0.9 at learning rate
    0.1, ``steps`` steps on batches of 64 fresh sequences (in epochs of 30 steps),
    the gradient norm clipped at ``clip`` (None: not clipped). The accuracy is
    measured on 2,000 test sequences (seed 99).

    Returns:
        ``(accuracy, reach, history)``: the test accuracy, the reach before
        training, and the training :class:`~seqbook.train.History`.

    Example:
        >>> acc, reach, history = train_long_lag(FirstSymbolTask(5), steps=30)
        >>> len(history.step_loss), 0 < reach < 1
        (30, True)
    """
    for name, value in (("clip", clip), ("radius", radius)):
        if value is not None:
            check_real(name, value, min_value=0.0, strict_min=True)
    check_int("seed", seed, min_value=0)
    check_positive_int("steps", steps)
    seed_everything(seed)
    generator = seeded_generator(seed + 1)
    rnn = RNN(task.input_size, 32)
    model = LastOutputClassifier(rnn, 32, task.num_classes)
    if radius is not None:                 # rescale W_hh to spectral radius
        with torch.no_grad():
            W = rnn.get_parameter("W_hh")
            W.mul_(radius / torch.linalg.eigvals(W).abs().max())
    reach = gradient_reach(model, task)
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    batches = lambda: [task(64, generator) for _ in range(30)]
    history = fit(model, classify_loss, batches, optimizer,
                  epochs=max(steps // 30, 1), clip=clip, progress=False)
    x, y = task(2000, seeded_generator(99))
    return accuracy(model, x, y), reach, history


@dataclass(frozen=True)
class VanishingLagRecord:
    """One run of :func:`train_long_lag`: a row of :data:`ROWS`, a seed, the outcome."""

    row: str  # a key of ROWS
    T: int
    signal_position: int
    clip: float  # 0: not clipped
    radius: float  # 0: PyTorch's initialisation kept
    seed: int
    steps: int
    accuracy: float  # test accuracy after training
    reach: float  # gradient_reach before training
    lowest_loss: float  # the lowest epoch-mean training loss
    highest_loss: float  # the highest epoch-mean training loss
    largest_norm: float  # the largest gradient norm, before clipping
    seconds: float  # CPU time of this process for the run


def vanishing_lag_grid(
    rows: Iterable[str] = tuple(ROWS),
    seeds: Iterable[int] = SEEDS,
    steps: int = 300,
    log=None,
) -> list[VanishingLagRecord]:
    """:func:`train_long_lag` for every row of :data:`ROWS` from every seed.

    Runs on one CPU thread (restored afterwards), as the committed table was made.

    Example:
        >>> rows = vanishing_lag_grid(["T = 5"], [0], steps=30)
        >>> [(row.row, row.seed, row.steps) for row in rows]
        [('T = 5', 0, 30)]
    """
    records = []
    seeds = list(seeds)
    for name in rows:
        task, clip, radius = ROWS[name]
        for seed in seeds:
            start = time.process_time()
            with one_thread():
                acc, reach, history = train_long_lag(task, clip, radius, seed, steps)
            seconds = time.process_time() - start
            records.append(VanishingLagRecord(
                name, task.length, task.signal_position, clip or 0.0, radius or 0.0,
                seed, steps, acc, reach, min(history.epoch_loss),
                max(history.epoch_loss), max(history.grad_norm), round(seconds, 2)))
            if log is not None:
                print(f"{name:26s} seed={seed} accuracy {acc:.3f} reach {reach:.1e} "
                      f"{seconds:5.1f} s", file=log, flush=True)
    return records


def load_vanishing_lag_table() -> list[VanishingLagRecord]:
    """The committed table (``results/vanishing_lag.csv``).

    Example:
        >>> rows = load_vanishing_lag_table()
        >>> sorted({row.seed for row in rows}) == list(SEEDS)
        True
    """
    return load_table(RESULTS, VanishingLagRecord)


def main(argv: Sequence[str] | None = None) -> list[VanishingLagRecord]:
    """Run every row from every seed and write the table; returns its rows."""
    args = _table_options(argv, "seqbook.experiments.vanishing_lag",
                          "The plain RNN on long time lags, and clipping, from several seeds.",
                          SEEDS, RESULTS)
    rows = ("T = 5", "radius 3, no clipping") if args.smoke else tuple(ROWS)
    records = vanishing_lag_grid(rows, args.seeds, steps=30 if args.smoke else 300,
                                 log=sys.stderr)
    _write_table(records, args, "seqbook.experiments.vanishing_lag", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
