r"""Counting with a bounded and an unbounded state: the table of the GRU chapter.

Shape letters: ``B`` batch (one string each), ``T`` time, ``H`` hidden units (4).

Strings :math:`a^n b^n` are read one symbol at a time (:func:`anbn_batch`); at every
:math:`b` the network says whether the string ends after it, which it can do for every
:math:`n` only by counting the :math:`a` s and then the :math:`b` s. A GRU's state is a
convex mix of values in :math:`(-1, 1)` and stays there; an LSTM's cell can add a
constant at every step without bound. Weiss, Goldberg and Yahav (2018) showed that
trained LSTMs learn such a counter and GRUs do not.

Three networks of ``HIDDEN`` units (``NETWORKS``: the GRU, the LSTM with forget
gate, the 1997 LSTM without one, each as PyTorch initialises it) are trained on
:math:`n = 1, \dots,` ``TRAIN_MAX_N`` (:func:`train_counter`) and tested on every
:math:`n` up to ``TEST_MAX_N`` (:func:`recognised`). Five seeds of each take longer
than the chapter may run, so they are computed offline (:func:`counting_grid`) into the
table ``seqbook/experiments/results/counting.csv`` (:func:`load_counting_table`), and
the trained weights into ``counting_weights.json`` (:func:`load_counting_model`), which the
chapter loads to draw the states. The table was made with::

    python -m seqbook.experiments.counting --threads 1

(about 100 s of CPU time on one core). ``--smoke`` runs a tiny version as a test that
the script works.
"""

from __future__ import annotations

import json
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_choice, check_int, check_positive_int
from seqbook.experiments._common import IGNORE, one_thread
from seqbook.experiments.classifier import StepClassifier, classify_loss
from seqbook.experiments.layers import LayerSpec, recurrent_layer
from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.provenance import record
from seqbook.utils import seed_everything

__all__ = [
    "RESULTS", "CHECKPOINT", "HIDDEN", "TRAIN_MAX_N", "TEST_MAX_N", "STEPS", "NETWORKS",
    "SEEDS", "CountingRecord", "anbn_batch", "recognised", "largest_n", "train_counter",
    "counting_grid", "load_counting_table", "load_counting_model", "main",
]

#: The committed table and the trained weights of its runs.
RESULTS = RESULTS_DIR / "counting.csv"
CHECKPOINT = RESULTS_DIR / "counting_weights.json"
#: Hidden units of every network.
HIDDEN = 4
#: Training strings: n = 1, ..., TRAIN_MAX_N; test strings: n = 1, ..., TEST_MAX_N.
TRAIN_MAX_N = 20
TEST_MAX_N = 200
#: Adam steps (learning rate 0.01, all training strings in every batch).
STEPS = 2000
#: The networks compared, by label.
NETWORKS: dict[str, LayerSpec] = {
    "GRU": LayerSpec("gru"),
    "LSTM": LayerSpec("lstm"),
    "LSTM 1997": LayerSpec("lstm", forget_gate=False),
}
#: The seeds of the table, for every network.
SEEDS = (0, 1, 2, 3, 4)


def anbn_batch(ns: Sequence[int], length: int | None = None
               ) -> tuple[Float[Tensor, "B T 2"], Int[Tensor, "B T"]]:
    r"""The strings :math:`a^n b^n` for each ``n`` of ``ns``, one-hot, padded at the end.

    Inputs are :math:`(1, 0)` for :math:`a`, :math:`(0, 1)` for :math:`b` and zeros
    after the string. The label of each :math:`b` is 1 if the string ends after it
    (the :math:`n`-th :math:`b`) and 0 if another :math:`b` follows; the :math:`a` s and
    the padding have no label (``-100``).

    Args:
        ns: the counts, each >= 1.
        length: ``T``, at least ``2 * max(ns)`` (default: that).

    Shapes:
        returns: inputs ``(B, T, 2)`` and labels ``(B, T)``, with ``B = len(ns)``.

    Example:
        >>> x, y = anbn_batch([2, 1])
        >>> x[0].argmax(-1).tolist(), y[0].tolist(), y[1].tolist()
        ([0, 0, 1, 1], [-100, -100, 0, 1], [-100, 1, -100, -100])
    """
    if isinstance(ns, (str, bytes)) or not isinstance(ns, Sequence) or not ns:
        raise TypeError(f"ns must be a non-empty sequence of ints, got {ns!r}")
    ns = [check_positive_int("ns", n) for n in ns]
    longest = 2 * max(ns)
    T = longest if length is None else check_int("length", length, min_value=longest)
    x = torch.zeros(len(ns), T, 2)
    y = torch.full((len(ns), T), IGNORE)
    for row, n in enumerate(ns):
        x[row, :n, 0] = 1.0                     # a^n
        x[row, n:2 * n, 1] = 1.0                # b^n
        y[row, n:2 * n - 1] = 0                 # another b follows
        y[row, 2 * n - 1] = 1                   # the string ends
    return x, y                                 # (B, T, 2), (B, T)


