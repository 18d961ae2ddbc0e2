r"""A stream of values to recall, with no resets: a task that needs forgetting.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features (``2 + M``), ``H``
hidden units, ``M`` distractor symbols.

Gers, Schmidhuber and Cummins (2000) showed why the LSTM needed a forget gate with
*continual* versions of its benchmark tasks: input streams that are never cut into
separate sequences, so that nothing ever resets the cells. This task does the same to
a recall task. The stream is a run of *episodes*; each opens with a marker and a real
value :math:`v \in [-1, 1]`, followed by random distractor symbols, and lasts between
``min_gap`` and ``max_gap`` steps (uniformly at random). At the last step of every
episode, just before the next marker arrives, the target is that episode's value;
there is no target elsewhere. A network must hold the current value for up to
``max_gap`` steps and replace it when the next one arrives, again and again, for as
long as the stream runs. The value is analog, so the old content has to be removed
precisely, not merely outvoted.

With ``continual=False`` every stream holds a single episode, which starts at
``t = 0`` from the network's zero state: the same episodes with a reset before each
one, the control that needs no forgetting.

:func:`value_stream_run` trains one layer on streams of the training length and
measures its error on streams of several lengths and on reset episodes.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int
from seqbook.experiments._common import one_thread
from seqbook.experiments.layers import LayerSpec, recurrent_layer
from seqbook.train import fit
from seqbook.utils import seed_everything, seeded_generator

__all__ = [
    "ValueStreamTask",
    "StepRegressor",
    "masked_mse",
    "rmse",
    "ValueStreamRecord",
    "value_stream_run",
]

#: Seed of the evaluation streams, the same for every model and seed.
EVAL_SEED = 5000
#: Streams per training batch of :func:`value_stream_run`.
STREAM_BATCH = 64


@dataclass(frozen=True)
class ValueStreamTask:
    r"""Streams of episodes; at each episode's end, recall the value that opened it.

    .. math::
        \mathbf{x}_t = (1, v, \mathbf{0}) \text{ if an episode starts at } t, \text{ else }
        (0, 0, \mathbf{1}_{d_t}), \qquad
        y_t = v_{\mathrm{start}(t)} \text{ if } t + 1 \text{ starts an episode},

    with values :math:`v` uniform in :math:`[-1, 1]`, distractors :math:`d_t` uniform
    among ``M`` symbols, episode lengths uniform in ``[min_gap, max_gap]``, and no
    target (NaN) at the other steps and after the last complete episode.

    Args:
        length: ``T``, steps per stream (> ``max_gap``, so that every stream completes
            at least one episode).
        min_gap, max_gap: shortest and longest episode, in steps
            (1 <= ``min_gap`` <= ``max_gap``).
        num_distractors: ``M`` (>= 1).
        continual: episodes follow each other for the whole stream (True), or every
            stream holds one episode from ``t = 0``, followed by distractors without a
            target (False: a reset before every episode).

    Shapes:
        x: ``(B, T, 2 + M)``, float32, drawn by ``task(batch, generator)``.
        y: ``(B, T)``, float32 targets, NaN where there is none.

    Example:
        >>> task = ValueStreamTask(length=60, min_gap=10, max_gap=20)
        >>> x, y = task(2, torch.Generator().manual_seed(0))
        >>> tuple(x.shape), tuple(y.shape)
        ((2, 60, 6), (2, 60))
        >>> starts = x[0, :, 0].nonzero().flatten()            # where episodes open
        >>> targets = (~y[0].isnan()).nonzero().flatten()
        >>> torch.equal(targets, starts[1:] - 1), torch.equal(y[0, targets], x[0, starts[:-1], 1])
        (True, True)
    """

    length: int = 120  # T, steps per stream
    min_gap: int = 10  # shortest episode
    max_gap: int = 20  # longest episode
    num_distractors: int = 4  # M, distractor symbols
    continual: bool = True  # False: one episode per stream (a reset before each)

    def __post_init__(self) -> None:
        check_positive_int("length", self.length)
        check_positive_int("min_gap", self.min_gap)
        # the longest episode: at least min_gap, and shorter than the stream (so that
        # every stream completes at least one episode)
        if check_int("max_gap", self.max_gap) < self.min_gap:
            raise ValueError(f"max_gap must be >= min_gap = {self.min_gap}, "
                             f"got {self.max_gap}")
        if self.max_gap >= self.length:
            raise ValueError(f"max_gap must be < length = {self.length} (the argument "
                             f"length), got {self.max_gap}")
        check_positive_int("num_distractors", self.num_distractors)

    @property
    def input_size(self) -> int:
        """The width ``2 + M`` of a step (marker, value, one-hot distractor)."""
        return 2 + self.num_distractors

    def __call__(
        self,
        batch: int,
        generator: torch.Generator,
    ) -> tuple[Float[Tensor, "B {self.length} {self.input_size}"],
               Float[Tensor, "B {self.length}"]]:
        """A fresh batch of streams drawn from ``generator``: ``(x, y)``."""
        check_positive_int("batch", batch)
        T, M = self.length, self.num_distractors
        distractors = torch.randint(0, M, (batch, T), generator=generator)  # (B, T)
        x = torch.cat([torch.zeros(batch, T, 2), F.one_hot(distractors, M).float()], dim=2)
        y = torch.full((batch, T), math.nan)  # (B, T)
        n = T // self.min_gap + 1 if self.continual else 1  # enough episodes to fill T
        gaps = torch.randint(self.min_gap, self.max_gap + 1, (batch, n), generator=generator)
        values = 2 * torch.rand(batch, n, generator=generator) - 1  # (B, n), in [-1, 1)
        starts = torch.cumsum(gaps, dim=1) - gaps  # (B, n): the first opens at t = 0
        b, k = (starts < T).nonzero(as_tuple=True)  # episodes that start inside
        x[b, starts[b, k]] = 0.0
        x[b, starts[b, k], 0] = 1.0  # the marker
        x[b, starts[b, k], 1] = values[b, k]  # the value
        ends = starts + gaps  # where the next episode starts
        b, k = (ends < T).nonzero(as_tuple=True)  # complete episodes
        y[b, ends[b, k] - 1] = values[b, k]
        return x, y  # (B, T, 2 + M), (B, T)


class StepRegressor(nn.Module):
    r"""A recurrent layer with a linear readout of one number at every step.

    .. math::
        \hat{y}_t = \mathbf{w}^\top \mathbf{y}_t + b

    Args:
        recurrent: a batch-first recurrent layer, ``recurrent(x)[0]`` of shape
            ``(B, T, H)``.
        hidden_size: ``H`` (>= 1).

    Shapes:
        x: ``(B, T, D)``, the input.
        predictions: ``(B, T)``, what the call returns.

    Example:
        >>> model = StepRegressor(nn.LSTM(6, 8, batch_first=True), 8)
        >>> model(torch.randn(2, 30, 6)).shape
        torch.Size([2, 30])
    """

    def __init__(
        self,
        recurrent: nn.Module,
        hidden_size: int,
    ) -> None:
        super().__init__()
        check_positive_int("hidden_size", hidden_size)
        self.rnn = recurrent
        self.readout = nn.Linear(hidden_size, 1)

    def forward(self, x: Float[Tensor, "B T D"]) -> Float[Tensor, "B T"]:
        return self.readout(self.rnn(x)[0])[..., 0]  # (B, T)


def masked_mse(
    model: nn.Module, batch: tuple[Float[Tensor, "B T D"], Float[Tensor, "B T"]]
) -> Float[Tensor, ""]:
    r"""Mean squared error at the steps with a target, for :func:`seqbook.train.fit`.

    .. math::
        L = \frac{1}{|\mathcal{T}|} \sum_{(b, t) \in \mathcal{T}} (\hat{y}_{b,t} - y_{b,t})^2,
        \qquad \mathcal{T} = \{(b, t) : y_{b,t} \text{ is not NaN}\}.

    Args:
        model: returns predictions ``(B, T)`` for ``x``.
        batch: ``(x, y)`` with targets ``y`` ``(B, T)``, NaN where there is none (at
            least one must be a number).

    Example:
        >>> model = StepRegressor(nn.RNN(6, 4, batch_first=True), 4)
        >>> x, y = ValueStreamTask(length=30)(3, torch.Generator().manual_seed(0))
        >>> masked_mse(model, (x, y)).dim()
        0
    """
    x, y = batch
    predictions = model(x)  # (B, T)
    if predictions.shape != y.shape:
        raise ValueError(
            f"y must have the predictions' shape {tuple(predictions.shape)}, got {tuple(y.shape)}"
        )
    labelled = ~torch.isnan(y)
    if not labelled.any():
        raise ValueError("y must hold at least one target (all entries are NaN)")
    return ((predictions[labelled] - y[labelled]) ** 2).mean()


def rmse(model: nn.Module, x: Float[Tensor, "B T D"], y: Float[Tensor, "B T"]) -> float:
    """Root mean squared error at the steps with a target, without gradients.

    Example:
        >>> model = StepRegressor(nn.RNN(6, 4, batch_first=True), 4)
        >>> x, y = ValueStreamTask(length=30)(3, torch.Generator().manual_seed(0))
        >>> rmse(model, x, y) > 0
        True
    """
    with torch.no_grad():
        return masked_mse(model, (x, y)).sqrt().item()


@dataclass(frozen=True)
class ValueStreamRecord:
    """One trained layer's errors: one row of the forgetting table."""

    label: str  # LayerSpec.label
    kind: str
    forget_gate: bool
    input_gate_bias: float
    forget_gate_bias: float
    update_gate_bias: float
    seed: int
    steps: int  # training steps
    train_length: int  # T of the training streams
    rmse_episodes: float  # one episode per stream, from a reset state
    rmse_train_length: float  # continual streams of the training length
    rmse_long: float  # continual streams of long_length steps
    long_length: int
    seconds: float  # CPU time of this process for the run

    @property
    def spec(self) -> LayerSpec:
        """The :class:`~seqbook.experiments.LayerSpec` of this row."""
        return LayerSpec(self.kind, self.forget_gate, self.input_gate_bias,
                         self.forget_gate_bias, self.update_gate_bias)


