r"""Parity: the state tracking that the sLSTM's memory mixing buys, measured.

Shape letters: ``B`` batch (one bit string each), ``T`` time, ``H`` hidden units.

The parity of a bit string is 1 if it holds an odd number of ones: a two-state
automaton that flips its state at every 1. The xLSTM paper (Beck et al., 2024) keeps
the sLSTM, whose gates read the previous output :math:`\mathbf{h}_{t-1}` through
recurrent matrices ("memory mixing"), for such state tracking; its formal-language
tasks include parity. Grazzi et al. (2025) prove that a linear recurrence of finite
precision whose transitions have only non-negative eigenvalues (the mLSTM's forget
gate, linear attention's identity) cannot compute parity at every length.

A one-layer model (:func:`parity_classifier`: the layer, then a readout at every step)
reads strings of ``TRAIN_LENGTH`` bits and is trained to say, after every bit, the
parity so far (:class:`ParityTask`); it is then tested on longer strings
(``TEST_LENGTHS``) by the parity of the whole string (:func:`parity_accuracy`).
The layers (``MODELS``): the sLSTM (:class:`~seqbook.xlstm.SLSTM`), the same sLSTM
with its recurrent matrix held at zero (no memory mixing), and the mLSTM and linear
attention mixers of :mod:`seqbook.language_model.mixers`. Five seeds of each take
longer than a chapter may run, so they are computed offline into
``seqbook/experiments/results/parity.csv`` (:func:`load_parity_table`)::

    python -m seqbook.experiments.parity --threads 1

(about two CPU-minutes on one core). ``--smoke`` runs a tiny version as a test that
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

from seqbook._checks import check_choice, check_int, check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.classifier import StepClassifier, classify_loss
from seqbook.experiments.results import RESULTS_DIR, _table_options, _write_table, load_table
from seqbook.language_model.mixers import MIXERS
from seqbook.utils import seed_everything, seeded_generator
from seqbook.xlstm import SLSTM

__all__ = [
    "RESULTS", "MODELS", "READOUTS", "HIDDEN", "TRAIN_LENGTH", "TEST_LENGTHS", "STEPS",
    "SEEDS", "ParityTask", "ParityRecord", "parity_classifier", "parity_accuracy",
    "parity_run", "parity_grid", "load_parity_table", "main",
]

#: The committed table.
RESULTS = RESULTS_DIR / "parity.csv"
#: The layers compared, by key, with their labels.
MODELS = {
    "slstm": "sLSTM",
    "slstm_no_mixing": "sLSTM, W_h = 0",
    "mlstm": "mLSTM",
    "linear": "linear attention",
}
#: The readouts: a linear map, or a small MLP (a control for the readout's power).
READOUTS = ("linear", "mlp")
#: Hidden units of every layer.
HIDDEN = 16
#: Training strings have this many bits (a target after every bit).
TRAIN_LENGTH = 16
#: Test strings: the parity of the whole string at each of these lengths.
TEST_LENGTHS = (2, 4, 8, 16, 32, 64, 128, 256)
#: Adam steps (learning rate 0.01, cosine decay, batches of 32 fresh strings).
STEPS = 600
#: The seeds of the table, for every model.
SEEDS = (0, 1, 2, 3, 4)
#: The (model, readout) pairs of the table.
GRID = (("slstm", "linear"), ("slstm_no_mixing", "linear"), ("mlstm", "linear"),
        ("linear", "linear"), ("mlstm", "mlp"), ("linear", "mlp"))


class ParityTask:
    r"""Random bit strings and their running parity.

    .. math::
        y_t = \Big(\sum_{s \le t} b_s\Big) \bmod 2

    Args:
        length: :math:`T`, bits per string.

    Returns (call with ``batch`` and ``generator``): the bits one-hot, ``x`` ``(B, T,
    2)``, and the parity after every bit, ``y`` ``(B, T)``.

    Example:
        >>> x, y = ParityTask(5)(2, torch.Generator().manual_seed(0))
        >>> bool((y == x[..., 1].long().cumsum(1) % 2).all()), tuple(x.shape)
        (True, (2, 5, 2))
    """

    def __init__(self, length: int) -> None:
        self.length = check_positive_int("length", length)

    def __call__(self, batch: int, generator: torch.Generator
                 ) -> tuple[Float[Tensor, "B T 2"], Int[Tensor, "B T"]]:
        check_positive_int("batch", batch)
        bits = torch.randint(0, 2, (batch, self.length), generator=generator)
        return F.one_hot(bits, 2).float(), bits.cumsum(1) % 2  # (B, T, 2), (B, T)


class _MixerLayer(nn.Module):
    """A mixer of :data:`~seqbook.language_model.mixers.MIXERS` behind an input
    projection, with the recurrent layers' protocol ``layer(x) -> (outputs, None)``."""

    def __init__(self, mixer: str, input_size: int, hidden_size: int) -> None:
        super().__init__()
        self.project = nn.Linear(input_size, hidden_size)
        self.mixer = MIXERS[mixer](hidden_size, 1)  # one head

    def forward(self, x: Tensor) -> tuple[Tensor, None]:
        return self.mixer(self.project(x)), None


