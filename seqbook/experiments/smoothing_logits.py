r"""The logits of a transformer translator trained without label smoothing: the
histograms that the transformer chapter's figure on label smoothing sets beside its
live, smoothed model.

The chapter trains one transformer live, with label smoothing :math:`\epsilon = 0.1`;
its twin with :math:`\epsilon = 0` is trained here instead, with the chapter's task,
configuration and code (:func:`smoothing_logit_histograms`), and only the histograms
of its teacher-forced logits on the test tokens are kept (:func:`logit_histograms`,
on the fixed bins ``GAP_EDGES`` and ``LEFTOVER_EDGES``), in
``seqbook/experiments/results/smoothing_logits.csv`` (:func:`load_smoothing_logits`).
The twin's summary numbers (median gap, mean confidence, token accuracy, BLEU) over
five seeds are in :mod:`seqbook.experiments.translation_study`. The table was made
with::

    python -m seqbook.experiments.smoothing_logits --threads 1

(about 15 seconds of CPU time per seed on one core). ``--smoke`` runs a tiny version as
a test that the script works.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import torch

from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.experiments.translation import token_statistics
from seqbook.experiments.translation_study import chapter_tasks
from seqbook.seq2seq import TranslationTask
from seqbook.transformer import TransformerConfig, train_transformer

__all__ = [
    "GAP_EDGES", "LEFTOVER_EDGES", "RESULTS", "SEEDS", "LogitHistogramRecord",
    "load_smoothing_logits", "logit_histograms", "main", "smoothing_logit_histograms",
]

#: The committed table.
RESULTS = RESULTS_DIR / "smoothing_logits.csv"
#: The seeds of the table (the chapter plots seed 0, its printed seed).
SEEDS = (0, 1, 2)
#: Bin edges of the gap between the top logit and the mean of the others (a gap
#: outside them is counted in the nearest end bin).
GAP_EDGES = tuple(float(x) for x in np.linspace(0.0, 12.0, 97))
#: Bin edges of one minus the confidence (the probability left to the other tokens);
#: values outside them are not counted.
LEFTOVER_EDGES = tuple(float(x) for x in np.logspace(-4, 0, 50))


@dataclass(frozen=True)
class LogitHistogramRecord:
    """One bin of one model's histogram."""

    label_smoothing: float  # the model's epsilon
    seed: int
    quantity: str  # "gap" or "leftover"
    low: float  # the bin's edges
    high: float
    count: int  # test tokens in the bin


def logit_histograms(
    confidence: torch.Tensor, gap: torch.Tensor
) -> dict[str, np.ndarray]:
    """The counts of :func:`~seqbook.experiments.translation.token_statistics`'
    ``gap`` on ``GAP_EDGES`` (clipped into their range) and of ``1 - confidence``
    on ``LEFTOVER_EDGES``.

    Example:
        >>> counts = logit_histograms(torch.tensor([0.9, 0.99]), torch.tensor([5., 30.]))
        >>> int(counts["gap"].sum()), int(counts["leftover"].sum())
        (2, 2)
    """
    gaps = np.clip(gap.double().numpy(), GAP_EDGES[0], GAP_EDGES[-1])
    leftover = 1 - confidence.double().numpy()
    return {"gap": np.histogram(gaps, bins=GAP_EDGES)[0],
            "leftover": np.histogram(leftover, bins=LEFTOVER_EDGES)[0]}


def smoothing_logit_histograms(
    task: TranslationTask, seed: int, label_smoothing: float = 0.0, epochs_scale: float = 1.0
) -> list[LogitHistogramRecord]:
    """Train the chapter's transformer (:class:`~seqbook.transformer.TransformerConfig`'s
    defaults, with ``label_smoothing`` and ``seed``) on ``task`` and return the
    :func:`logit_histograms` of its test tokens."""
    config = TransformerConfig(label_smoothing=label_smoothing, seed=seed)
    config.epochs = max(1, round(config.epochs * epochs_scale))
    model, _ = train_transformer(task, config, progress=False)
    confidence, _, gap = token_statistics(model, task, task.splits.test)
    records = []
    for quantity, counts in logit_histograms(confidence, gap).items():
        edges = GAP_EDGES if quantity == "gap" else LEFTOVER_EDGES
        records += [LogitHistogramRecord(label_smoothing, seed, quantity, edges[i],
                                         edges[i + 1], int(n))
                    for i, n in enumerate(counts)]
    return records


def load_smoothing_logits(
    seed: int = 0, label_smoothing: float = 0.0
) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The committed histograms of one model: ``{quantity: (counts, edges)}``.

    Example:
        >>> counts, edges = load_smoothing_logits()["gap"]
        >>> len(edges) == len(counts) + 1 == len(GAP_EDGES)
        True
    """
    rows = [r for r in load_table(RESULTS, LogitHistogramRecord)
            if r.seed == seed and r.label_smoothing == label_smoothing]
    out = {}
    for quantity in ("gap", "leftover"):
        mine = [r for r in rows if r.quantity == quantity]
        edges = np.array([r.low for r in mine] + [mine[-1].high])
        out[quantity] = (np.array([r.count for r in mine]), edges)
    return out


def main(argv: Sequence[str] | None = None) -> list[LogitHistogramRecord]:
    """Train the unsmoothed transformer from every seed and write the table."""
    args = _table_options(argv, "seqbook.experiments.smoothing_logits",
                          "Histograms of an unsmoothed transformer's logits.", SEEDS,
                          RESULTS)
    task = chapter_tasks(**(dict(num_train=200, num_eval=50) if args.smoke else {}))["de"]
    records: list[LogitHistogramRecord] = []
    seeds: Iterable[int] = args.seeds
    for seed in seeds:
        start = time.process_time()
        records += smoothing_logit_histograms(task, seed,
                                              epochs_scale=0.25 if args.smoke else 1.0)
        print(f"seed {seed}: {time.process_time() - start:.1f} s", file=sys.stderr,
              flush=True)
    _write_table(records, args, "seqbook.experiments.smoothing_logits", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
