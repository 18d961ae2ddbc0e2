"""Teacher-forced against free-running accuracy of the sequence-to-sequence translators.

The chapter on sequence-to-sequence models trains a fixed-context and a Bahdanau
translator once, live; the same two models trained with seeds 0 to 4 (exactly as the
chapter trains them, with ``seed`` set to each) are measured by
:func:`~seqbook.experiments.translation.teacher_forcing_gap` on the test numbers, and
the table ``seqbook/experiments/results/teacher_forcing.csv`` was made with::

    python -m seqbook.experiments.teacher_forcing --threads 1

(about 15 s of CPU time per seed on one core). The same run writes
``teacher_forcing_by_length.csv``: the teacher-forced token accuracy and the share of
numbers with every token right in each source-length bin (:func:`length_records`), the
per-token control of exact match by length. ``--smoke`` runs a tiny version as a
test that the script works.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from jaxtyping import Bool
from torch import Tensor

from seqbook.data import NumberPair
from seqbook.experiments.results import (
    RESULTS_DIR,
    _table_options,
    _write_table,
    load_table,
    save_table,
)
from seqbook.experiments.translation import (
    LENGTH_BINS,
    _check_pairs,
    teacher_forced_right,
    teacher_forcing_gap,
)
from seqbook.experiments.translation_study import chapter_tasks
from seqbook.provenance import record
from seqbook.seq2seq import (
    TranslationTask,
    TranslatorConfig,
    evaluate_translator,
    train_translator,
)

__all__ = ["BY_LENGTH", "LengthRecord", "RESULTS", "TeacherForcingRecord",
           "length_records", "load_by_length_table", "load_teacher_forcing_table", "main",
           "teacher_forcing_record"]

#: The committed tables: one row per model and seed, and one per model, seed and bin.
RESULTS = RESULTS_DIR / "teacher_forcing.csv"
BY_LENGTH = RESULTS_DIR / "teacher_forcing_by_length.csv"
_MODULE = "seqbook.experiments.teacher_forcing"


@dataclass(frozen=True)
class TeacherForcingRecord:
    """One trained translator's accuracies on the test numbers."""

    model: str  # "plain" (one fixed context) or "bahdanau" (attention)
    seed: int
    exact_match: float  # share of translations exactly right (greedy search)
    teacher_forced: float  # next-token accuracy given the reference prefix
    free_running: float  # token accuracy of the greedy translation, position by position
    after_error_tokens: int  # reference tokens after a translation's first error
    after_error_teacher_forced: float  # teacher-forced accuracy on those tokens
    after_error_free_running: float  # free-running accuracy on those tokens


def teacher_forcing_record(model: torch.nn.Module, task: TranslationTask,
                           pairs: Sequence[NumberPair], hypotheses: Sequence[Sequence[str]],
                           name: str, seed: int) -> TeacherForcingRecord:
    """Measure a translator's greedy ``hypotheses`` of ``pairs`` into one record.

    Example:
        >>> from seqbook.seq2seq import build_translator, number_translation_task
        >>> task = number_translation_task("de", max_number=99, num_valid=5,
        ...                                num_test=5)
        >>> model = build_translator(task, TranslatorConfig(hidden_size=8))
        >>> pairs = task.splits.test
        >>> right = [task.target_tokens_of(p.target) for p in pairs]
        >>> row = teacher_forcing_record(model, task, pairs, right, "plain", 0)
        >>> row.exact_match, row.free_running, row.after_error_tokens
        (1.0, 1.0, 0)
    """
    gap = teacher_forcing_gap(model, task, pairs, hypotheses)
    teacher, free = gap.accuracies()
    after = gap.after_first_error
    n_after = int(after.sum())

    def share(correct: torch.Tensor) -> float:
        return correct[after].float().mean().item() if n_after else float("nan")

    references = [task.target_tokens_of(p.target) for p in pairs]
    exact = sum(list(h) == r for h, r in zip(hypotheses, references)) / len(pairs)
    return TeacherForcingRecord(name, seed, exact, teacher, free, n_after,
                                share(gap.teacher_forced), share(gap.free_running))


@dataclass(frozen=True)
class LengthRecord:
    """One trained translator's test numbers of one source-length bin."""

    model: str  # "plain" (one fixed context) or "bahdanau" (attention)
    seed: int
    shortest: int  # the bin's English source lengths, in word tokens, inclusive
    longest: int
    numbers: int  # test numbers in the bin
    tokens: int  # their reference tokens, <eos> included
    all_right: float  # share of the numbers with every teacher-forced token right
    teacher_forced: float  # teacher-forced token accuracy a over the bin's tokens
    independent: float  # all_right if tokens erred independently: mean of a ** L


