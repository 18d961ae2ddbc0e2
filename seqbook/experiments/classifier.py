r"""A recurrent layer with a linear readout, its loss and its accuracy.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units,
``C`` classes.

The recurrent chapters compare layers (an RNN, LSTMs, GRUs; the book's own modules or
PyTorch's fused ones) on the same tasks, so the model around them is always the same:
a readout :math:`\mathbf{W}_{hy}\mathbf{y}_t + \mathbf{b}_y` of the layer's outputs,
at the last step (:class:`LastOutputClassifier`, one label per sequence) or at every
step (:class:`StepClassifier`, a label per step, ``-100`` where there is none). Only
the outputs are used, never the final state, so any layer following the book's
recurrent-module protocol fits (``layer(x) -> (outputs, state)`` with batch-first
``outputs``).
"""

from __future__ import annotations

from typing import TypeAlias

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_positive_int
from seqbook.experiments._common import IGNORE

__all__ = ["LastOutputClassifier", "StepClassifier", "classify_loss", "accuracy"]

#: Labels: one per sequence, or one per step (``-100`` where there is none).
Labels: TypeAlias = Int[Tensor, " B"] | Int[Tensor, "B T"]


class LastOutputClassifier(nn.Module):
    r"""A recurrent layer read out after the last step.

    .. math::
        \hat{\mathbf{y}} = \mathbf{W}_{hy} \mathbf{y}_T + \mathbf{b}_y

    (class scores, before the softmax).

    Args:
        recurrent: a batch-first recurrent layer, ``recurrent(x)[0]`` of shape
            ``(B, T, H)`` (e.g. ``nn.LSTM(..., batch_first=True)`` or
            :class:`~seqbook.recurrent.LSTM`).
        hidden_size: ``H``, the width of its outputs (>= 1).
        num_classes: ``C`` (>= 2).

    Shapes:
        x: ``(B, T, D)``, the input.
        scores: ``(B, C)``, what the call returns.

    Example:
        >>> model = LastOutputClassifier(nn.GRU(3, 8, batch_first=True), 8, 2)
        >>> model(torch.randn(5, 12, 3)).shape
        torch.Size([5, 2])
    """

    def __init__(
        self,
        recurrent: nn.Module,
        hidden_size: int,
        num_classes: int,
    ) -> None:
        super().__init__()
        check_positive_int("hidden_size", hidden_size)
        check_positive_int("num_classes", num_classes)
        if getattr(recurrent, "batch_first", True) is not True:
            raise ValueError("recurrent must be batch-first (batch_first=True), "
                             "as the book's layers are")
        self.rnn = recurrent
        self.readout = nn.Linear(hidden_size, num_classes)

    def forward(self, x: Float[Tensor, "B T D"]) -> Float[Tensor, "B C"]:
        return self.readout(self.rnn(x)[0][:, -1])  # (B, C)


class StepClassifier(LastOutputClassifier):
    r"""A recurrent layer read out at every step.

    .. math::
        \hat{\mathbf{y}}_t = \mathbf{W}_{hy} \mathbf{y}_t + \mathbf{b}_y,
        \qquad t = 1, \dots, T.

    Args:
        recurrent, hidden_size, num_classes: as for :class:`LastOutputClassifier`.

    Shapes:
        x: ``(B, T, D)``, the input.
        scores: ``(B, T, C)``, what the call returns.

    Example:
        >>> model = StepClassifier(nn.LSTM(3, 8, batch_first=True), 8, 4)
        >>> model(torch.randn(5, 12, 3)).shape
        torch.Size([5, 12, 4])
    """

    def forward(self, x: Float[Tensor, "B T D"]) -> Float[Tensor, "B T C"]:
        return self.readout(self.rnn(x)[0])  # (B, T, C)


def _scores_and_labels(
    model: nn.Module, x: Tensor, y: Tensor
) -> tuple[Tensor, Tensor]:
    """The model's scores and the labels, one row per labelled position: ``(N, C)``,
    ``(N,)``."""
    scores = model(x)  # (B, C) or (B, T, C)
    if scores.dim() != y.dim() + 1 or scores.shape[:-1] != y.shape:
        raise ValueError(
            f"y must hold one label per score vector: scores have shape {tuple(scores.shape)}, "
            f"so y needs shape {tuple(scores.shape[:-1])}; got {tuple(y.shape)}"
        )
    return scores.reshape(-1, scores.shape[-1]), y.reshape(-1)  # (N, C), (N,)


def classify_loss(
    model: nn.Module, batch: tuple[Float[Tensor, "B T D"], Labels]
) -> Float[Tensor, ""]:
    r"""Mean cross-entropy of ``model`` on ``batch = (x, y)``, for :func:`seqbook.train.fit`.

    .. math::
        L = -\frac{1}{N} \sum_{n:\, y_n \ne -100}
            \log \operatorname{softmax}(\hat{\mathbf{y}}_n)_{y_n}

    over the labelled positions ``n`` (all of them for one label per sequence).

    Args:
        model: returns scores ``(B, C)`` or ``(B, T, C)`` for ``x``.
        batch: ``(x, y)`` with labels ``y`` ``(B,)`` or ``(B, T)`` (``-100``: no label).

    Example:
        >>> model = LastOutputClassifier(nn.RNN(2, 4, batch_first=True), 4, 3)
        >>> loss = classify_loss(model, (torch.randn(6, 5, 2), torch.tensor([0, 1, 2] * 2)))
        >>> loss.dim(), bool(loss > 0)
        (0, True)
    """
    x, y = batch
    scores, labels = _scores_and_labels(model, x, y)
    return F.cross_entropy(scores, labels, ignore_index=IGNORE)


def accuracy(model: nn.Module, x: Float[Tensor, "B T D"], y: Labels) -> float:
    r"""Share of labelled positions where the highest score is the label.

    .. math::
        \mathrm{acc} = \frac{|\{n : y_n \ne -100,\ \arg\max \hat{\mathbf{y}}_n = y_n\}|}
                            {|\{n : y_n \ne -100\}|}

    computed without gradients.

    Args:
        model: returns scores ``(B, C)`` or ``(B, T, C)`` for ``x``.
        x: inputs ``(B, T, D)``.
        y: labels ``(B,)`` or ``(B, T)``, ``-100`` where there is none (at least one
            position must be labelled).

    Example:
        >>> model = LastOutputClassifier(nn.RNN(2, 4, batch_first=True), 4, 3)
        >>> 0.0 <= accuracy(model, torch.randn(6, 5, 2), torch.zeros(6, dtype=torch.long)) <= 1.0
        True
    """
    with torch.no_grad():
        scores, labels = _scores_and_labels(model, x, y)
        labelled = labels != IGNORE
        if not labelled.any():
            raise ValueError("y must label at least one position (all entries are -100)")
        return (scores.argmax(-1)[labelled] == labels[labelled]).float().mean().item()
