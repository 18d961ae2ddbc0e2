"""What the experiment modules share: the ignore label and one CPU thread."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

#: Target of a step without a loss, as ``F.cross_entropy``'s default ``ignore_index``.
IGNORE = -100


@contextmanager
def one_thread() -> Iterator[None]:
    """Run PyTorch on one CPU thread inside the block, then restore the thread count.

    The experiments' matrices are small: one thread runs them faster than several
    that wait for each other, and it fixes the order of floating-point reductions, so
    that a run reproduces the committed result tables, computed on one thread.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)