def length_records(task: TranslationTask, pairs: Sequence[NumberPair],
                   teacher_forced: Bool[Tensor, " N"], name: str, seed: int,
                   bins: Sequence[tuple[int, int]] = LENGTH_BINS) -> list[LengthRecord]:
    r"""Per-token accuracy and all-right share of ``pairs`` by source length.

    ``teacher_forced`` is :func:`~seqbook.experiments.translation.teacher_forced_right`
    of ``pairs``: one bool per reference token (each target's tokens and its
    ``<eos>``), pair by pair. For each bin it gives the token accuracy :math:`a`, the
    share of numbers whose tokens are all right (greedy search translates exactly
    these numbers right), and what that share would be if every token were right
    independently with probability :math:`a`: the mean of :math:`a^{L_n}` over the
    bin's numbers, :math:`L_n` the tokens of number :math:`n`.

    Example:
        >>> from seqbook.seq2seq import number_translation_task
        >>> task = number_translation_task("de", max_number=99, num_valid=5,
        ...                                num_test=5)
        >>> pairs = task.splits.test
        >>> n = sum(len(task.target_tokens_of(p.target)) + 1 for p in pairs)
        >>> right = torch.ones(n, dtype=torch.bool)
        >>> row, = length_records(task, pairs, right, "plain", 0, bins=[(1, 3)])
        >>> row.numbers, row.all_right, row.teacher_forced, row.independent
        (5, 1.0, 1.0, 1.0)
    """
    _check_pairs(pairs, non_empty=True)
    sizes = [len(task.target_tokens_of(p.target)) + 1 for p in pairs]
    if teacher_forced.shape != (sum(sizes),):
        raise ValueError(f"teacher_forced must hold one bool per reference token of "
                         f"pairs, shape ({sum(sizes)},), got {tuple(teacher_forced.shape)}")
    per_pair = teacher_forced.cpu().split(sizes)
    lengths = [len(task.source_tokens(p.source)) for p in pairs]
    rows = []
    for lo, hi in bins:
        inside = [i for i, n in enumerate(lengths) if lo <= n <= hi]
        if not inside:
            continue
        right = torch.cat([per_pair[i] for i in inside])
        a = right.float().mean().item()
        rows.append(LengthRecord(
            name, seed, lo, hi, len(inside), len(right),
            sum(bool(per_pair[i].all()) for i in inside) / len(inside), a,
            sum(a ** sizes[i] for i in inside) / len(inside)))
    return rows


def load_by_length_table() -> list[LengthRecord]:
    """The committed by-length table of :func:`main` (``model`` x ``seed`` x bin)."""
    return load_table(BY_LENGTH, LengthRecord)


def load_teacher_forcing_table() -> list[TeacherForcingRecord]:
    """The committed table of :func:`main` (``model`` x ``seed``)."""
    return load_table(RESULTS, TeacherForcingRecord)


def main(argv: Sequence[str] | None = None) -> list[TeacherForcingRecord]:
    """Train both translators for every seed, measure them, write the table."""
    args = _table_options(argv, _MODULE, "Teacher-forced and free-running accuracy "
                          "over several seeds.", [0, 1, 2, 3, 4], RESULTS)
    de = chapter_tasks(**(dict(num_train=200, num_eval=50) if args.smoke else {}))["de"]
    test = de.splits.test
    records, lengths = [], []
    for seed in args.seeds:
        start = time.time()
        for name, attention in [("plain", False), ("bahdanau", True)]:
            config = TranslatorConfig(attention=attention, epochs=1 if args.smoke else 2,
                                      hidden_size=64, seed=seed)
            model, _ = train_translator(de, config, progress=False)
            result = evaluate_translator(model, de, test)
            records.append(teacher_forcing_record(model, de, test, result.hypotheses,
                                                  name, seed))
            lengths += length_records(de, test, teacher_forced_right(model, de, test),
                                      name, seed)
        print(f"seed {seed}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    _write_table(records, args, _MODULE, argv)
    by_length = Path(args.out).with_name(Path(args.out).stem + "_by_length.csv")
    save_table(lengths, by_length)
    record(by_length, _MODULE, argv, threads=args.threads)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
