r"""Multi-query associative recall: what each token mixer can look up, measured.

Arora et al. (2024, "Zoology") measure the gap between attention and its recurrent
replacements on one synthetic task: a sequence of key-value pairs, then the keys
again, each asking for its value. A model with a fixed-size state must hold every
pair in that state; attention looks them up in its cache. This module draws that task
(:class:`AssociativeRecallTask`), trains a :class:`~seqbook.language_model.MixerLM` on
it (:func:`recall_run`), and writes the table that part VI's last chapter loads::

    python -m seqbook.experiments.recall --threads 1

(``--smoke``: a fast test that the script runs; ``--help``: the options.)
"""

from __future__ import annotations

import argparse
import csv
import statistics
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from jaxtyping import Int
from torch import Tensor

from seqbook._checks import check_choice, check_int, check_positive_int, check_real
from seqbook.experiments._common import IGNORE, one_thread
from seqbook.language_model.mixers import MIXERS, MixerLM, state_floats
from seqbook.provenance import record
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "RESULTS",
    "AssociativeRecallTask",
    "RecallRecord",
    "load_recall_table",
    "main",
    "recall_accuracy",
    "recall_run",
]

RESULTS = Path(__file__).parent / "results" / "recall.csv"


class AssociativeRecallTask:
    r"""Multi-query associative recall (MQAR, Arora et al., 2023).

    Each sequence holds ``num_pairs`` pairs :math:`k_1 v_1 \dots k_N v_N` (distinct
    keys, values drawn with replacement), then every key once more in a random order;
    at each of those queries the model must name its value. Keys are tokens
    ``0 .. num_keys - 1`` and values ``num_keys .. num_keys + num_values - 1``.

    Args:
        num_pairs: :math:`N \le` ``num_keys``.
        num_keys, num_values: the sizes of the two vocabularies.

    Returns (call with ``batch`` and ``generator``): ``ids`` ``(batch, 3N)`` and
    ``targets`` ``(batch, 3N)``, the value at each query position and ``-100``
    (ignored) elsewhere.

    Example:
        >>> task = AssociativeRecallTask(num_pairs=2, num_keys=4, num_values=4)
        >>> ids, targets = task(1, torch.Generator().manual_seed(0))
        >>> ids.shape, int((targets != -100).sum())
        (torch.Size([1, 6]), 2)
    """

    def __init__(
        self,
        num_pairs: int,
        num_keys: int = 64,
        num_values: int = 64,
    ) -> None:
        check_positive_int("num_pairs", num_pairs)
        if check_int("num_keys", num_keys) < num_pairs:
            raise ValueError(f"num_keys must be >= num_pairs = {num_pairs}, got {num_keys}")
        check_positive_int("num_values", num_values)
        self.num_pairs = num_pairs
        self.num_keys = num_keys
        self.num_values = num_values
        self.vocab_size = num_keys + num_values

    def __call__(self, batch: int, generator: torch.Generator
                 ) -> tuple[Int[Tensor, "B T"], Int[Tensor, "B T"]]:
        check_positive_int("batch", batch)
        N = self.num_pairs
        keys = torch.rand(batch, self.num_keys, generator=generator)
        keys = keys.argsort(1)[:, :N]  # N distinct keys per sequence
        values = self.num_keys + torch.randint(
            self.num_values, (batch, N), generator=generator
        )
        # the queries' order
        order = torch.rand(batch, N, generator=generator).argsort(1)
        # k1 v1 k2 v2 ...
        pairs = torch.stack([keys, values], dim=2).reshape(batch, 2 * N)
        ids = torch.cat([pairs, keys.gather(1, order)], dim=1)  # (eq-mqar)
        targets = torch.full_like(ids, IGNORE)
        targets[:, 2 * N:] = values.gather(1, order)
        return ids, targets


@dataclass(frozen=True)
class RecallRecord:
    """One training run: the model, the task, and the recall it reached."""

    mixer: str
    num_pairs: int
    d_model: int
    seed: int
    steps: int
    params: int
    state_floats: int  # per layer, when the last query is read
    accuracy: float  # on 1,024 fresh sequences
    cpu_seconds: float