def parity_classifier(model: str, hidden_size: int = HIDDEN,
                      readout: str = "linear") -> StepClassifier:
    r"""A layer of ``MODELS`` read out at every step into 2 classes.

    ``"slstm"``: :class:`~seqbook.xlstm.SLSTM`, whose gates see
    :math:`\mathbf{h}_{t-1}` through :math:`\mathbf{W}_h`; ``"slstm_no_mixing"``: the same
    layer with :math:`\mathbf{W}_h = 0`, held there (its gates see the input only);
    ``"mlstm"``, ``"linear"``: the mLSTM and linear attention mixers (one head) behind a
    linear projection of the bits. The readout is linear, or with ``readout="mlp"`` a
    hidden layer of :math:`4H` GELUs before it.

    Args:
        model: a key of ``MODELS``.
        hidden_size: :math:`H`.
        readout: ``"linear"`` or ``"mlp"``.

    Example:
        >>> net = parity_classifier("slstm_no_mixing", 8)
        >>> net(torch.zeros(3, 5, 2)).shape, bool(net.rnn.W_h.eq(0).all())
        (torch.Size([3, 5, 2]), True)
    """
    check_choice("model", model, tuple(MODELS))
    H = check_positive_int("hidden_size", hidden_size)
    check_choice("readout", readout, READOUTS)
    if model.startswith("slstm"):
        slstm = SLSTM(2, H)
        if model == "slstm_no_mixing":
            with torch.no_grad():
                slstm.W_h.zero_()
            slstm.W_h.requires_grad_(False)  # no memory mixing, ever
        layer: nn.Module = slstm
    else:
        layer = _MixerLayer(model, 2, H)
    net = StepClassifier(layer, H, 2)
    if readout == "mlp":
        mlp = nn.Sequential(nn.Linear(H, 4 * H), nn.GELU(), nn.Linear(4 * H, 2))
        net.readout = mlp  # type: ignore[assignment]
    return net


def parity_accuracy(net: nn.Module, length: int, strings: int = 512,
                    generator: torch.Generator | None = None) -> float:
    """The share of ``strings`` fresh strings of ``length`` bits whose parity ``net``
    names after the last bit.

    Example:
        >>> net = parity_classifier("mlstm", 4)
        >>> 0.0 <= parity_accuracy(net, 8, strings=16) <= 1.0
        True
    """
    check_positive_int("length", length)
    check_positive_int("strings", strings)
    x, y = ParityTask(length)(strings, generator or seeded_generator(0))
    was_training = net.training
    net.eval()
    with torch.no_grad():
        right = net(x)[:, -1].argmax(-1) == y[:, -1]
    net.train(was_training)
    return right.float().mean().item()


@dataclass(frozen=True)
class ParityRecord:
    """One trained model tested at one length."""

    model: str  # a key of MODELS
    readout: str  # "linear" or "mlp"
    seed: int
    hidden_size: int
    train_length: int
    steps: int
    train_loss: float  # mean cross-entropy over the last 50 steps
    test_length: int
    accuracy: float  # over 512 fresh strings of test_length bits
    seconds: float  # CPU time of the whole run (training and every test)


