r"""What depth buys on the ring task, and which tasks may read the future: the seed table
of the chapter on deep and bidirectional recurrent networks.

Shape letters: ``B`` batch, ``T`` time, ``K`` symbols (5), ``H`` hidden units.

The chapter trains taggers (:class:`Tagger`: a recurrent network and a linear readout
at every step) on two tasks:

- the ring (:func:`ring_points`): every step a point uniform in :math:`[-1, 1]^2`,
  labelled 1 inside the ring :math:`0.4 < \lVert \mathbf{x}_t \rVert < 0.8`; a
  one-layer GRU, a two-layer GRU of the same parameter count, and the one-layer GRU
  whose label of step :math:`t` is read out at step :math:`t + 1`
  (:func:`ring_contestant`);
- next symbols (:func:`symbols`): each step labelled with the symbol that follows it,
  independent symbols (tagging) or symbols that follow a rule with probability 0.7
  (generation), read left to right or both ways (:func:`next_symbol_tagger`); the
  generation rows are also scored with every sequence cut after each step
  (:func:`accuracy_as_generated`).

Ten seeds of every row take longer than the chapter may run, so they are computed
offline (``depth_direction_grid``) into the table
``seqbook/experiments/results/depth_direction.csv`` that the chapter loads
(``load_depth_direction_table``); the chapter reruns seed 0 of some rows live, with
the same functions. The table was made with::

    python -m seqbook.experiments.depth_direction --threads 1

(about 40 seconds of CPU time on one core). ``--smoke`` runs a tiny version as a test
that the script works.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from seqbook._checks import check_int, check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.recurrent import GRU
from seqbook.train import fit
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "K", "P_RULE", "RESULTS", "RING_BATCH", "RING_CONTESTANTS", "RING_LENGTH", "RING_STEPS",
    "ROWS", "SEEDS", "T_MAX", "TAG_STEPS", "DepthDirectionRecord", "Tagger",
    "accuracy_as_generated", "depth_direction_grid", "load_depth_direction_table", "main",
    "next_accuracy", "next_loss", "next_symbol_tagger", "ring_contestant", "ring_points",
    "symbols", "tag_accuracy", "tag_loss",
]

#: The committed table.
RESULTS = RESULTS_DIR / "depth_direction.csv"
#: The seeds of the table, for every row.
SEEDS = tuple(range(10))
#: The ring task's training: Adam steps, sequences per batch, points per sequence.
RING_STEPS, RING_BATCH, RING_LENGTH = 300, 128, 4
#: The ring's contestants: name -> (layers, hidden units, delay of the readout).
RING_CONTESTANTS: dict[str, tuple[int, int, int]] = {
    "1 layer, H = 20": (1, 20, 0),
    "2 layers, H = 12": (2, 12, 0),
    "1 layer, H = 20, label read one step later": (1, 20, 1),
}
#: The next-symbol tasks: alphabet, longest sequence, how often the rule holds.
K, T_MAX, P_RULE = 5, 12, 0.7
#: Adam steps of a next-symbol tagger.
TAG_STEPS = 100
#: The rows of the table: ring contestants, then "tagging" (independent symbols) and
#: "generation" (the rule), each read "left to right" or "both ways".
ROWS: tuple[str, ...] = (
    *(f"ring: {name}" for name in RING_CONTESTANTS),
    "tagging: left to right", "tagging: both ways",
    "generation: left to right", "generation: both ways",
)


def ring_points(n_sequences, T, generator):
    """Points uniform in [-1, 1]^2, one per step; label 1 inside the ring.

    Example:
        >>> x, labels = ring_points(3, 4, seeded_generator(0))
        >>> tuple(x.shape), tuple(labels.shape)
        ((3, 4, 2), (3, 4))
    """
    x = torch.rand(n_sequences, T, 2, generator=generator) * 2 - 1
    radius = x.norm(dim=-1)                                     # (B, T)
    return x, ((radius > 0.4) & (radius < 0.8)).long()          # (B, T, 2)


class Tagger(nn.Module):
    """A recurrent network and a linear readout of its states at every step.

    Example:
        >>> model = Tagger(GRU(2, 4, bidirectional=True), 3)
        >>> tuple(model(torch.zeros(2, 5, 2)).shape)
        (2, 5, 3)
    """

    def __init__(self, recurrent, num_classes):
        super().__init__()
        self.rnn = recurrent
        width = recurrent.hidden_size * (2 if recurrent.bidirectional else 1)
        self.readout = nn.Linear(width, num_classes)

    def forward(self, x, lengths=None):                   # (B, T, D), (B,)
        T = x.shape[1]
        if lengths is not None:    # each sequence read to its own end
            x = pack_padded_sequence(x, lengths, batch_first=True,
                                     enforce_sorted=False)
        states, _ = self.rnn(x)
        if lengths is not None:
            states, _ = pad_packed_sequence(states, batch_first=True,
                                            total_length=T)
        return self.readout(states)                       # (B, T, classes)


def tag_loss(model, batch, delay=0):
    """The cross-entropy of a tagger's labels, the label of step t read at t + delay."""
    x, labels = batch
    scores = model(x)                                  # (B, T, classes)
    if delay:                  # the label of step t is read at step t + delay
        scores, labels = scores[:, delay:], labels[:, :-delay]
    return F.cross_entropy(scores.flatten(0, 1), labels.flatten())


