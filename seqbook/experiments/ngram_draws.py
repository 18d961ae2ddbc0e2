r"""N-gram letter models of the surnames, over many draws of the data: the table of the
chapter on sequences.

The chapter counts add-:math:`k` n-gram models (:class:`~seqbook.language_model.NgramLM`)
of the surnames' letters, each name followed by ``<eos>``, for the orders 1 to 5
(``ORDERS``). For each order the smoothing :math:`k` is chosen among 1, 0.1 and
0.01 (``KS``) by the perplexity on the validation names, and the chosen model is
measured on the training, validation and test names; how often the context of each
test character occurs in the training names is recorded too (``context_counts``).
:func:`ngram_draw` does this for one data set.

Which names are drawn for the data set and how they are split is random (the ``seed``
of :func:`~seqbook.data.surnames`), so the study is repeated on many draws
(``ngram_draw_grid``, seeds ``SEEDS``) into the table
``seqbook/experiments/results/ngram_draws.csv`` that the chapter loads
(``load_ngram_draw_table``); the chapter reruns its own data set, seed 0, live with
:func:`ngram_draw`. Counting and the perplexity's sums of logarithms run in Python's
double precision on every machine, so the live rerun repeats the table's row of seed 0
to the table's six significant digits anywhere. The table was made with::

    python -m seqbook.experiments.ngram_draws --threads 1

(about 2 minutes of CPU time on one core). ``--smoke`` runs a tiny version as a test
that the script works.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

from seqbook._checks import check_int, check_sequence
from seqbook.data import Splits, Vocab, surnames, tokenize
from seqbook.data.surnames import Surname
from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.language_model import NgramLM

__all__ = [
    "RESULTS", "SEEDS", "ORDERS", "KS", "NgramDrawRecord", "context_counts", "ngram_draw",
    "ngram_draw_grid", "load_ngram_draw_table", "main",
]

#: The committed table.
RESULTS = RESULTS_DIR / "ngram_draws.csv"
#: The draws of the data (seeds of :func:`~seqbook.data.surnames`); seed 0 is the
#: chapter's data set. Enough that a share of draws (how often the bigram is best on
#: validation) is known to a few per cent.
SEEDS = tuple(range(100))
#: The n-gram orders.
ORDERS = (1, 2, 3, 4, 5)
#: The smoothing counts k, chosen among on the validation names.
KS = (1.0, 0.1, 0.01)


@dataclass(frozen=True)
class NgramDrawRecord:
    """One order of :func:`ngram_draw` on one draw of the data."""

    seed: int  # the seed of surnames(): the draw and split of the names
    order: int  # n
    k: float  # the smoothing count chosen on the validation names
    vocab_size: int  # V, the training names' characters, specials included
    train_tokens: int  # characters of the training names, <eos> included
    train_perplexity: float
    valid_perplexity: float
    test_perplexity: float
    median_context_count: float  # median training count of a test character's context
    new_context_share: float  # share of test characters whose context training never saw
    seconds: float  # CPU time of this process for the order (all its k)


def context_counts(lm: NgramLM, sequences: Iterable[Sequence[int]]) -> np.ndarray:
    """How often each token's context (its ``n - 1`` predecessors, ``<bos>`` in front)
    occurs in ``lm``'s training sequences, for every token of ``sequences``.

    Example:
        >>> lm = NgramLM([[1, 2, 1, 3]], order=2, vocab_size=4)
        >>> context_counts(lm, [[1, 2, 3]]).tolist()   # contexts <bos>, 1, 2
        [1, 2, 1]
    """
    n, counts = lm.order, []
    for ids in sequences:
        padded = [lm.bos_id] * (n - 1) + list(ids)
        counts += [lm.context_counts[tuple(padded[t - n + 1:t])]
                   for t in range(n - 1, len(padded))]
    return np.array(counts)


def ngram_draw(data: Splits[Surname], seed: int = 0, orders: Sequence[int] = ORDERS,
               ks: Sequence[float] = KS) -> list[NgramDrawRecord]:
    """The n-gram study on one data set: one record per order.

    Builds the character :class:`~seqbook.data.Vocab` on ``data.train``, encodes every
    name with ``<eos>`` appended, counts an :class:`~seqbook.language_model.NgramLM`
    of each order for each ``k`` of ``ks``, keeps the one with the lowest validation
    perplexity and measures it on the three splits and by ``context_counts`` on the
    test names. ``seed`` only labels the records (the seed ``data`` was drawn with).

    Example:
        >>> rows = ngram_draw(surnames(["German", "Italian"], per_language=50), orders=[1, 2])
        >>> [row.order for row in rows], rows[1].test_perplexity < rows[0].test_perplexity
        ([1, 2], True)
    """
    check_int("seed", seed, min_value=0)
    check_sequence("orders", orders, what="a sequence of int n-gram orders", non_empty=True,
                   of=int)
    check_sequence("ks", ks, what="a sequence of smoothing counts", non_empty=True,
                   of=(int, float))
    chars = Vocab([tokenize(s.name) for s in data.train])
    train, valid, test = ([chars.encode(tokenize(s.name), add_eos=True) for s in split]
                          for split in data)
    records = []
    for n in orders:
        start = time.process_time()
        models = [NgramLM(train, n, len(chars), k, bos_id=chars.bos_id) for k in ks]
        best = min(models, key=lambda lm: lm.perplexity(valid))
        counts = context_counts(best, test)
        train_ppl, valid_ppl, test_ppl = (best.perplexity(split)
                                          for split in (train, valid, test))
        records.append(NgramDrawRecord(
            seed, n, best.smoothing, len(chars), sum(len(ids) for ids in train),
            train_ppl, valid_ppl, test_ppl, float(np.median(counts)),
            float(np.mean(counts == 0)), round(time.process_time() - start, 3)))
    return records


def ngram_draw_grid(seeds: Iterable[int] = SEEDS, orders: Sequence[int] = ORDERS,
                    ks: Sequence[float] = KS, log=None) -> list[NgramDrawRecord]:
    """:func:`ngram_draw` on ``surnames(seed=seed)`` for every seed.

    Example:
        >>> rows = ngram_draw_grid([3], orders=[1])
        >>> [(row.seed, row.order) for row in rows]
        [(3, 1)]
    """
    records: list[NgramDrawRecord] = []
    for seed in seeds:
        rows = ngram_draw(surnames(seed=seed), seed, orders, ks)
        records += rows
        if log is not None:
            valid = [round(row.valid_perplexity, 2) for row in rows]
            print(f"seed={seed} valid perplexity by order {valid} "
                  f"{sum(row.seconds for row in rows):5.2f} s", file=log, flush=True)
    return records


def load_ngram_draw_table() -> list[NgramDrawRecord]:
    """The committed table (``results/ngram_draws.csv``).

    Example:
        >>> rows = load_ngram_draw_table()
        >>> sorted({row.seed for row in rows}) == list(SEEDS)
        True
    """
    return load_table(RESULTS, NgramDrawRecord)


def main(argv: Sequence[str] | None = None) -> list[NgramDrawRecord]:
    """Run the study on every draw and write the table; returns its rows."""
    args = _table_options(argv, "seqbook.experiments.ngram_draws",
                          "N-gram letter models of the surnames, over many draws of the data.",
                          SEEDS, RESULTS)
    seeds = args.seeds[:2] if args.smoke else args.seeds
    records = ngram_draw_grid(seeds, (1, 2) if args.smoke else ORDERS, KS, log=sys.stderr)
    _write_table(records, args, "seqbook.experiments.ngram_draws", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
