r"""A needle in a haystack: Hopfield pooling, mean pooling and an LSTM on bags of instances.

Shape letters: ``B`` bags, ``T`` instances per bag (64), ``D`` features per instance
(8), ``H`` hidden units (16).

The chapter "Hopfield networks" compares three ways of turning a bag of instances into
one vector (multiple-instance learning, as in Widrich et al.'s immune repertoires): a
bag holds ``T`` random instances; in a positive bag, ``k`` of them (the *needles*) carry
a motif, a fixed unit direction added with strength ``STRENGTH``; negative bags are pure
noise (:func:`make_bags`). Three classifiers share an instance encoder (a small MLP) and
a linear read-out, and differ only in the pooling (:class:`BagClassifier`):
:class:`~seqbook.hopfield.HopfieldPooling` with a learned prototype, mean pooling, or an
LSTM's last state. Each is trained for 20 epochs of Adam on 700 bags and tested on 1,000
others (:func:`needle_run`), for one and for sixteen needles per bag. Beside the test
accuracy, the table records what the Hopfield pooling's weights do on positive test bags
(:func:`pooling_weights`) and how much each model's logits move when the instances of
every test bag are permuted (:func:`order_change`).

Twenty seeds of the six trainings take longer than a chapter may run, so they are
computed offline into the table ``seqbook/experiments/results/needle.csv`` that the
chapter loads (:func:`load_needle_table`); the chapter reruns seed 0 live with the same
:func:`needle_run`. The table was made with::

    python -m seqbook.experiments.needle --threads 1

(about 2 CPU-minutes on one core). ``--smoke`` runs a tiny version as a test that the
script works.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from jaxtyping import Bool, Float, Int
from torch import Tensor, nn

from seqbook._checks import check_choice, check_int, check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.results import RESULTS_DIR, load_table, save_table
from seqbook.hopfield import HopfieldPooling
from seqbook.provenance import record
from seqbook.train import fit
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "RESULTS", "D", "T", "STRENGTH", "POOLINGS", "NEEDLE_COUNTS", "SEEDS", "EPOCHS",
    "NeedleRecord", "make_bags", "BagClassifier", "train_bag_classifier",
    "bag_accuracy", "pooling_weights", "order_change", "needle_run", "needle_grid",
    "load_needle_table", "main",
]

#: The committed table.
RESULTS = RESULTS_DIR / "needle.csv"
#: Features per instance, instances per bag, and the motif's strength.
D, T, STRENGTH = 8, 64, 4.0
#: The three poolings, in the table's order.
POOLINGS = ("Hopfield pooling", "mean pooling", "LSTM")
#: Needles per positive bag.
NEEDLE_COUNTS = (1, 16)
#: The seeds of the table.
SEEDS = tuple(range(20))
#: Training epochs.
EPOCHS = 20


def make_bags(
    n: int, k: int, motif: Float[Tensor, " D"], generator: torch.Generator
) -> tuple[Float[Tensor, "n T D"], Float[Tensor, " n"], Bool[Tensor, "n T"]]:
    """``n`` bags of ``T`` instances; the positive ones hide ``k`` needles.

    Shapes:
        motif: ``(D,)``.
        returns: bags ``(n, T, D)``, labels ``(n,)`` (float 0 or 1) and the needles
        ``(n, T)`` (bool, none in a negative bag).

    Example:
        >>> bags, y, needles = make_bags(4, 2, torch.ones(D), seeded_generator(0))
        >>> tuple(bags.shape), (needles.sum(1) == 2 * y).all().item()
        ((4, 64, 8), True)
    """
    check_positive_int("n", n)
    check_int("k", k, min_value=0, max_value=T)
    if motif.shape != (D,):
        raise ValueError(f"motif must have shape (D,) = ({D},), got {tuple(motif.shape)}")
    x = torch.randn(n, T, D, generator=generator)
    y = torch.randint(0, 2, (n,), generator=generator)
    where = torch.rand(n, T, generator=generator).argsort(1)[:, :k]  # (n, k)
    needles = torch.zeros(n, T).scatter(1, where, 1.0) * y[:, None]
    bags = x + STRENGTH * needles[..., None] * motif  # (n, T, D)
    return bags, y.float(), needles.bool()


class BagClassifier(nn.Module):
    """An instance encoder, a pooling of the ``T`` encoded instances, a linear read-out.

    Args:
        pooling: one of :data:`POOLINGS`.
        hidden: the width ``H`` of the encoder and of the pooled vector.

    Shapes:
        bags: ``(B, T, D)``.
        returns: ``(B,)`` logits.

    Example:
        >>> model = BagClassifier("mean pooling")
        >>> tuple(model(torch.randn(3, T, D)).shape)
        (3,)
    """

    def __init__(self, pooling: str, hidden: int = 16) -> None:
        super().__init__()
        check_choice("pooling", pooling, POOLINGS)
        check_positive_int("hidden", hidden)
        self.pooling = pooling
        self.in_features = D
        self.encode = nn.Sequential(nn.Linear(D, hidden), nn.ReLU(),
                                    nn.Linear(hidden, hidden))
        self.pool: nn.Module
        if pooling == "Hopfield pooling":
            self.pool = HopfieldPooling(hidden, hidden)
        elif pooling == "LSTM":
            self.pool = nn.LSTM(hidden, hidden, batch_first=True)
        self.head = nn.Linear(hidden, 1)

    def forward(self, bags: Float[Tensor, "B T {self.in_features}"]) -> Float[Tensor, " B"]:
        e = self.encode(bags)  # (B, T, H)
        if self.pooling == "Hopfield pooling":
            z = self.pool(e)  # (B, H)
        elif self.pooling == "mean pooling":
            z = e.mean(1)  # (B, H)
        else:
            z = self.pool(e)[0][:, -1]  # (B, H) the last LSTM state
        return self.head(z).squeeze(-1)  # (B,) logits


def train_bag_classifier(
    pooling: str, bags: Float[Tensor, "B T D"], y: Float[Tensor, " B"], seed: int,
    epochs: int = EPOCHS,
) -> BagClassifier:
    """A :class:`BagClassifier` initialised from ``seed`` and trained with Adam (learning
    rate 3e-3) on the binary cross-entropy, in batches of 50 reshuffled every epoch.

    Returns:
        The model, in eval mode.
    """
    seed_everything(seed)
    model = BagClassifier(pooling)

    def batches():  # reshuffled every epoch
        return [(bags[i], y[i]) for i in torch.randperm(len(y)).split(50)]

    def loss_fn(m, batch):
        return F.binary_cross_entropy_with_logits(m(batch[0]), batch[1])

    optimizer = torch.optim.Adam(model.parameters(), lr=3e-3)
    fit(model, loss_fn, batches, optimizer, epochs=epochs, desc=pooling)
    return model.eval()


def bag_accuracy(
    model: nn.Module, bags: Float[Tensor, "B T D"], y: Float[Tensor, " B"]
) -> float:
    """The share of ``bags`` whose logit has the sign of their label."""
    with torch.no_grad():
        return ((model(bags) > 0).float() == y).float().mean().item()


def pooling_weights(
    model: BagClassifier, bags: Float[Tensor, "B T D"], y: Float[Tensor, " B"],
    needles: Bool[Tensor, "B T"],
) -> tuple[Float[Tensor, "P T"], Bool[Tensor, "P T"]]:
    """The Hopfield pooling's weights over the instances of the positive bags.

    Shapes:
        returns: the weights ``(P, T)`` of the ``P`` positive bags and their needles
        ``(P, T)``.
    """
    if model.pooling != "Hopfield pooling":
        raise ValueError(f"model must pool with Hopfield pooling, got {model.pooling!r}")
    positive = y.bool()
    with torch.no_grad():
        _, p = model.pool(model.encode(bags[positive]), return_weights=True)  # (P, 1, 1, T)
    return p[:, 0, 0], needles[positive]


def order_change(
    model: nn.Module, bags: Float[Tensor, "B T D"], order: Int[Tensor, " T"]
) -> float:
    """The largest change of a logit when every bag's instances are put in ``order``."""
    with torch.no_grad():
        return (model(bags) - model(bags[:, order])).abs().max().item()


