"""Reproducibility, devices and timing: the small tools every chapter uses."""

from __future__ import annotations

import random
import time
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from seqbook._checks import check_device, check_int

__all__ = ["seed_everything", "default_device", "to_device", "Timer"]


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's (CPU and CUDA) random generators.

    A chapter calls this once at the top and again before each experiment whose
    numbers the prose quotes, so that re-running one cell reproduces its result.

    Args:
        seed: a non-negative integer.

    Example:
        >>> seed_everything(0)
        >>> a = torch.rand(2)
        >>> seed_everything(0)
        >>> bool((a == torch.rand(2)).all())
        True
    """
    seed = check_int("seed", seed, min_value=0)
    random.seed(seed)
    np.random.seed(seed % 2**32)  # NumPy only accepts 32-bit seeds
    torch.manual_seed(seed)  # also seeds every CUDA device


def default_device() -> torch.device:
    """The device the book's code runs on: CUDA when available (Colab GPU), else CPU.

    Example:
        >>> default_device().type in {"cpu", "cuda"}
        True
    """
    return torch.device("cuda" if torch.cuda.is_available() else "cpu")


def to_device(batch: Any, device: torch.device | str) -> Any:
    """Move every tensor in a (nested) tuple, list or dict to ``device``.

    Anything that is not a tensor or a container of tensors is returned unchanged,
    so batches may carry strings or lengths alongside tensors.

    Example:
        >>> x, names = to_device((torch.zeros(2), ["ab", "c"]), "cpu")
        >>> x.device.type, names
        ('cpu', ['ab', 'c'])
    """
    device = check_device("device", device)
    return _to_device(batch, device)


def _to_device(batch: Any, device: torch.device) -> Any:
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    if isinstance(batch, Mapping):
        return type(batch)({k: _to_device(v, device) for k, v in batch.items()})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a NamedTuple
        return type(batch)(*(_to_device(v, device) for v in batch))
    if isinstance(batch, Sequence) and not isinstance(batch, (str, bytes)):
        return type(batch)(_to_device(v, device) for v in batch)
    return batch


class Timer:
    """Wall-clock timer, used as a context manager.

    Example:
        >>> with Timer() as timer:
        ...     _ = sum(range(1000))
        >>> timer.seconds >= 0
        True
    """

    def __init__(self) -> None:
        self.seconds: float = 0.0
        self._start: float | None = None

    def __enter__(self) -> "Timer":
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc_info: object) -> None:
        assert self._start is not None
        self.seconds = time.perf_counter() - self._start

    def __repr__(self) -> str:
        return f"Timer(seconds={self.seconds:.3f})"