def parity_run(model: str, seed: int = 0, readout: str = "linear", steps: int = STEPS,
               test_lengths: Iterable[int] = TEST_LENGTHS) -> list[ParityRecord]:
    """Train :func:`parity_classifier` on strings of ``TRAIN_LENGTH`` bits, then
    test it at every length of ``test_lengths``; one record per length.

    Seeds everything with ``seed``; Adam at learning rate 0.01 with a cosine decay to
    zero, the gradient norm clipped at 1, a batch of 32 fresh strings every step, on
    one CPU thread; each length's test strings come from a generator of their own,
    seeded apart from training's (so a run at some of the lengths repeats their rows).

    Example:
        >>> rows = parity_run("linear", steps=2, test_lengths=(4,))
        >>> [(row.model, row.test_length) for row in rows]
        [('linear', 4)]
    """
    check_choice("model", model, tuple(MODELS))
    check_int("seed", seed, min_value=0)
    check_choice("readout", readout, READOUTS)
    check_positive_int("steps", steps)
    lengths = [check_positive_int("test_lengths", n) for n in test_lengths]
    if not lengths:
        raise ValueError("test_lengths must hold at least one length")
    start = time.thread_time()
    with one_thread():
        seed_everything(seed)
        net = parity_classifier(model, HIDDEN, readout)
        trained = [p for p in net.parameters() if p.requires_grad]
        optimizer = torch.optim.Adam(trained, lr=0.01)
        schedule = torch.optim.lr_scheduler.CosineAnnealingLR(optimizer, steps)
        task, generator, losses = ParityTask(TRAIN_LENGTH), seeded_generator(seed), []
        for _ in range(steps):
            loss = classify_loss(net, task(32, generator))
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(trained, 1.0)
            optimizer.step()
            schedule.step()
            losses.append(loss.item())
        # each length's strings from its own generator, apart from training's
        accuracies = [parity_accuracy(net, n, 512, seeded_generator(100_000 + 1_000 * n + seed))
                      for n in lengths]
    seconds = round(time.thread_time() - start, 2)
    train_loss = round(sum(losses[-50:]) / len(losses[-50:]), 4)
    return [ParityRecord(model, readout, seed, HIDDEN, TRAIN_LENGTH, steps, train_loss,
                         n, round(a, 4), seconds) for n, a in zip(lengths, accuracies)]


def parity_grid(grid: Iterable[tuple[str, str]] = GRID, seeds: Iterable[int] = SEEDS,
                steps: int = STEPS, log=None) -> list[ParityRecord]:
    """:func:`parity_run` for every (model, readout) of ``grid`` from every seed."""
    records, seeds = [], list(seeds)
    for model, readout in grid:
        for seed in seeds:
            rows = parity_run(model, seed, readout, steps)
            records += rows
            if log is not None:
                print(f"{model:16s} {readout:6s} seed={seed} "
                      + " ".join(f"{r.accuracy:.2f}" for r in rows)
                      + f" {rows[0].seconds:5.1f} s", file=log, flush=True)
    return records


def load_parity_table() -> list[ParityRecord]:
    """The committed table (``results/parity.csv``).

    Example:
        >>> rows = load_parity_table()
        >>> sorted({row.seed for row in rows}) == list(SEEDS)
        True
    """
    return load_table(RESULTS, ParityRecord)


def main(argv: Sequence[str] | None = None) -> list[ParityRecord]:
    """Train every (model, readout) of the grid from every seed; write the table."""
    args = _table_options(argv, "seqbook.experiments.parity",
                          "Parity with the sLSTM, the mLSTM and linear attention.",
                          SEEDS, RESULTS)
    grid, steps = (GRID[:1], 3) if args.smoke else (GRID, STEPS)
    records = parity_grid(grid, args.seeds, steps, log=sys.stderr)
    _write_table(records, args, "seqbook.experiments.parity", argv)
    return records


if __name__ == "__main__":  # pragma: no cover
    main()
