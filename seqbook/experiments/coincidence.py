r"""The coincidence task of Widrich's lecture: were features 1 and 2 ever on together?

Shape letters: ``B`` batch, ``T`` time, ``D`` features (3).

The lecture's LSTM example classifies sequences of three binary features: class 0
when feature 1 and feature 2 are active at the same time. Its slides show the data
only as a picture; this is a concrete version. Every feature is on with probability
``p_on`` at every step, except that features 1 and 2 are never on together, with one
exception: in sequences of class 0 they are both on at exactly one random step.
Feature 3 is noise. The coincidence can happen at any step, so a network must detect
it and then remember it until the end of the sequence.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from jaxtyping import Float, Int
from torch import Tensor

from seqbook._checks import check_positive_int, check_real

__all__ = ["CoincidenceTask"]


@dataclass(frozen=True)
class CoincidenceTask:
    r"""Binary sequences labelled by whether features 1 and 2 coincide once.

    .. math::
        x_{t,d} \sim \mathrm{Bernoulli}(p) \text{ with } x_{t,1} x_{t,2} = 0,
        \qquad y = 0 \iff x_{\tau,1} = x_{\tau,2} = 1 \text{ at one step } \tau,

    with the label drawn uniformly, and :math:`\tau` uniform over the ``T`` steps for
    class 0.

    Args:
        length: ``T``, steps per sequence (>= 1).
        p_on: the probability that a feature is on at a step, in ``(0, 1)``.

    Shapes:
        x: ``(B, T, 3)``, float32 zeros and ones, drawn by ``task(batch, generator)``.
        y: ``(B,)``, int64 labels, 0 for a coincidence and 1 for none.

    Example:
        >>> x, y = CoincidenceTask(length=20)(6, torch.Generator().manual_seed(0))
        >>> both_on = (x[:, :, 0] * x[:, :, 1]).sum(dim=1)   # coincidences per sequence
        >>> bool(torch.equal(both_on, (y == 0).float()))
        True
    """

    length: int = 40  # T, steps per sequence
    p_on: float = 0.2  # chance that a feature is on at a step

    def __post_init__(self) -> None:
        check_positive_int("length", self.length)
        check_real("p_on", self.p_on, min_value=0.0, max_value=1.0, strict_min=True,
                   strict_max=True)

    @property
    def input_size(self) -> int:
        """3 features."""
        return 3

    @property
    def num_classes(self) -> int:
        """2 classes."""
        return 2

    def __call__(
        self,
        batch: int,
        generator: torch.Generator,
    ) -> tuple[Float[Tensor, "B {self.length} 3"], Int[Tensor, " B"]]:
        """A fresh batch drawn from ``generator``: ``(x, y)``."""
        check_positive_int("batch", batch)
        T = self.length
        x = (torch.rand(batch, T, 3, generator=generator) < self.p_on).float()  # (B, T, 3)
        x[:, :, 1] -= x[:, :, 0] * x[:, :, 1]  # no chance coincidences
        y = torch.randint(0, 2, (batch,), generator=generator)  # (B,)
        when = torch.randint(0, T, (batch,), generator=generator)  # (B,)
        rows = torch.nonzero(y == 0)[:, 0]
        x[rows, when[rows], :2] = 1.0  # the coincidence
        return x, y
