r"""CPU timings that hold on a busy machine, and exact operation counts.

The recurrent chapters compare costs: BPTT against RTRL, the book's LSTM loop against
PyTorch's fused layer, a GRU against an LSTM. Wall-clock time counts the moments when
other programs have the processor; the CPU time of the calling thread
(``time.thread_time``) does not, so with PyTorch on one thread
(``torch.set_num_threads(1)``) it measures the work itself. The fastest of a few runs
is reported, because disturbances only ever add time (:func:`seqbook.costs.cpu_seconds`,
the book's one CPU timer). Operation counts (:func:`seqbook.costs.count_flops`) are
exact and disturbed by nothing.
"""

from __future__ import annotations

from collections.abc import Callable

import torch  # noqa: F401  (the examples use it)
from jaxtyping import Float
from torch import Tensor, nn

from seqbook.costs.measure import cpu_seconds

__all__ = ["forward_backward", "forward_backward_ms"]


def forward_backward(
    module: nn.Module,
    x: Float[Tensor, "..."],
) -> Callable[[], None]:
    r"""A function running ``module(x)`` and back-propagating the sum of its outputs.

    .. math::
        L = \sum_{b,t,h} \mathbf{y}_{b,t,h}, \qquad \text{then } \nabla_\theta L

    (the parameters' ``.grad`` accumulate).

    Args:
        module: a recurrent layer whose first output is ``(B, T, H)``.
        x: its input.

    Example:
        >>> run = forward_backward(nn.GRU(2, 3, batch_first=True), torch.randn(1, 4, 2))
        >>> run()
    """
    def run() -> None:
        module(x)[0].sum().backward()

    return run


def forward_backward_ms(module: nn.Module, x: Float[Tensor, "..."], repeats: int = 3) -> float:
    """The fastest CPU time of this thread for a forward and backward pass, in ms.

    Args:
        module: a recurrent layer whose first output is ``(B, T, H)``.
        x: its input.
        repeats: runs to take the fastest of (>= 1).

    Example:
        >>> forward_backward_ms(nn.LSTM(2, 3, batch_first=True), torch.randn(1, 4, 2)) > 0
        True
    """
    (seconds,) = cpu_seconds([forward_backward(module, x)], repeats)
    return 1e3 * seconds