@dataclass(frozen=True)
class NeedleRecord:
    """One trained classifier of the needle table."""

    seed: int
    needles: int  # needles per positive bag
    pooling: str
    accuracy: float  # on the 1,000 test bags
    # Hopfield pooling only (NaN for the others), over the positive test bags:
    weight_on_needles: float  # the median weight on the needles
    top_on_needle: float  # the share whose largest weight is on a needle
    order_change: float  # the largest change of a logit when the test bags are permuted
    logit_size: float  # the largest |logit| on the test bags
    seconds: float  # CPU time of the training


def needle_run(
    seed: int,
    needle_counts: Iterable[int] = NEEDLE_COUNTS,
    epochs: int = EPOCHS,
    num_train: int = 700,
    num_test: int = 1000,
    skip: Collection[tuple[int, str]] = (),
) -> tuple[list[NeedleRecord], dict, dict]:
    """Train the three classifiers of every needle count from ``seed``, on one thread.

    The seed draws the motif and the bags (:func:`~seqbook.utils.seeded_generator` of
    ``100 + seed``), the initial weights and batches (``seed``) and the permutation of
    the instances (``200 + seed``). The ``(k, pooling)`` pairs in ``skip`` are not
    trained; the others are the same runs as without ``skip``.

    Returns:
        The records (one per needle count and pooling), the models by
        ``(k, pooling)`` and the test sets ``(bags, y, needles)`` by ``k``.

    Example:
        >>> rows, models, tests = needle_run(0, needle_counts=[16], epochs=1,
        ...                                  num_train=50, num_test=20)
        >>> [row.pooling for row in rows], tuple(tests[16][0].shape)
        (['Hopfield pooling', 'mean pooling', 'LSTM'], (20, 64, 8))
    """
    records, models, test_sets = [], {}, {}
    with one_thread():
        data, shuffle = seeded_generator(100 + seed), seeded_generator(200 + seed)
        motif = F.normalize(torch.randn(D, generator=data), dim=0)
        for k in needle_counts:
            train_bags, train_y, _ = make_bags(num_train, k, motif, data)
            test_sets[k] = bags, y, needles = make_bags(num_test, k, motif, data)
            order = torch.randperm(T, generator=shuffle)
            for pooling in POOLINGS:
                if (k, pooling) in skip:
                    continue
                start = time.process_time()
                model = train_bag_classifier(pooling, train_bags, train_y, seed, epochs)
                seconds = time.process_time() - start
                models[k, pooling] = model
                on_needles = top = math.nan
                if pooling == "Hopfield pooling":
                    p, where = pooling_weights(model, bags, y, needles)
                    on_needles = (p * where).sum(1).median().item()
                    top = where.gather(1, p.argmax(1, keepdim=True)).float().mean().item()
                with torch.no_grad():
                    logit_size = model(bags).abs().max().item()
                records.append(NeedleRecord(
                    seed, k, pooling, bag_accuracy(model, bags, y), on_needles, top,
                    order_change(model, bags, order), logit_size, round(seconds, 2)))
    return records, models, test_sets