def value_stream_run(
    spec: LayerSpec,
    seed: int,
    steps: int = 300,
    train_length: int = 120,
    long_length: int = 2400,
    hidden_size: int = 32,
    lr: float = 0.01,
    eval_size: int = 50,
) -> tuple[ValueStreamRecord, StepRegressor]:
    r"""Train ``spec``'s layer on continual value streams; measure its error three ways.

    Seeds everything with ``seed``, builds the layer
    (:func:`~seqbook.experiments.recurrent_layer`) with a :class:`StepRegressor`, and
    trains it for ``steps`` steps of Adam (learning rate ``lr``, batches of
    ``STREAM_BATCH`` (64) fresh continual streams of ``train_length`` steps, gradient
    norm clipped at 1) on :func:`masked_mse`. Then it measures the root mean squared error
    :math:`\sqrt{L}` on ``eval_size`` fixed streams of each kind: single episodes from a
    reset state, continual streams of the training length, and continual streams of
    ``long_length`` steps. It runs on one CPU thread (restored afterwards), as the
    committed table was computed.

    Args:
        spec: the recurrent layer.
        seed: seeds the initialisation and the training streams (>= 0).
        steps: training steps (>= 1).
        train_length, long_length: stream lengths (> 20, the longest episode).
        hidden_size: units or blocks (>= 1).
        lr: Adam's learning rate.
        eval_size: streams per evaluation (>= 1).

    Returns:
        The :class:`ValueStreamRecord` and the trained model (a :class:`StepRegressor`).

    Example:
        >>> record, model = value_stream_run(LayerSpec("lstm"), seed=0, steps=2,
        ...                                  train_length=30, long_length=60, eval_size=4)
        >>> record.label, record.steps, isinstance(model, StepRegressor)
        ('LSTM', 2, True)
    """
    check_int("seed", seed, min_value=0)
    check_positive_int("steps", steps)
    check_positive_int("eval_size", eval_size)
    task = ValueStreamTask(train_length)
    long_task = ValueStreamTask(long_length)
    episodes = ValueStreamTask(task.max_gap + 1, continual=False)
    start = time.process_time()
    with one_thread():
        seed_everything(seed)
        model = StepRegressor(recurrent_layer(spec, task.input_size, hidden_size), hidden_size)
        generator = seeded_generator(seed)
        batches = lambda: (task(STREAM_BATCH, generator)  # fresh, lazily
                           for _ in range(steps))
        fit(model, masked_mse, batches, torch.optim.Adam(model.parameters(), lr=lr), epochs=1,
            clip=1.0, progress=False)
        rmse_episodes, rmse_train_length, rmse_long = (
            rmse(model, *problem(eval_size, seeded_generator(EVAL_SEED)))
            for problem in (episodes, task, long_task))
    record = ValueStreamRecord(
        spec.label, spec.kind, spec.forget_gate, spec.input_gate_bias, spec.forget_gate_bias,
        spec.update_gate_bias, seed, steps, train_length, rmse_episodes, rmse_train_length,
        rmse_long, long_length,
        round(time.process_time() - start, 2),
    )
    return record, model


def value_stream_grid(
    specs: Sequence[LayerSpec], seeds: Sequence[int], log=None, **kwargs
) -> list[ValueStreamRecord]:
    """:func:`value_stream_run` for every spec and seed (``kwargs`` go to each run)."""
    records = []
    for spec in specs:
        for seed in seeds:
            record, _ = value_stream_run(spec, seed, **kwargs)
            records.append(record)
            if log is not None:
                print(f"{spec.label:28s} seed={seed} episodes {record.rmse_episodes:.3f} "
                      f"T={record.train_length} {record.rmse_train_length:.3f} "
                      f"T={record.long_length} {record.rmse_long:.3f} {record.seconds:6.1f} s",
                      file=log, flush=True)
    return records
