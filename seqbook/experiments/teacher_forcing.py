"""Teacher-forced against free-running accuracy of the sequence-to-sequence translators.

The chapter on sequence-to-sequence models trains a fixed-context and a Bahdanau
translator once, live; the same two models trained with seeds 0 to 4 (exactly as the
chapter trains them, with ``seed`` set to each) are measured by
:func:`~seqbook.experiments.translation.teacher_forcing_gap` on the test numbers, and
the table ``seqbook/experiments/results/teacher_forcing.csv`` was made with::

    python -m seqbook.experiments.teacher_forcing --threads 1

(about 15 s of CPU time per seed on one core). ``--smoke`` runs a tiny version as a
test that the script works.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import torch

from seqbook.data import NumberPair
from seqbook.experiments.results import RESULTS_DIR, load_table, save_table
from seqbook.experiments.translation import teacher_forcing_gap
from seqbook.experiments.translation_study import chapter_tasks
from seqbook.provenance import record
from seqbook.seq2seq import (
    TranslationTask,
    TranslatorConfig,
    evaluate_translator,
    train_translator,
)

__all__ = ["RESULTS", "TeacherForcingRecord", "load_teacher_forcing_table", "main",
           "teacher_forcing_record"]

#: The committed table.
RESULTS = RESULTS_DIR / "teacher_forcing.csv"


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


def load_teacher_forcing_table() -> list[TeacherForcingRecord]:
    """The committed table of :func:`main` (``model`` x ``seed``)."""
    return load_table(RESULTS, TeacherForcingRecord)


def main(argv: Sequence[str] | None = None) -> list[TeacherForcingRecord]:
    """Train both translators for every seed, measure them, write the table."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.experiments.teacher_forcing",
        description="Teacher-forced and free-running accuracy over several seeds.")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2, 3, 4])
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="a tiny run")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    de = chapter_tasks(**(dict(num_train=200, num_eval=50) if args.smoke else {}))["de"]
    test = de.splits.test
    records = []
    for seed in args.seeds:
        start = time.time()
        for name, attention in [("plain", False), ("bahdanau", True)]:
            config = TranslatorConfig(attention=attention, epochs=1 if args.smoke else 2,
                                      hidden_size=64, seed=seed)
            model, _ = train_translator(de, config, progress=False)
            result = evaluate_translator(model, de, test)
            records.append(teacher_forcing_record(model, de, test, result.hypotheses,
                                                  name, seed))
        print(f"seed {seed}: {time.time() - start:.0f} s", file=sys.stderr, flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_table(records, args.out)
    record(args.out, "seqbook.experiments.teacher_forcing", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
