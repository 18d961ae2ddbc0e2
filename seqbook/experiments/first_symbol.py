r"""The first-symbol task: a long time lag, and nothing else to learn.

Shape letters: ``B`` batch, ``T`` time, ``K`` signal symbols (the classes), ``M``
distractor symbols.

A sequence holds ``T`` one-hot symbols. The one at ``signal_position`` (the first, by
default) is one of ``K`` signal symbols; all others are drawn uniformly from ``M``
distractor symbols, which carry no information. After the last symbol the network must
name the signal. The only useful input lies ``T - signal_position`` steps before the
answer, so the task measures how far back a recurrent network can learn to look, as in
the long-time-lag experiments of Hochreiter and Schmidhuber (1997).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor

from seqbook._checks import check_int, check_positive_int

__all__ = ["FirstSymbolTask"]


@dataclass(frozen=True)
class FirstSymbolTask:
    r"""Sequences whose label is the one signal symbol among distractors.

    .. math::
        s_p \in \{0, \dots, K - 1\}, \qquad s_t \in \{K, \dots, K + M - 1\}
        \ (t \ne p), \qquad \mathbf{x}_t = \mathbf{1}_{s_t}, \qquad y = s_p,

    with :math:`p` = ``signal_position``, every symbol drawn uniformly and
    independently. Chance accuracy is :math:`1/K`.

    Args:
        length: ``T``, symbols per sequence (>= 1).
        num_signals: ``K``, signal symbols, which are also the classes (>= 2).
        num_distractors: ``M``, distractor symbols (>= 1).
        signal_position: where the signal sits, ``0 <= p < T`` (0: the first step, the
            longest lag).

    Shapes:
        x: ``(B, T, K + M)``, float32 one-hot rows, drawn by ``task(batch, generator)``.
        y: ``(B,)``, int64 labels in ``[0, K)``.

    Example:
        >>> task = FirstSymbolTask(length=10)
        >>> x, y = task(3, torch.Generator().manual_seed(0))
        >>> tuple(x.shape), bool((x[:, 0].argmax(-1) == y).all())
        ((3, 10, 8), True)
    """

    length: int  # T, symbols per sequence
    num_signals: int = 4  # K, signal symbols (the classes)
    num_distractors: int = 4  # M, distractor symbols
    signal_position: int = 0  # p, where the signal sits (0 = the first step)

    def __post_init__(self) -> None:
        check_positive_int("length", self.length)
        check_int("num_signals", self.num_signals, min_value=2)
        check_positive_int("num_distractors", self.num_distractors)
        check_int("signal_position", self.signal_position, min_value=0)
        if self.signal_position >= self.length:
            raise ValueError(f"signal_position must be < length = {self.length}, "
                             f"got {self.signal_position}")

    @property
    def input_size(self) -> int:
        """``K + M``, the width of a one-hot symbol."""
        return self.num_signals + self.num_distractors

    @property
    def num_classes(self) -> int:
        """``K``."""
        return self.num_signals

    @property
    def lag(self) -> int:
        """The steps from the signal to the last symbol, both counted (``T - p``)."""
        return self.length - self.signal_position

    def __call__(
        self,
        batch: int,
        generator: torch.Generator,
    ) -> tuple[Float[Tensor, "B {self.length} {self.input_size}"], Int[Tensor, " B"]]:
        """A fresh batch drawn from ``generator``: ``(x, y)``."""
        check_positive_int("batch", batch)
        K, M, p = self.num_signals, self.num_distractors, self.signal_position
        signal = torch.randint(0, K, (batch,), generator=generator)  # (B,)
        rest = torch.randint(K, K + M, (batch, self.length - 1), generator=generator)
        ids = torch.cat([rest[:, :p], signal[:, None], rest[:, p:]], dim=1)  # (B, T)
        return F.one_hot(ids, K + M).float(), signal  # (B, T, K + M), (B,)