def needle_grid(seeds: Iterable[int] = SEEDS, log=None, **options) -> list[NeedleRecord]:
    """:func:`needle_run` for every seed (``options`` go to it); the records in order."""
    records = []
    for seed in seeds:
        rows, _, _ = needle_run(seed, **options)
        records += rows
        if log is not None:
            print(f"seed {seed}: " + ", ".join(
                f"{row.needles} {row.pooling} {100 * row.accuracy:.1f}%" for row in rows),
                file=log, flush=True)
    return records


def load_needle_table() -> list[NeedleRecord]:
    """The committed needle table (``results/needle.csv``).

    Example:
        >>> rows = load_needle_table()
        >>> len({row.seed for row in rows}), len(rows)
        (20, 120)
    """
    return load_table(RESULTS, NeedleRecord)


def main(argv: Sequence[str] | None = None) -> list[NeedleRecord]:
    """Train every classifier of every seed, write the table; returns its rows."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.experiments.needle",
        description="Hopfield pooling, mean pooling and an LSTM on bags with needles.")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(SEEDS))
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="a tiny run")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    options = dict(epochs=1, num_train=50, num_test=20) if args.smoke else {}
    records = needle_grid(args.seeds, log=sys.stderr, **options)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_table(records, args.out)
    record(args.out, "seqbook.experiments.needle", argv, threads=args.threads)
    print(f"wrote {len(records)} rows to {args.out}", file=sys.stderr)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
