r"""Train on fresh batches until a task is solved, or the budget is spent.

The recurrent chapters ask the same question of many networks: does it learn this task,
and how fast? :func:`train_until_solved` answers it with one protocol: Adam on batches
drawn fresh from the task, the gradient norm clipped, in rounds of ``check_every``
steps; after each round the accuracy on a fixed validation set decides whether to stop
(solved) or go on, up to ``max_steps``. The reported accuracy is on a separate test
set, so the stopping rule does not flatter it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeAlias

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_callable, check_int, check_positive_int, check_real
from seqbook.experiments.classifier import accuracy, classify_loss
from seqbook.train import fit
from seqbook.utils import seeded_generator

__all__ = ["SolveResult", "train_until_solved"]

#: A task: ``task(batch, generator) -> (x, y)``, e.g. a FirstSymbolTask.
Task: TypeAlias = Callable[
    [int, torch.Generator], tuple[Float[Tensor, "B T D"], Int[Tensor, "..."]]
]

#: Seeds of the validation and test sets: the same sets for every run and every seed.
VALID_SEED, TEST_SEED = 1000, 2000


@dataclass(frozen=True)
class SolveResult:
    """The outcome of :func:`train_until_solved`."""

    accuracy: float  # on the test set, after training
    steps: int  # optimizer steps taken
    solved: bool  # the validation accuracy reached the target

    def describe(self) -> str:
        """``"0.99 (75)"`` if solved (steps in brackets), else ``"0.42"``."""
        return f"{self.accuracy:.2f} ({self.steps})" if self.solved else f"{self.accuracy:.2f}"


def train_until_solved(
    model: nn.Module,
    task: Task,
    seed: int,
    max_steps: int = 150,
    lr: float = 0.01,
    target: float = 0.99,
    check_every: int = 25,
    batch_size: int = 64,
    valid_size: int = 500,
    test_size: int = 2000,
    clip: float | None = 1.0,
) -> SolveResult:
    r"""Adam in rounds of ``check_every`` steps until ``target`` validation accuracy.

    Each step draws a batch ``task(batch_size, generator)`` from a generator seeded with
    ``seed``, minimises :func:`~seqbook.experiments.classify_loss` with Adam (learning
    rate ``lr``), clipping the gradient norm at ``clip``:

    .. math::
        \theta \leftarrow \operatorname{Adam}\Big(\theta,\ \mathbf{g} \min\big(1,
        \tfrac{\tau}{\lVert \mathbf{g} \rVert}\big)\Big), \qquad
        \mathbf{g} = \nabla_\theta L.

    The validation set (``valid_size`` sequences) and the test set (``test_size``) are
    drawn from fixed seeds, the same for every model and every ``seed``.

    Args:
        model: returns class scores for the task's ``x`` (e.g.
            :class:`~seqbook.experiments.LastOutputClassifier`).
        task: ``task(batch, generator) -> (x, y)``, e.g. a
            :class:`~seqbook.experiments.FirstSymbolTask`.
        seed: seeds the training batches (>= 0); seed the model's initialisation
            yourself (:func:`~seqbook.utils.seed_everything`).
        max_steps: the budget of optimizer steps (>= ``check_every``).
        lr: Adam's learning rate (> 0).
        target: the validation accuracy that counts as solved, in ``(0, 1]``.
        check_every: steps between validations (>= 1).
        batch_size, valid_size, test_size: sequences per batch and per set (>= 1).
        clip: maximal gradient norm (> 0), or None.

    Returns:
        A :class:`SolveResult`: test accuracy, steps taken, and whether it was solved.

    Example:
        >>> from seqbook.experiments import FirstSymbolTask, LastOutputClassifier
        >>> task = FirstSymbolTask(length=3)
        >>> model = LastOutputClassifier(nn.LSTM(8, 4, batch_first=True), 4, 4)
        >>> result = train_until_solved(model, task, seed=0, max_steps=25, valid_size=50,
        ...                             test_size=50)
        >>> result.steps, 0.0 <= result.accuracy <= 1.0
        (25, True)
    """
    check_callable("task", task, signature="task(batch, generator)", nargs=2)
    check_int("seed", seed, min_value=0)
    check_positive_int("check_every", check_every)
    if check_int("max_steps", max_steps) < check_every:
        raise ValueError(f"max_steps must be >= check_every = {check_every}, got {max_steps}")
    check_real("lr", lr, min_value=0.0, strict_min=True)
    check_real("target", target, min_value=0.0, max_value=1.0, strict_min=True)
    for name, size in (("batch_size", batch_size), ("valid_size", valid_size),
                       ("test_size", test_size)):
        check_positive_int(name, size)
    if clip is not None:
        check_real("clip", clip, min_value=0.0, strict_min=True)
    generator = seeded_generator(seed)
    x_valid, y_valid = task(valid_size, seeded_generator(VALID_SEED))
    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    solved = False
    steps = 0
    while steps < max_steps and not solved:
        rounds = min(check_every, max_steps - steps)
        batches = [task(batch_size, generator) for _ in range(rounds)]
        fit(model, classify_loss, batches, optimizer, 1, clip, progress=False)
        steps += rounds
        solved = accuracy(model, x_valid, y_valid) >= target
    x_test, y_test = task(test_size, seeded_generator(TEST_SEED))
    return SolveResult(accuracy(model, x_test, y_test), steps, solved)
