"""Plotting helpers: training curves and labelled heatmaps (attention, confusion, masks)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypeAlias

import matplotlib.pyplot as plt
import numpy as np
import torch
from jaxtyping import Shaped
from matplotlib.axes import Axes
from matplotlib.ticker import MaxNLocator
from torch import Tensor

from seqbook._checks import check_sequence
from seqbook.train import History

__all__ = ["plot_history", "heatmap"]

#: What :func:`heatmap` draws: a 2-D tensor (of any dtype; moved to the CPU), or
#: anything NumPy reads as a 2-D array of numbers (checked in the body).
Matrix: TypeAlias = Shaped[Tensor, "rows cols"] | np.ndarray | Sequence[Any]


def plot_history(
    history: History,
    metrics: Sequence[str] = (),
    ax: Axes | None = None,
    log: bool = False,
) -> Axes:
    """Plot the per-step and per-epoch training loss, and chosen metrics per epoch.

    Args:
        history: what :func:`seqbook.train.fit` returned.
        metrics: names from ``history.metrics`` to draw on a second y axis.
        ax: the axes to draw on (a new figure by default).
        log: logarithmic loss axis.

    Returns:
        The axes of the loss curve.
    """
    check_sequence("metrics", metrics, what="a list of metric names", of=str)
    missing = [m for m in metrics if m not in history.metrics]
    if missing:
        raise ValueError(f"metrics {missing} not in history.metrics ({sorted(history.metrics)})")
    if ax is None:
        _, ax = plt.subplots(figsize=(6, 3.5))
    steps_per_epoch = len(history.step_loss) / max(len(history.epoch_loss), 1)
    step_epochs = np.arange(1, len(history.step_loss) + 1) / steps_per_epoch
    ax.plot(step_epochs, history.step_loss, color="C0", alpha=0.3, lw=0.8, label="loss per step")
    epochs = np.arange(1, len(history.epoch_loss) + 1)
    ax.plot(epochs, history.epoch_loss, "o-", color="C0", label="mean loss per epoch")
    ax.set_xlabel("epoch")
    ax.set_ylabel("training loss")
    if log:
        ax.set_yscale("log")
    handles, labels = ax.get_legend_handles_labels()
    if metrics:
        twin = ax.twinx()
        for i, name in enumerate(metrics, start=1):
            twin.plot(epochs, history.metrics[name], "s--", color=f"C{i}", label=name)
        twin.set_ylabel(", ".join(metrics))
        more_handles, more_labels = twin.get_legend_handles_labels()
        handles, labels = handles + more_handles, labels + more_labels
    ax.legend(handles, labels, loc="best", fontsize="small")
    return ax


def heatmap(
    matrix: Matrix,
    ax: Axes | None = None,
    xticklabels: Sequence[str] | None = None,
    yticklabels: Sequence[str] | None = None,
    xlabel: str | None = None,
    ylabel: str | None = None,
    title: str | None = None,
    cmap: str = "viridis",
    colorbar: bool = True,
    annotate: bool = False,
    fmt: str = ".2f",
    **imshow_kwargs: Any,
) -> Axes:
    """Draw a 2-D array as a heatmap with optional tick labels and cell annotations.

    Args:
        matrix: shape ``(rows, cols)``; a tensor is detached and moved to the CPU.
        ax: the axes to draw on (a new figure by default).
        xticklabels, yticklabels: one label per column / row.
        annotate: write each value in its cell with format ``fmt``.
        imshow_kwargs: passed to ``Axes.imshow`` (e.g. ``vmin``, ``vmax``).

    Returns:
        The axes.
    """
    values = matrix.detach().cpu().numpy() if isinstance(matrix, torch.Tensor) else matrix
    try:
        array = np.asarray(values)
    except (TypeError, ValueError):  # ragged nested lists
        array = np.asarray(None)
    numeric = np.issubdtype(array.dtype, np.number) or array.dtype == bool
    if not numeric or np.issubdtype(array.dtype, np.complexfloating):
        raise TypeError(f"matrix must be a 2-D array of numbers, got dtype {array.dtype}")
    if array.ndim != 2:
        raise ValueError(f"matrix must be 2-D, got shape {array.shape}")
    try:  # with an entry of the matrix's own dtype: "d" formats ints, not floats
        format(array.flat[0] if array.size else 1.0, fmt)
    except ValueError:
        raise ValueError(
            f"fmt must be a format spec for numbers such as '.2f', got {fmt!r}"
        ) from None
    rows, cols = array.shape
    for name, labels, size in (
        ("xticklabels", xticklabels, cols), ("yticklabels", yticklabels, rows)
    ):
        if labels is not None and (isinstance(labels, str) or not hasattr(labels, "__len__")):
            raise TypeError(f"{name} must be a list of labels, got {labels!r}")
        if labels is not None and len(labels) != size:
            what = "columns" if name == "xticklabels" else "rows"
            raise ValueError(
                f"{name} must have {size} entries (the {what} of matrix {array.shape}), "
                f"got {len(labels)}"
            )
    if ax is None:
        _, ax = plt.subplots(figsize=(max(3.0, 0.45 * cols + 1.5), max(2.5, 0.4 * rows + 1)))
    image = ax.imshow(array, cmap=cmap, aspect="auto", **imshow_kwargs)
    if xticklabels is not None:
        ax.set_xticks(range(cols), labels=list(xticklabels), rotation=90 if cols > 8 else 0)
    else:  # columns and rows are positions (time steps, units): whole-number ticks
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    if yticklabels is not None:
        ax.set_yticks(range(rows), labels=list(yticklabels))
    else:
        ax.yaxis.set_major_locator(MaxNLocator(integer=True))
    if annotate:
        for (r, c), value in np.ndenumerate(array):
            ax.text(c, r, format(value, fmt), ha="center", va="center", fontsize="x-small",
                    color=_ink_on(image.cmap(image.norm(value))))
    ax.set_xlabel(xlabel or "")
    ax.set_ylabel(ylabel or "")
    if title:
        ax.set_title(title)
    if colorbar:
        ax.figure.colorbar(image, ax=ax)
    return ax


def _ink_on(rgba) -> str:
    """Black or white, whichever reads on a cell of colour ``rgba``.

    By the cell's relative luminance (sRGB, ITU-R BT.709 weights), so that it holds for
    any colour map, dark-to-light or light-to-dark.
    """
    linear = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgba[:3]]
    luminance = 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]
    return "black" if luminance > 0.179 else "white"
