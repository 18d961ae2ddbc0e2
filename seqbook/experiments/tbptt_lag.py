r"""Truncated BPTT on an 8-step lag: the table of the chapter on recurrent neural networks.

Shape letters: ``B`` batch (32 streams side by side), ``T`` time, ``H`` hidden units (16).

A stream of random bits, the target at step :math:`t` the input bit of step
:math:`t - 8` (:func:`bit_stream`), is learned by an :class:`~seqbook.recurrent.RNN`
of 16 units with a linear readout, trained with
:func:`~seqbook.recurrent.truncated_bptt` in chunks of :math:`k_1` steps
back-propagated through :math:`k_2` (:func:`train_tbptt`). The settings of
:data:`SETUPS` compare chunks of 4 and of 16 steps, overlapping windows, four times the
input, and a control that trains only the readout of the untrained RNN.

Six seeds of every setting take longer than the chapter may run, so they are computed
offline (:func:`tbptt_grid`) into the table
``seqbook/experiments/results/tbptt_lag.csv`` that the chapter loads
(:func:`load_tbptt_table`); the chapter reruns seed 0 of every setting live, with the
same :func:`train_tbptt`. The table was made with::

    python -m seqbook.experiments.tbptt_lag --threads 1

(about 10 s of CPU time on one core). ``--smoke`` runs a tiny version as a test that
the script works.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.recurrent import RNN, truncated_bptt
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "RESULTS", "LAG", "HIDDEN", "STREAMS", "PIECE_STEPS", "TEST_STREAMS", "TEST_STEPS",
    "TEST_SEED", "SETUPS", "SEEDS", "TBPTTRecord", "bit_stream", "train_tbptt", "tbptt_grid",
    "load_tbptt_table", "main",
]

#: The committed table.
RESULTS = RESULTS_DIR / "tbptt_lag.csv"
#: How many steps back the target bit lies.
LAG = 8
#: The RNN's hidden units.
HIDDEN = 16
#: Training: streams side by side, and the steps of each piece of them.
STREAMS, PIECE_STEPS = 32, 250
#: Testing: new streams, their steps, and the seed that draws them (the same for every run).
TEST_STREAMS, TEST_STEPS, TEST_SEED = 256, 200, 99
#: The settings: name -> (k1, k2, pieces of PIECE_STEPS steps, whether the RNN is trained).
SETUPS: dict[str, tuple[int, int, int, bool]] = {
    "TBPTT(4, 4)": (4, 4, 2, True),
    "TBPTT(16, 16)": (16, 16, 2, True),
    "TBPTT(4, 16)": (4, 16, 2, True),
    "TBPTT(16, 16), 4x the input": (16, 16, 8, True),
    # a control: the untrained RNN, only its readout trained (TBPTT(4, 4))
    "readout only": (4, 4, 2, False),
}
#: The seeds of the table, for every setting.
SEEDS = (0, 1, 2, 3, 4, 5)


def bit_stream(batch: int, T: int, generator: torch.Generator
               ) -> tuple[Float[Tensor, "{batch} {T} 1"], Int[Tensor, "{batch} {T}"]]:
    r"""``batch`` streams of ``T`` random bits, as inputs :math:`\pm 1` and targets
    :math:`y_t = x_{t-8}` (``-100``, no loss, for the first 8 steps).

    Shapes:
        returns ``(B, T, 1)`` inputs and ``(B, T)`` targets.

    Example:
        >>> x, y = bit_stream(2, 12, torch.Generator().manual_seed(0))
        >>> bool((y[:, 8:] == (x[:, :4, 0] > 0).long()).all()), y[0, :8].tolist()[:2]
        (True, [-100, -100])
    """
    check_positive_int("batch", batch)
    check_positive_int("T", T)
    bits = torch.randint(0, 2, (batch, T), generator=generator)
    targets = torch.full((batch, T), -100)      # -100: no loss here
    targets[:, LAG:] = bits[:, :-LAG]           # y_t = x_{t-8}
    return 2.0 * bits[..., None] - 1, targets   # (B, T, 1), (B, T)


def train_tbptt(k1: int, k2: int, seed: int = 0,
                pieces: int = 2, train_rnn: bool = True) -> tuple[float, int, int]:
    """Train an RNN of 16 units and a linear readout on :func:`bit_stream` with
    truncated BPTT(``k1``, ``k2``).

    Seeds everything with ``seed``; Adam at learning rate 0.01 on the readout's and
    (if ``train_rnn``) the RNN's parameters; ``pieces`` pieces of 250 steps of 32
    streams, the state handed on from piece to piece, the gradient norm clipped at 1
    (:func:`~seqbook.recurrent.truncated_bptt`). The test streams are 256 new streams
    of 200 steps (seed 99), scored from step 9 on.

    Returns:
        ``(accuracy, updates, predictions)``: the test accuracy, the number of
        updates made, and the number of test predictions scored.

    Example:
        >>> acc, updates, n = train_tbptt(4, 4, pieces=1)
        >>> updates, n
        (63, 49152)
    """
    check_positive_int("k1", k1)
    check_positive_int("k2", k2)
    check_int("seed", seed, min_value=0)
    check_positive_int("pieces", pieces)
    seed_everything(seed)
    generator = seeded_generator(seed)
    model, readout = RNN(1, HIDDEN), nn.Linear(HIDDEN, 2)
    params = [*readout.parameters()]
    if train_rnn:                               # else: train the readout only
        params += [*model.parameters()]
    optimizer = torch.optim.Adam(params, lr=0.01)

    def loss_fn(out, y):                        # (B, k, H), (B, k)
        logits = readout(out)                   # (B, k, 2)
        return F.cross_entropy(logits.reshape(-1, 2), y.reshape(-1),
                               ignore_index=-100)

    state, updates = None, 0
    for piece in range(pieces):                 # pieces of one stream
        x, y = bit_stream(STREAMS, PIECE_STEPS, generator)
        result = truncated_bptt(model, x, y, loss_fn, optimizer, k1, k2,
                                state=state, clip=1.0)
        state, updates = result.final_state, updates + len(result.losses)
    x, y = bit_stream(TEST_STREAMS, TEST_STEPS, seeded_generator(TEST_SEED))
    with torch.no_grad():
        predicted = readout(model(x)[0]).argmax(-1)           # (B, T)
    correct = predicted[:, LAG:] == y[:, LAG:]
    return correct.float().mean().item(), updates, correct.numel()


@dataclass(frozen=True)
class TBPTTRecord:
    """One run of :func:`train_tbptt`: a setting of :data:`SETUPS`, a seed, the outcome."""

    setup: str  # a key of SETUPS
    k1: int
    k2: int
    pieces: int
    train_rnn: bool
    seed: int
    accuracy: float  # test accuracy
    updates: int
    predictions: int  # test predictions scored
    seconds: float  # CPU time of this process for the run


def tbptt_grid(setups: Iterable[str] = tuple(SETUPS), seeds: Iterable[int] = SEEDS,
               log=None) -> list[TBPTTRecord]:
    """:func:`train_tbptt` for every setting of :data:`SETUPS` from every seed.

    Runs on one CPU thread (restored afterwards), as the committed table was made.

    Example:
        >>> rows = tbptt_grid(["TBPTT(16, 16)"], [0])
        >>> [(row.setup, row.seed, row.updates) for row in rows]
        [('TBPTT(16, 16)', 0, 32)]
    """
    records = []
    seeds = list(seeds)
    for name in setups:
        k1, k2, pieces, train_rnn = SETUPS[name]
        for seed in seeds:
            start = time.process_time()
            with one_thread():
                acc, updates, n = train_tbptt(k1, k2, seed, pieces, train_rnn)
            seconds = time.process_time() - start
            records.append(TBPTTRecord(name, k1, k2, pieces, train_rnn, seed, acc,
                                       updates, n, round(seconds, 2)))
            if log is not None:
                print(f"{name:28s} seed={seed} accuracy {acc:.3f} {seconds:5.1f} s",
                      file=log, flush=True)
    return records


def load_tbptt_table() -> list[TBPTTRecord]:
    """The committed table (``results/tbptt_lag.csv``).

    Example:
        >>> rows = load_tbptt_table()
        >>> sorted({row.seed for row in rows}) == list(SEEDS)
        True
    """
    return load_table(RESULTS, TBPTTRecord)


def main(argv: Sequence[str] | None = None) -> list[TBPTTRecord]:
    """Run every setting from every seed and write the table; returns its rows."""
    args = _table_options(argv, "seqbook.experiments.tbptt_lag",
                          "Truncated BPTT on an 8-step lag, from several seeds.",
                          SEEDS, RESULTS)
    setups = ("TBPTT(16, 16)",) if args.smoke else tuple(SETUPS)
    records = tbptt_grid(setups, args.seeds, log=sys.stderr)
    _write_table(records, args, "seqbook.experiments.tbptt_lag", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