def tag_accuracy(model, batch, delay=0):
    """The share of labels a tagger gets right, the label of step t read at t + delay."""
    x, labels = batch
    with torch.no_grad():
        predicted = model(x).argmax(-1)                # (B, T)
    if delay:
        predicted, labels = predicted[:, delay:], labels[:, :-delay]
    return (predicted == labels).float().mean().item()


def ring_contestant(layers, width, seed, delay=0, steps=RING_STEPS):
    """Train a GRU tagger of ``layers`` layers of ``width`` units on the ring.

    Trained as the ``nn.GRU`` that :meth:`~seqbook.recurrent.GRU.to_torch` returns,
    ``steps`` Adam steps at learning rate 0.01 on fresh batches (seed ``100 + seed``);
    scored on 2,000 test sequences (seed 999).

    Returns:
        ``(model, accuracy)``.

    Example:
        >>> model, acc = ring_contestant(1, 4, seed=0, steps=2)
        >>> 0 <= acc <= 1
        True
    """
    check_positive_int("layers", layers)
    check_int("seed", seed, min_value=0)
    seed_everything(seed)
    model = Tagger(GRU(2, width, num_layers=layers).to_torch(), 2)
    generator = seeded_generator(100 + seed)
    batches = [ring_points(RING_BATCH, RING_LENGTH, generator)
               for _ in range(steps)]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    fit(model, lambda m, b: tag_loss(m, b, delay), batches, optimizer,
        epochs=1, progress=False)
    test = ring_points(2000, RING_LENGTH, seeded_generator(999))
    return model, tag_accuracy(model, test, delay)


