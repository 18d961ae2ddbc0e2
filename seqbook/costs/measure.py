r"""Measuring what a layer costs: operations, time, memory, sequential steps, path length.

Shape letters: ``B`` batch, ``n`` sequence length, ``d`` width.

Each function measures one column of Vaswani et al.'s Table 1 on a real layer:
:func:`count_flops` the floating-point operations (complexity per layer),
:func:`cpu_seconds` the time, :func:`count_operations` the operations run one after
the other (sequential operations), :func:`path_length` the number of layers or steps a
signal needs to travel from the first position to the last (maximum path length), and
:func:`power_law_exponent` the slope :math:`p` of a cost :math:`\propto n^p` on
log-log axes. The memory a layer keeps for its backward pass is measured by
:func:`seqbook.recurrent.activation_bytes`.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import torch
from jaxtyping import Float
from torch import Tensor
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from seqbook._checks import check_callable, check_int, check_positive_int, check_sequence

__all__ = ["count_flops", "count_operations", "cpu_seconds", "path_length", "power_law_exponent"]


def count_flops(fn: Callable[[], Any]) -> int:
    """The floating-point operations of ``fn()`` counted by PyTorch's ``FlopCounterMode``.

    Matrix products count 2 operations per multiply-add; element-wise operations
    (softmax, tanh, additions) are not counted.

    Example:
        >>> a, b = torch.randn(8, 16), torch.randn(16, 4)
        >>> count_flops(lambda: a @ b)          # 2 * 8 * 16 * 4
        1024
    """
    with FlopCounterMode(display=False) as counter:
        fn()
    return counter.get_total_flops()


class _OperationCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.operations = 0

    def __torch_dispatch__(self, func: Any, types: Any, args: tuple = (),
                           kwargs: dict | None = None) -> Any:
        self.operations += 1
        return func(*args, **(kwargs or {}))


def count_operations(fn: Callable[[], Any]) -> int:
    """How many tensor operations ``fn()`` dispatches.

    Counts every operation that reaches PyTorch's dispatcher (``aten::mm``,
    ``aten::tanh``, views such as ``aten::t``), wherever it was called from: the
    Python loop of :class:`~seqbook.recurrent.RNN` and the C++ loop inside
    ``nn.RNN`` alike. (It uses ``TorchDispatchMode``, the mechanism PyTorch's own
    ``FlopCounterMode`` is built on.) A layer that loops over time runs a number of
    operations proportional to the sequence length; a layer that processes all
    positions at once runs a fixed number. The count says nothing about which
    operations wait for which: it is not the length of the critical path.

    Example:
        >>> x = torch.randn(4, 3)
        >>> count_operations(lambda: torch.tanh(x @ x.T))   # t, mm, tanh
        3
    """
    with _OperationCounter() as counter:
        fn()
    return counter.operations


def cpu_seconds(fns: Sequence[Callable[[], Any]], repeats: int = 3) -> list[float]:
    """The fastest of ``repeats`` runs of each function, in CPU seconds of this thread.

    The functions are run in rounds (all once, then all again, ...), so that a busy
    moment of the machine is not charged to one of them only. CPU time, unlike wall
    time, does not count the moments when other programs have the processor.

    Example:
        >>> fast, slow = cpu_seconds([lambda: sum(range(10)), lambda: sum(range(10**6))])
        >>> fast < slow
        True
    """
    check_sequence("fns", fns, what="a sequence of callables")
    for i, fn in enumerate(fns):
        check_callable(f"fns[{i}]", fn)
    check_positive_int("repeats", repeats)
    best = [math.inf] * len(fns)
    for _ in range(repeats):
        for i, fn in enumerate(fns):
            start = time.thread_time()
            fn()
            best[i] = min(best[i], time.thread_time() - start)
    return best


def path_length(
    output_at_depth: Callable[[Tensor, int], Tensor],
    x: Float[Tensor, "B n d"],
    max_depth: int,
) -> int:
    r"""The smallest depth at which the last output depends on the first input.

    For depths :math:`D = 1, 2, \dots` it computes :math:`\mathbf{y} =`
    ``output_at_depth(x, D)`` and the gradient of the last position's output,
    :math:`\partial \sum_i y_{n,i} / \partial \mathbf{x}_1`, and returns the first
    :math:`D` at which the gradient is not exactly zero: the number of layers (for a
    stack) or of recurrent steps the signal from position 1 must pass through to
    reach position :math:`n`.

    Args:
        output_at_depth: maps ``x`` and a depth to the outputs ``(B, n, d)``.
        x: the inputs ``(B, n, d)``.
        max_depth: the largest depth to try.

    Returns:
        The depth, or ``max_depth + 1`` if even ``max_depth`` does not connect them.

    Example:
        >>> x = torch.randn(1, 5, 2)
        >>> shift = lambda x, D: torch.nn.functional.pad(x, (0, 0, D, 0))[:, :5]
        >>> path_length(shift, x, max_depth=10)     # y_t = x_{t-D}: x_1 reaches y_5 at D = 4
        4
    """
    check_callable("output_at_depth", output_at_depth, signature="output_at_depth(x, depth)",
                   nargs=2)
    check_positive_int("max_depth", max_depth)
    for depth in range(1, max_depth + 1):
        x_req = x.detach().clone().requires_grad_(True)
        y = output_at_depth(x_req, depth)
        (grad,) = torch.autograd.grad(y[:, -1].sum(), x_req, allow_unused=True)
        if grad is not None and bool(grad[:, 0].abs().max() > 0):
            return depth
    return max_depth + 1


def power_law_exponent(
    sizes: Sequence[float],
    costs: Sequence[float],
    last: int = 3,
) -> float:
    r"""The exponent :math:`p` of :math:`\text{cost} \propto \text{size}^p`, fitted on the largest
    sizes.

    A least-squares line through :math:`(\log \text{size}, \log \text{cost})` for the
    ``last`` largest sizes: on log-log axes a power law is a straight line of slope
    :math:`p`. Small sizes are left out because fixed costs (Python, launching each
    operation) dominate them.

    Example:
        >>> round(power_law_exponent([1, 2, 4, 8], [3, 12, 48, 192]), 6)
        2.0
    """
    check_int("last", last, min_value=2)
    if len(sizes) != len(costs) or len(sizes) < last:
        raise ValueError(f"sizes and costs must have the same length, at least last={last}; "
                         f"got {len(sizes)} and {len(costs)}")
    if min(sizes) <= 0 or min(costs) <= 0:
        raise ValueError("sizes and costs must be positive (their logarithms are fitted)")
    order = np.argsort(sizes)[-last:]
    x = np.log(np.asarray(sizes, dtype=float)[order])
    y = np.log(np.asarray(costs, dtype=float)[order])
    return float(np.polyfit(x, y, 1)[0])
