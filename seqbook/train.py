"""A small, transparent training loop shared by the chapters.

It does what every chapter's training needs and nothing more: iterate over batches,
compute a loss, back-propagate, optionally clip the gradient norm, step the optimizer,
record what happened. Everything model-specific lives in ``loss_fn``.

:func:`fit`'s annotations are checked by :mod:`seqbook._typecheck` (with beartype; no
tensor shapes here for jaxtyping); what a type cannot say is checked in its body.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeAlias

import torch
from torch import Tensor, nn
from tqdm.auto import tqdm

from seqbook._checks import check_callable, check_device, check_positive_int, check_real
from seqbook.utils import Timer, to_device

__all__ = ["History", "fit"]


@dataclass
class History:
    """What :func:`fit` observed, for plotting and for the prose's numbers."""

    step_loss: list[float] = field(default_factory=list)  # one per optimizer step
    grad_norm: list[float] = field(default_factory=list)  # before clipping, per step
    epoch_loss: list[float] = field(default_factory=list)  # mean over each epoch's steps
    metrics: dict[str, list[float]] = field(default_factory=dict)  # from eval_fn, per epoch
    seconds: float = 0.0  # wall-clock time of the whole fit

    @property
    def final_loss(self) -> float:
        return self.epoch_loss[-1]


#: A re-iterable collection of batches, or a function returning a fresh iterable.
Batches: TypeAlias = Iterable[Any] | Callable[[], Iterable[Any]]


def _check_batches(name: str, batches: Batches) -> None:
    """A re-iterable collection of batches, or a function returning a fresh iterable."""
    if not callable(batches) and (isinstance(batches, (str, bytes))
                                  or not isinstance(batches, Iterable)):
        raise TypeError(f"{name} must be iterable, got {type(batches).__name__}")
    if not callable(batches) and iter(batches) is batches:  # a generator: empty from epoch 2
        raise TypeError(f"{name} must be re-iterable (a list, a DataLoader) or a function "
                        "returning an iterable; got a one-shot iterator")


def _check_loss(loss: object, epoch: int, step: int) -> None:
    """The loss of one step: a scalar tensor with a finite value."""
    if not isinstance(loss, torch.Tensor) or loss.dim() != 0:
        shape = f" of shape {tuple(loss.shape)}" if isinstance(loss, torch.Tensor) else ""
        raise TypeError(f"loss_fn must return a scalar tensor, got {type(loss).__name__}{shape}")
    if not math.isfinite(loss.item()):
        raise FloatingPointError(f"the loss became {loss.item()} at epoch {epoch}, step {step}; "
                                 "try a smaller learning rate or gradient clipping (clip=...)")


def fit(
    model: nn.Module,
    loss_fn: Callable[..., Tensor],
    batches: Batches,
    optimizer: torch.optim.Optimizer,
    epochs: int,
    clip: float | None = None,
    *,
    eval_fn: Callable[[nn.Module], dict[str, Any]] | None = None,
    device: torch.device | str | None = None,
    progress: bool = True,
    desc: str = "training",
) -> History:
    """Train ``model`` for ``epochs`` passes over ``batches`` and return the history.

    Each step computes ``loss = loss_fn(model, batch)``, back-propagates, records the
    gradient norm :math:`\\lVert \\nabla_\\theta L \\rVert_2`, rescales the gradient to norm
    ``clip`` if it is larger, and steps the optimizer.

    Args:
        model: the module to train (its parameters should be in ``optimizer``).
        loss_fn: ``loss_fn(model, batch)`` returns the scalar loss of one batch.
        batches: a re-iterable collection of batches (a list, a DataLoader), or a
            function returning a fresh iterable each epoch (to reshuffle).
        optimizer: any ``torch.optim`` optimizer.
        epochs: number of passes over the batches (>= 1).
        clip: maximal gradient norm (> 0), or ``None`` for no clipping.
        eval_fn: called after every epoch with the model in eval mode and without
            gradients; the dict it returns is appended to ``History.metrics``.
        device: where to move each batch; defaults to the device of the model's
            parameters.
        progress: show a ``tqdm`` progress bar (unless the environment sets
            ``TQDM_DISABLE=1``, as the book build does).
        desc: the progress bar's label.

    Returns:
        A :class:`History`.

    Raises:
        FloatingPointError: when a loss is NaN or infinite, naming the epoch and step.

    Example:
        >>> model = nn.Linear(1, 1)
        >>> data = [(torch.tensor([[1.0]]), torch.tensor([[2.0]]))] * 4
        >>> loss = lambda m, b: ((m(b[0]) - b[1]) ** 2).mean()
        >>> opt = torch.optim.SGD(model.parameters(), lr=0.1)
        >>> history = fit(model, loss, data, opt, epochs=20, progress=False)
        >>> history.final_loss < history.epoch_loss[0]
        True
    """
    check_callable("loss_fn", loss_fn, signature="loss_fn(model, batch)", nargs=2)
    _check_batches("batches", batches)
    check_positive_int("epochs", epochs)
    if clip is not None:
        check_real("clip", clip, min_value=0.0, strict_min=True)
    if eval_fn is not None:
        check_callable("eval_fn", eval_fn, signature="eval_fn(model) -> dict", nargs=1)
    device = check_device("device", device)
    if device is None:  # the model's device
        first = next(model.parameters(), None)
        device = first.device if first is not None else torch.device("cpu")
    history = History()
    parameters = [p for p in model.parameters() if p.requires_grad]
    with Timer() as timer:
        # Passing disable=False explicitly would override TQDM_DISABLE=1, which the
        # book build sets so that no progress widgets end up in the pages.
        bar = tqdm(range(epochs), desc=desc, **({} if progress else {"disable": True}))
        for epoch in bar:
            model.train()
            losses = []
            for step, batch in enumerate(batches() if callable(batches) else batches):
                loss = loss_fn(model, to_device(batch, device))
                _check_loss(loss, epoch, step)
                optimizer.zero_grad(set_to_none=True)
                loss.backward()
                # clip_grad_norm_ returns the norm before clipping; with max_norm=inf
                # it only measures.
                norm = nn.utils.clip_grad_norm_(parameters, clip if clip else math.inf)
                optimizer.step()
                losses.append(loss.item())
                history.grad_norm.append(float(norm))
            if not losses:
                raise ValueError("batches yielded no batch in an epoch")
            history.step_loss += losses
            history.epoch_loss.append(sum(losses) / len(losses))
            postfix = {"loss": f"{history.epoch_loss[-1]:.4f}"}
            if eval_fn is not None:
                model.eval()
                with torch.no_grad():
                    metrics = eval_fn(model)
                if not isinstance(metrics, dict):
                    raise TypeError("eval_fn must return a dict of metric names to numbers, "
                                    f"got {type(metrics).__name__}")
                for name, value in metrics.items():
                    history.metrics.setdefault(name, []).append(float(value))
                    postfix[name] = f"{float(value):.4f}"
            bar.set_postfix(postfix)
    history.seconds = timer.seconds
    return history