def recall_run(
    mixer: str,
    num_pairs: int,
    d_model: int = 64,
    seed: int = 0,
    steps: int = 1000,
    batch_size: int = 32,
    lr: float = 3e-3,
    num_layers: int = 1,
    eval_sequences: int = 1024,
) -> RecallRecord:
    """Train a one-block :class:`~seqbook.language_model.MixerLM` on
    :class:`AssociativeRecallTask` and score it.

    Adam at ``lr`` with a cosine decay to zero, gradient norm clipped at 1, fresh
    sequences every step, on one CPU thread; accuracy over the queries of
    ``eval_sequences`` sequences drawn from a generator seeded apart from training's.
    """
    check_choice("mixer", mixer, MIXERS)
    for name, size in (("steps", steps), ("batch_size", batch_size),
                       ("eval_sequences", eval_sequences)):
        check_positive_int(name, size)
    check_real("lr", lr, min_value=0.0, strict_min=True)
    task = AssociativeRecallTask(num_pairs)
    seed_everything(seed)
    model = MixerLM(task.vocab_size, d_model, mixer, num_layers=num_layers)
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
    generator = seeded_generator(seed)
    start = time.thread_time()
    with one_thread():
        for _ in range(steps):
            ids, targets = task(batch_size, generator)
            loss = F.cross_entropy(model(ids).transpose(1, 2), targets)
            optimizer.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            optimizer.step()
            schedule.step()
        accuracy = recall_accuracy(model, task, eval_sequences, seeded_generator(10_000 + seed))
    return RecallRecord(
        mixer, num_pairs, d_model, seed, steps,
        params=sum(p.numel() for p in model.parameters()),
        state_floats=state_floats(mixer, d_model, position=3 * num_pairs),
        accuracy=round(accuracy, 4), cpu_seconds=round(time.thread_time() - start, 2))


def recall_accuracy(model: MixerLM, task: AssociativeRecallTask, sequences: int,
                    generator: torch.Generator) -> float:
    """The share of queries whose value is the model's top score."""
    was_training = model.training
    model.eval()
    ids, targets = task(sequences, generator)
    asked = targets != IGNORE
    with torch.no_grad():
        right = (model(ids).argmax(-1) == targets)[asked]
    model.train(was_training)
    return right.float().mean().item()


def load_recall_table(path: Path = RESULTS) -> list[dict]:
    """The rows written by ``python -m seqbook.experiments.recall`` (the committed table)."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(
            f"no recall table at {path}; run python -m seqbook.experiments.recall")
    with path.open(encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    types = {name: type(value) for name, value in asdict(
        RecallRecord("", 0, 0, 0, 0, 0, 0, 0.0, 0.0)).items()}
    return [{k: types[k](v) for k, v in row.items()} for row in rows]


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m seqbook.experiments.recall",
                                     description="Multi-query associative recall, every mixer.")
    parser.add_argument("--mixers", nargs="+", default=list(MIXERS), choices=list(MIXERS))
    parser.add_argument("--pairs", type=int, nargs="+", default=[4, 8, 16, 32],
                        help="numbers of pairs at the width --width")
    parser.add_argument("--width", type=int, default=64)
    parser.add_argument("--widths", type=int, nargs="*", default=[16, 32],
                        help="further widths, at --state-pairs pairs (the state-size sweep)")
    parser.add_argument("--state-pairs", type=int, default=16)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="a fast test: 2 runs of 5 steps")
    args = parser.parse_args(argv)
    if args.smoke:
        args.mixers, args.pairs, args.widths, args.seeds, args.steps = (
            ["softmax", "lstm"], [2], [], [0], 5)
    return args


def main(argv: Sequence[str] | None = None) -> list[RecallRecord]:
    """Run the grid (pairs at one width, then widths at one pair count); write the table."""
    args = parse_args(argv)
    torch.set_num_threads(args.threads)
    grid = [(p, args.width) for p in args.pairs] + [(args.state_pairs, w) for w in args.widths]
    records = []
    for num_pairs, width in grid:
        for mixer in args.mixers:
            runs = [recall_run(mixer, num_pairs, width, seed, args.steps) for seed in args.seeds]
            records += runs
            accuracies = [r.accuracy for r in runs]
            print(f"{mixer:8s} pairs={num_pairs:3d} d={width:4d} accuracy "
                  f"{statistics.mean(accuracies):.3f} {accuracies} "
                  f"{sum(r.cpu_seconds for r in runs):.0f} s", flush=True)
    rows = [asdict(r) for r in records]
    if args.out.is_file():  # keep the rows of other mixers or budgets (a run may split the grid)
        rows = [r for r in load_recall_table(args.out)
                if r["mixer"] not in args.mixers or r["steps"] != args.steps] + rows
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with args.out.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    record(args.out, "seqbook.experiments.recall", argv, threads=1,  # recall_run: 1 thread
           rows=f"mixers {' '.join(args.mixers)}, {args.steps} steps")
    return records


if __name__ == "__main__":
    main()