def symbols(n_sequences, generator, p_next=0.0, T=T_MAX):
    """Symbols 0..K-1 (one-hot), lengths T/2..T; with probability p_next a
    symbol is the previous one plus 1 (mod K), otherwise uniform.

    Example:
        >>> x, lengths, labels = symbols(3, seeded_generator(0))
        >>> tuple(x.shape), tuple(lengths.shape), tuple(labels.shape)
        ((3, 12, 5), (3,), (3, 12))
    """
    lengths = torch.randint(T // 2, T + 1, (n_sequences,), generator=generator)
    ids = torch.randint(0, K, (n_sequences, T), generator=generator)
    follow = torch.rand(n_sequences, T, generator=generator) < p_next
    for t in range(1, T):
        rule = (ids[:, t - 1] + 1) % K
        ids[:, t] = torch.where(follow[:, t], rule, ids[:, t])
    labels = torch.full_like(ids, -100)             # -100: no label
    labels[:, :-1] = ids[:, 1:]                     # the next symbol
    last = torch.arange(T) >= lengths[:, None] - 1  # last real step, padding
    labels[last] = -100
    return F.one_hot(ids, K).float(), lengths, labels   # (B,T,K), (B,), (B,T)


def next_loss(model, batch):
    """The cross-entropy of a next-symbol tagger on a padded batch."""
    x, lengths, labels = batch
    scores = model(x, lengths)                              # (B, T, K)
    return F.cross_entropy(scores.flatten(0, 1), labels.flatten())


def next_accuracy(model, batch):
    """The share of next symbols a tagger gets right, each sequence read whole."""
    x, lengths, labels = batch
    with torch.no_grad():
        predicted = model(x, lengths).argmax(-1)            # (B, T)
    real = labels >= 0
    return (predicted[real] == labels[real]).double().mean().item()


def next_symbol_tagger(bidirectional, seed, p_next, steps=TAG_STEPS):
    """Train a 16-unit GRU next-symbol tagger on :func:`symbols` with ``p_next``.

    Trained as ``nn.GRU``, ``steps`` Adam steps at learning rate 0.01 on batches of 64
    (seed ``200 + seed``).

    Example:
        >>> model = next_symbol_tagger(True, seed=0, p_next=0.0, steps=2)
        >>> model.rnn.bidirectional
        True
    """
    check_int("seed", seed, min_value=0)
    seed_everything(seed)
    gru = GRU(K, 16, bidirectional=bidirectional).to_torch()
    model = Tagger(gru, K)
    generator = seeded_generator(200 + seed)
    batches = [symbols(64, generator, p_next) for _ in range(steps)]
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    fit(model, next_loss, batches, optimizer, epochs=1, progress=False)
    return model


def accuracy_as_generated(trained, batch):
    """Next-symbol accuracy when each sequence ends at t, for every t.

    The cut is made with the ``lengths`` of the book's :class:`~seqbook.recurrent.GRU`
    (copied from the trained ``nn.GRU``), whose backward direction then starts at t.

    Example:
        >>> model = next_symbol_tagger(False, seed=0, p_next=0.7, steps=2)
        >>> batch = symbols(8, seeded_generator(1), p_next=0.7)
        >>> accuracy_as_generated(model, batch) == next_accuracy(model, batch)
        True
    """
    x, lengths, labels = batch
    model = Tagger(GRU.from_torch(trained.rnn), K)     # the same GRU, ours
    model.readout = trained.readout
    right = total = 0
    for t in range(x.shape[1] - 1):
        rows = labels[:, t] >= 0
        cut = torch.full((int(rows.sum()),), t + 1)    # reads x_1 .. x_t only
        with torch.no_grad():
            predicted = model(x[rows], cut)[:, t].argmax(-1)
        right += (predicted == labels[rows, t]).sum().item()
        total += int(rows.sum())
    return right / total


@dataclass(frozen=True)
class DepthDirectionRecord:
    """One run: a row of :data:`ROWS`, a seed, the outcome."""

    row: str  # one of ROWS
    seed: int
    steps: int  # training steps
    accuracy: float  # test accuracy (next-symbol rows: each sequence read whole)
    accuracy_cut: float  # generation rows: cut after each step; -1 elsewhere
    seconds: float  # CPU time of this process for the run


def _run(row: str, seed: int, steps: int | None) -> tuple[float, float]:
    """The accuracy (and the accuracy cut, or -1) of ``row`` from ``seed``."""
    task, _, name = row.partition(": ")
    if task == "ring":
        layers, width, delay = RING_CONTESTANTS[name]
        return ring_contestant(layers, width, seed, delay, steps or RING_STEPS)[1], -1.0
    p_next = P_RULE if task == "generation" else 0.0
    model = next_symbol_tagger(name == "both ways", seed, p_next, steps or TAG_STEPS)
    test = symbols(4000, seeded_generator(999), p_next=p_next)
    cut = accuracy_as_generated(model, test) if task == "generation" else -1.0
    return next_accuracy(model, test), cut


def depth_direction_grid(
    rows: Iterable[str] = ROWS,
    seeds: Iterable[int] = SEEDS,
    steps: int | None = None,
    log=None,
) -> list[DepthDirectionRecord]:
    """Every row of :data:`ROWS` from every seed (``steps``: None for each row's own).

    Runs on one CPU thread (restored afterwards), as the committed table was made.

    Example:
        >>> records = depth_direction_grid(["tagging: both ways"], [0], steps=2)
        >>> [(r.row, r.seed, r.steps, r.accuracy_cut) for r in records]
        [('tagging: both ways', 0, 2, -1.0)]
    """
    records = []
    seeds = list(seeds)
    for row in rows:
        if row not in ROWS:
            raise ValueError(f"row must be one of {ROWS}, got {row!r}")
        default = RING_STEPS if row.startswith("ring") else TAG_STEPS
        for seed in seeds:
            start = time.process_time()
            with one_thread():
                acc, cut = _run(row, seed, steps)
            seconds = time.process_time() - start
            records.append(DepthDirectionRecord(row, seed, steps or default, acc, cut,
                                                round(seconds, 2)))
            if log is not None:
                print(f"{row:52s} seed={seed} accuracy {acc:.3f} cut {cut:.3f} "
                      f"{seconds:5.1f} s", file=log, flush=True)
    return records


def load_depth_direction_table() -> list[DepthDirectionRecord]:
    """The committed table (``results/depth_direction.csv``).

    Example:
        >>> rows = load_depth_direction_table()
        >>> sorted({row.seed for row in rows}) == list(SEEDS)
        True
    """
    return load_table(RESULTS, DepthDirectionRecord)


def main(argv: Sequence[str] | None = None) -> list[DepthDirectionRecord]:
    """Run every row from every seed and write the table; returns its rows."""
    args = _table_options(argv, "seqbook.experiments.depth_direction",
                          "Depth on the ring task and reading direction on next symbols, "
                          "from several seeds.", SEEDS, RESULTS)
    rows = ("ring: 2 layers, H = 12", "generation: both ways") if args.smoke else ROWS
    records = depth_direction_grid(rows, args.seeds, steps=5 if args.smoke else None,
                                   log=sys.stderr)
    _write_table(records, args, "seqbook.experiments.depth_direction", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
