r"""Experiment 1 of the LSTM chapter: small LSTMs on the coincidence task, from ten seeds.

Shape letters: ``B`` batch, ``T`` time (40), ``H`` blocks.

The chapter trains the 1997 LSTM (no forget gate, input-gate bias :math:`-2`) with one
and with two blocks on the :class:`~seqbook.experiments.CoincidenceTask`, plots the
cell states of a network that solved it, and tests what the plots suggest with
ablations over every network that solved it:

- one block (:func:`one_block_probe`): the input gate and the cell input at the
  coincidence, how much more the cell changes there than at any other step and than
  in the twin sequence without coincidence, the output gate, the drift of the cell
  after the jump, and the drift and test accuracy with the feedback into the cell
  input cut (:math:`\mathbf{W}_{hg} = 0`);
- two blocks (:func:`blocks_alone`): the test accuracy of each block with the other
  block's final output replaced by its average.

Ten seeds of each take longer than a chapter may run, so the runs and their
ablations are computed offline (:func:`coincidence_grid`) into the table
``seqbook/experiments/results/coincidence.csv`` that the chapter loads
(:func:`load_coincidence_table`); the chapter trains the networks it plots live,
with the same :func:`coincidence_run`. The table was made with::

    python -m seqbook.experiments.coincidence_study --threads 1

(about 15 s of CPU time on one core). ``--smoke`` runs a tiny version as a test that
the script works.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.classifier import LastOutputClassifier, accuracy
from seqbook.experiments.coincidence import CoincidenceTask
from seqbook.experiments.results import RESULTS_DIR, load_table, save_table
from seqbook.experiments.until_solved import TEST_SEED, SolveResult, train_until_solved
from seqbook.provenance import record
from seqbook.recurrent import LSTM
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "RESULTS", "TOY_TASK", "TOY_SEEDS", "COINCIDENCE_STEP", "CoincidenceRecord",
    "coincidence_run", "twin_sequences", "coincidence_test_set", "one_block_probe",
    "blocks_alone", "coincidence_grid", "load_coincidence_table", "main",
]

#: The committed table.
RESULTS = RESULTS_DIR / "coincidence.csv"
#: The chapter's task: sequences of 40 steps.
TOY_TASK = CoincidenceTask(length=40)
#: The seeds of the table, for one and for two blocks.
TOY_SEEDS = tuple(range(10))
#: The step of the coincidence in the twin sequences (counting from 0).
COINCIDENCE_STEP = 12


def coincidence_run(
    blocks: int,
    seed: int,
    task: CoincidenceTask = TOY_TASK,
    max_steps: int = 400,
    lr: float = 0.03,
) -> tuple[LastOutputClassifier, SolveResult]:
    """Train an LSTM of ``blocks`` blocks without forget gate (input-gate bias -2) and a
    readout on ``task`` until it is solved, as the fused ``nn.LSTM`` of ``to_torch()``.

    Seeds everything with ``seed`` and trains with
    :func:`~seqbook.experiments.train_until_solved` (Adam at ``lr``, batches of 64,
    99% on 500 validation sequences or ``max_steps`` steps, the accuracy on 2,000 test
    sequences), on one CPU thread (restored afterwards).

    Returns:
        The trained model (its ``rnn`` is the ``nn.LSTM``) and its
        :class:`~seqbook.experiments.SolveResult`.

    Example:
        >>> model, result = coincidence_run(1, seed=0, task=CoincidenceTask(5),
        ...                                 max_steps=25)
        >>> result.steps, model.rnn.hidden_size
        (25, 1)
    """
    check_positive_int("blocks", blocks)
    check_int("seed", seed, min_value=0)
    with one_thread():
        seed_everything(seed)
        lstm = LSTM(task.input_size, blocks, forget_gate=False, input_gate_bias=-2.0)
        model = LastOutputClassifier(lstm.to_torch(), blocks, task.num_classes)  # fused
        result = train_until_solved(model, task, seed, max_steps=max_steps, lr=lr)
    return model, result


def twin_sequences(task: CoincidenceTask = TOY_TASK, step: int = COINCIDENCE_STEP
                   ) -> Float[Tensor, "2 T 3"]:
    """Two sequences with the same noise: the first of class 1 (no coincidence), the
    second with a coincidence added at ``step`` (class 0).

    Shapes:
        returns: ``(2, T, 3)``.

    Example:
        >>> twin = twin_sequences(CoincidenceTask(20), step=5)
        >>> (twin[:, :, 0] * twin[:, :, 1]).sum(dim=1).tolist()
        [0.0, 1.0]
    """
    check_int("step", step, min_value=0, max_value=task.length - 1)
    xs, ys = task(8, seeded_generator(5))
    twin = xs[ys == 1][:1].repeat(2, 1, 1)  # (2, T, 3), class 1 twice
    twin[1, step, :2] = 1.0  # class 0: the coincidence
    return twin


def coincidence_test_set(task: CoincidenceTask = TOY_TASK
                         ) -> tuple[Float[Tensor, "B T 3"], Int[Tensor, " B"]]:
    """The 2,000 test sequences of :func:`~seqbook.experiments.train_until_solved`."""
    return task(2000, seeded_generator(TEST_SEED))


def one_block_probe(model: LastOutputClassifier, twin: Float[Tensor, "2 T 3"],
                    x_test: Float[Tensor, "B T_test 3"], y_test: Int[Tensor, " B"],
                    step: int = COINCIDENCE_STEP) -> dict[str, float]:
    """The write at the coincidence of a one-block network, and what W_hg = 0 changes.

    Copies the trained ``nn.LSTM`` into :class:`~seqbook.recurrent.LSTM` and traces the
    ``twin`` sequences (:func:`twin_sequences`): the input gate and :math:`|g_t|` at
    ``step`` in the class-0 twin, the cell's change from ``step - 1`` to ``step`` over
    its largest change at any other step and the class-1 twin's largest change over
    that jump, the mean output gate, the drift :math:`|c_T - c_{step + 1}|`, and the
    drift and test accuracy with the cell input's recurrent weights zeroed.

    Returns:
        ``input_gate``, ``cell_input``, ``jump_ratio``, ``twin_ratio``,
        ``output_gate``, ``drift``, ``drift_cut``, ``accuracy`` and ``accuracy_cut``.
    """
    check_int("step", step, min_value=1, max_value=twin.shape[1] - 2)
    if not isinstance(model.rnn, nn.LSTM):
        raise TypeError("model.rnn must be the nn.LSTM of coincidence_run, got "
                        f"{type(model.rnn).__name__}")
    ours = LSTM.from_torch(model.rnn, forget_gate=False)
    cut = LSTM.from_torch(model.rnn, forget_gate=False)
    with torch.no_grad():
        cut.get_parameter("W_hg").zero_()  # no feedback from h_{t-1} into g_t
        trace, cut_trace = ours.trace(twin), cut.trace(twin)
    cut_model = LastOutputClassifier(cut.to_torch(), 1, model.readout.out_features)
    cut_model.readout = model.readout
    change = trace.cell_state[..., 0].diff(dim=1).abs()  # (2, T - 1)
    jump = change[1, step - 1]  # c_{step - 1} -> c_step
    others = torch.cat([change[1, :step - 1], change[1, step:]])
    c, c_cut = trace.cell_state[1, :, 0], cut_trace.cell_state[1, :, 0]  # (T,)
    return {"input_gate": trace.input_gate[1, step, 0].item(),
            "cell_input": trace.cell_input[1, step, 0].abs().item(),
            "jump_ratio": (jump / others.max()).item(),
            "twin_ratio": (change[0].max() / jump).item(),
            "output_gate": trace.output_gate[1, :, 0].mean().item(),
            "drift": (c[-1] - c[step + 1]).abs().item(),
            "drift_cut": (c_cut[-1] - c_cut[step + 1]).abs().item(),
            "accuracy": accuracy(model, x_test, y_test),
            "accuracy_cut": accuracy(cut_model, x_test, y_test)}


def blocks_alone(model: LastOutputClassifier, x_test: Float[Tensor, "B T 3"],
                 y_test: Int[Tensor, " B"]) -> list[float]:
    """The test accuracy of each block of a two-block network on its own: the other
    block's final output replaced by its average over the test sequences.

    Returns:
        ``[block 1 alone, block 2 alone]``.
    """
    with torch.no_grad():
        y_T = model.rnn(x_test)[0][:, -1]  # (B, 2)
        alone = []
        for other in (1, 0):  # flatten block 2, then block 1
            flat = y_T.clone()
            flat[:, other] = y_T[:, other].mean()  # no information
            scores = model.readout(flat)  # (B, 2)
            alone.append((scores.argmax(1) == y_test).float().mean().item())
    return alone


@dataclass(frozen=True)
class CoincidenceRecord:
    """One trained network of the coincidence table, with its ablations."""

    blocks: int
    seed: int
    max_steps: int
    accuracy: float  # test accuracy after training
    steps: int  # training steps taken
    solved: bool  # validation accuracy reached 99%
    seconds: float  # CPU time of this process for the training
    # one block (NaN for two): one_block_probe
    input_gate: float  # input gate at the coincidence
    cell_input: float  # |g_t| at the coincidence
    jump_ratio: float  # the jump at the coincidence / the largest change elsewhere
    twin_ratio: float  # the class-1 twin's largest change / the jump
    output_gate: float  # mean output gate over the class-0 twin
    drift: float  # |c_T - c_13|
    drift_cut: float  # the same with W_hg = 0
    accuracy_cut: float  # test accuracy with W_hg = 0
    # two blocks (NaN for one): blocks_alone
    block_1_alone: float
    block_2_alone: float


_PROBES = ("input_gate", "cell_input", "jump_ratio", "twin_ratio", "output_gate", "drift",
           "drift_cut", "accuracy_cut")


def coincidence_grid(
    seeds: Iterable[int] = TOY_SEEDS,
    blocks: Iterable[int] = (1, 2),
    task: CoincidenceTask = TOY_TASK,
    max_steps: int = 400,
    log=None,
) -> list[CoincidenceRecord]:
    """:func:`coincidence_run` for every size in ``blocks`` from every seed, each with
    its ablation (:func:`one_block_probe` for one block, :func:`blocks_alone` for two).

    Example:
        >>> rows = coincidence_grid([0], task=CoincidenceTask(20), max_steps=25)
        >>> [(row.blocks, row.steps, math.isnan(row.block_1_alone)) for row in rows]
        [(1, 25, True), (2, 25, False)]
    """
    twin, (x_test, y_test) = twin_sequences(task), coincidence_test_set(task)
    records = []
    for size in blocks:
        for seed in seeds:
            start = time.process_time()
            model, result = coincidence_run(size, seed, task, max_steps=max_steps)
            seconds = time.process_time() - start
            probe = dict.fromkeys(_PROBES, math.nan)
            alone = [math.nan, math.nan]
            with one_thread():
                if size == 1:
                    probe.update(one_block_probe(model, twin, x_test, y_test))
                elif size == 2:
                    alone = blocks_alone(model, x_test, y_test)
            records.append(CoincidenceRecord(
                size, seed, max_steps, result.accuracy, result.steps, result.solved,
                round(seconds, 2), *(probe[name] for name in _PROBES), *alone))
            if log is not None:
                print(f"{size} block(s) seed={seed} {result.describe():>12s} "
                      f"{seconds:6.1f} s", file=log, flush=True)
    return records


def load_coincidence_table() -> list[CoincidenceRecord]:
    """The committed coincidence table (``results/coincidence.csv``).

    Example:
        >>> rows = load_coincidence_table()
        >>> [sum(row.blocks == size for row in rows) for size in (1, 2)]
        [10, 10]
    """
    return load_table(RESULTS, CoincidenceRecord)


def main(argv: Sequence[str] | None = None) -> list[CoincidenceRecord]:
    """Train and probe every network, write the table; returns its rows."""
    parser = argparse.ArgumentParser(
        prog="python -m seqbook.experiments.coincidence_study",
        description="One and two LSTM blocks on the coincidence task, with ablations.")
    parser.add_argument("--seeds", type=int, nargs="+", default=list(TOY_SEEDS))
    parser.add_argument("--threads", type=int, default=1, help="torch CPU threads")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--smoke", action="store_true", help="a tiny run")
    args = parser.parse_args(argv)
    torch.set_num_threads(args.threads)
    torch.set_flush_denormal(True)  # as the chapter runs
    task = CoincidenceTask(length=20) if args.smoke else TOY_TASK
    records = coincidence_grid(args.seeds, task=task, max_steps=25 if args.smoke else 400,
                               log=sys.stderr)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    save_table(records, args.out)
    record(args.out, "seqbook.experiments.coincidence_study", argv, threads=args.threads)
    print(f"wrote {len(records)} rows to {args.out}", file=sys.stderr)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