def recognised(model: nn.Module, max_n: int = TEST_MAX_N) -> Tensor:
    """Whether ``model`` labels every :math:`b` of :math:`a^n b^n` right, for
    :math:`n = 1, \\dots,` ``max_n``: a bool tensor ``(max_n,)``, entry ``n - 1`` for
    :math:`n`.

    Example:
        >>> model = StepClassifier(nn.GRU(2, 4, batch_first=True), 4, 2)
        >>> recognised(model, 5).shape
        torch.Size([5])
    """
    check_positive_int("max_n", max_n)
    x, y = anbn_batch(range(1, max_n + 1))
    with torch.no_grad():
        predicted = model(x).argmax(-1)                       # (B, T)
    return ((predicted == y) | (y == IGNORE)).all(dim=1)      # (B,)


def largest_n(ok: Tensor) -> int:
    """The largest :math:`n` such that every string up to :math:`a^n b^n` is
    recognised, from ``ok = recognised(model)`` (0 if :math:`a^1 b^1` is not).

    Example:
        >>> largest_n(torch.tensor([True, True, False, True]))
        2
    """
    if not isinstance(ok, Tensor) or ok.dtype != torch.bool or ok.dim() != 1:
        raise TypeError("ok must be a 1-d bool tensor (what recognised returns), got "
                        f"{type(ok).__name__} {getattr(ok, 'dtype', '')}")
    wrong = (~ok).nonzero()
    return int(wrong[0]) if len(wrong) else len(ok)


def train_counter(network: str, seed: int = 0, steps: int = STEPS) -> StepClassifier:
    """Train the network ``network`` of ``NETWORKS`` (``HIDDEN`` units, a linear
    readout of 2 classes) on :math:`a^n b^n`, :math:`n = 1, \\dots,` ``TRAIN_MAX_N``.

    Seeds everything with ``seed``; Adam at learning rate 0.01 on all training strings
    in every step, the gradient norm clipped at 1, ``steps`` steps; the layer is the
    book's module converted to PyTorch's fused one
    (:func:`~seqbook.experiments.recurrent_layer`).

    Example:
        >>> model = train_counter("LSTM", steps=3)
        >>> type(model.rnn).__name__
        'LSTM'
    """
    check_choice("network", network, tuple(NETWORKS))
    check_int("seed", seed, min_value=0)
    check_positive_int("steps", steps)
    seed_everything(seed)
    model = StepClassifier(recurrent_layer(NETWORKS[network], 2, HIDDEN), HIDDEN, 2)
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    batch = anbn_batch(range(1, TRAIN_MAX_N + 1))
    for _ in range(steps):
        loss = classify_loss(model, batch)
        optimizer.zero_grad()
        loss.backward()
        nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
    return model


@dataclass(frozen=True)
class CountingRecord:
    """One trained network: its label, seed and what it recognises."""

    network: str  # a key of NETWORKS
    seed: int
    hidden_size: int
    train_max_n: int
    steps: int
    train_loss: float  # the last step's loss
    largest_n: int  # every a^n b^n up to it recognised
    recognised_share: float  # share of n = 1..TEST_MAX_N recognised
    recognised_bits: str  # "1" or "0" for n = 1, ..., TEST_MAX_N
    seconds: float  # CPU time of this process for the run


