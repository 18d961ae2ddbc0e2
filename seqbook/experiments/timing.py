r"""CPU timings that hold on a busy machine, and exact operation counts.

The recurrent chapters compare costs: BPTT against RTRL, the book's LSTM loop against
PyTorch's fused layer, a GRU against an LSTM. Wall-clock time counts the moments when
other programs have the processor; the CPU time of the calling thread
(``time.thread_time``) does not, so with PyTorch on one thread
(``torch.set_num_threads(1)``) it measures the work itself. The fastest of a few runs
is reported, because disturbances only ever add time. Operation counts
(:func:`count_flops`) are exact and disturbed by nothing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

import torch
from torch import nn
from torch.utils.flop_counter import FlopCounterMode

from seqbook._contracts import CallableAs, InstanceOf, PositiveInt, TensorOf

__all__ = ["fastest_cpu_times", "forward_backward", "forward_backward_ms", "count_flops"]


def fastest_cpu_times(
    runs: Sequence[Callable[[], object]],
    repeats: PositiveInt = 5,
) -> list[float]:
    r"""The fastest CPU time of this thread, in seconds, for each function of ``runs``.

    .. math::
        t_i = \min_{r = 1, \dots, R} \mathrm{cpu}(\texttt{runs[i]}()),

    timed in ``repeats`` rounds that each call every function once, so that no function
    is favoured by a quiet moment of the machine.

    Args:
        runs: functions without arguments.
        repeats: rounds ``R`` (>= 1).

    Returns:
        One time per function, in seconds.

    Example:
        >>> small, large = fastest_cpu_times([lambda: sum(range(10)),
        ...                                   lambda: sum(range(10**6))], repeats=3)
        >>> small < large
        True
    """
    runs = list(runs)
    if not runs or not all(callable(run) for run in runs):
        raise TypeError(
            f"runs must be a non-empty sequence of functions without arguments, got {runs!r}"
        )
    best = [float("inf")] * len(runs)
    for _ in range(repeats):
        for i, run in enumerate(runs):
            start = time.thread_time()
            run()
            best[i] = min(best[i], time.thread_time() - start)
    return best


def forward_backward(
    module: InstanceOf(nn.Module, what="a torch.nn.Module"),
    x: TensorOf(floating=True),
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


def forward_backward_ms(module: nn.Module, x: torch.Tensor, repeats: int = 3) -> float:
    """The fastest CPU time of this thread for a forward and backward pass, in ms.

    Args:
        module: a recurrent layer whose first output is ``(B, T, H)``.
        x: its input.
        repeats: runs to take the fastest of (>= 1).

    Example:
        >>> forward_backward_ms(nn.LSTM(2, 3, batch_first=True), torch.randn(1, 4, 2)) > 0
        True
    """
    (seconds,) = fastest_cpu_times([forward_backward(module, x)], repeats)
    return 1e3 * seconds


def count_flops(fn: CallableAs("a function without arguments", nargs=0)) -> int:
    """Floating-point operations of ``fn()``, counted by PyTorch's ``FlopCounterMode``.

    Only the operations the counter knows (matrix products, convolutions, attention)
    are counted; element-wise operations are not, and neither are fused kernels such
    as ``nn.LSTM``'s (count the book's own modules instead).

    Example:
        >>> count_flops(lambda: torch.randn(4, 5) @ torch.randn(5, 6))   # 2 * 4 * 5 * 6
        240
    """
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()