def counting_grid(networks: Iterable[str] = tuple(NETWORKS), seeds: Iterable[int] = SEEDS,
                  steps: int = STEPS, log=None
                  ) -> tuple[list[CountingRecord], dict[str, dict[str, Tensor]]]:
    """:func:`train_counter` for every network from every seed, on one CPU thread.

    Returns:
        The records and the trained weights, keyed ``"network/seed"``.

    Example:
        >>> rows, weights = counting_grid(["GRU"], [0], steps=2)
        >>> [(row.network, row.seed, row.steps) for row in rows], list(weights)
        ([('GRU', 0, 2)], ['GRU/0'])
    """
    records, weights = [], {}
    seeds = list(seeds)
    for network in networks:
        for seed in seeds:
            start = time.process_time()
            with one_thread():
                model = train_counter(network, seed, steps)
                loss = classify_loss(model, anbn_batch(range(1, TRAIN_MAX_N + 1))).item()
                ok = recognised(model)
            seconds = time.process_time() - start
            bits = "".join("1" if b else "0" for b in ok.tolist())
            records.append(CountingRecord(
                network, seed, HIDDEN, TRAIN_MAX_N, steps, loss, largest_n(ok),
                ok.float().mean().item(), bits, round(seconds, 2)))
            weights[f"{network}/{seed}"] = model.state_dict()
            if log is not None:
                print(f"{network:10s} seed={seed} largest n {largest_n(ok):3d} "
                      f"{seconds:5.1f} s", file=log, flush=True)
    return records, weights


def load_counting_table() -> list[CountingRecord]:
    """The committed table (``results/counting.csv``).

    Example:
        >>> rows = load_counting_table()
        >>> sorted({row.seed for row in rows}) == list(SEEDS)
        True
    """
    return load_table(RESULTS, CountingRecord)


def load_counting_model(network: str, seed: int = 0,
                        path: str | Path = CHECKPOINT) -> StepClassifier:
    """The trained network ``network`` of seed ``seed`` from the committed weights.

    Example:
        >>> model = load_counting_model("LSTM 1997", 0)
        >>> bool(recognised(model, 20).all())
        True
    """
    check_choice("network", network, tuple(NETWORKS))
    check_int("seed", seed, min_value=0)
    weights = json.loads(Path(path).read_text(encoding="utf-8"))
    key = f"{network}/{seed}"
    if key not in weights:
        raise ValueError(f"seed must be one of the checkpoint's seeds; {key!r} is not in "
                         f"{path}")
    with torch.random.fork_rng():          # the initial weights are overwritten
        model = StepClassifier(recurrent_layer(NETWORKS[network], 2, HIDDEN), HIDDEN, 2)
    model.load_state_dict({name: torch.tensor(values, dtype=torch.float32)
                           for name, values in weights[key].items()})
    return model


def _as_lists(weights: dict[str, dict[str, Tensor]]) -> dict[str, dict[str, list]]:
    """The weights as nested lists of floats (float32 values, exact in JSON)."""
    return {key: {name: t.tolist() for name, t in state.items()}
            for key, state in weights.items()}


def main(argv: Sequence[str] | None = None) -> list[CountingRecord]:
    """Train every network from every seed; write the table and the weights."""
    args = _table_options(argv, "seqbook.experiments.counting",
                          "Counting a^n b^n with a GRU and two LSTMs, from several seeds.",
                          SEEDS, RESULTS)
    steps = 5 if args.smoke else STEPS
    records, weights = counting_grid(tuple(NETWORKS), args.seeds, steps, log=sys.stderr)
    _write_table(records, args, "seqbook.experiments.counting", argv)
    checkpoint = args.out.with_name(args.out.stem + "_weights.json")
    checkpoint.write_text(json.dumps(_as_lists(weights)) + "\n", encoding="utf-8")
    record(checkpoint, "seqbook.experiments.counting", argv, threads=args.threads)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
