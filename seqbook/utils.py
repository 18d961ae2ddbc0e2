"""Reproducibility, devices and timing: the small tools every chapter uses.

The public functions' annotations are checked by :mod:`seqbook._typecheck` (with
beartype; no tensor shapes here for jaxtyping); what a type cannot say (a seed >= 0,
a device's name) is checked in the body.
"""

from __future__ import annotations

import os
import random
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import torch

from seqbook._checks import check_device, check_int

__all__ = [
    "SEED_SHIFT_VARIABLE",
    "seed_shift",
    "shifted_seed",
    "seed_everything",
    "seeded_generator",
    "default_device",
    "to_device",
    "Timer",
]

# A reader's machine takes training down another floating-point path than the
# author's. `SEQBOOK_SEED_SHIFT=k` plays such a reader: every seed a chapter draws
# through the helpers below becomes `seed + k * SEED_STRIDE`, a set of seeds disjoint
# from the printed run's (chapters use seeds far below the stride).
SEED_SHIFT_VARIABLE = "SEQBOOK_SEED_SHIFT"
SEED_STRIDE = 1000


def seed_shift() -> int:
    """The seed shift of this run: ``$SEQBOOK_SEED_SHIFT``, or 0 where it is unset.

    The printed book runs with shift 0; ``make test`` runs the notebooks with shift 1
    and ``make claims`` (the claims ledger) with twelve more, so that every claim is
    checked on runs other than the one it was written from.

    Example:
        >>> seed_shift() >= 0
        True
    """
    text = os.environ.get(SEED_SHIFT_VARIABLE, "").strip()
    if not text:
        return 0
    try:
        shift = int(text)
    except ValueError:
        raise ValueError(
            f"{SEED_SHIFT_VARIABLE} must be a non-negative integer, got {text!r}"
        ) from None
    if shift < 0:
        raise ValueError(f"{SEED_SHIFT_VARIABLE} must be a non-negative integer, got {shift}")
    return shift


def shifted_seed(seed: int) -> int:
    """``seed`` moved by this run's seed shift (:func:`seed_shift`).

    Every seed a chapter uses goes through this function (directly, or through
    :func:`seed_everything` and :func:`seeded_generator`), so that a run with
    ``SEQBOOK_SEED_SHIFT=k`` draws other initialisations, batches and samples.

    Example:
        >>> shifted_seed(3) == 3 + 1000 * seed_shift()
        True
    """
    check_int("seed", seed, min_value=0)
    return seed + SEED_STRIDE * seed_shift()


def seeded_generator(seed: int) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with :func:`shifted_seed` of ``seed``.

    Example:
        >>> a = torch.rand(2, generator=seeded_generator(0))
        >>> bool((a == torch.rand(2, generator=seeded_generator(0))).all())
        True
    """
    return torch.Generator().manual_seed(shifted_seed(seed))


def seed_everything(seed: int) -> None:
    """Seed Python's, NumPy's and PyTorch's (CPU and CUDA) random generators.

    A chapter calls this once at the top and again before each experiment whose
    numbers the prose quotes, so that re-running one cell reproduces its result.
    The generators get :func:`shifted_seed` of ``seed``: the printed book's seed,
    or a reader's other one under ``SEQBOOK_SEED_SHIFT``.

    Args:
        seed: a non-negative integer.

    Example:
        >>> seed_everything(0)
        >>> a = torch.rand(2)
        >>> seed_everything(0)
        >>> bool((a == torch.rand(2)).all())
        True
    """
    seed = shifted_seed(seed)
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


def to_device(batch: Any, device: torch.device | str | None) -> Any:
    """Move every tensor in a (nested) tuple, list or dict to ``device``.

    Anything that is not a tensor or a container of tensors is returned unchanged,
    so batches may carry strings or lengths alongside tensors.

    Example:
        >>> x, names = to_device((torch.zeros(2), ["ab", "c"]), "cpu")
        >>> x.device.type, names
        ('cpu', ['ab', 'c'])
    """
    device = check_device("device", device)
    if isinstance(batch, torch.Tensor):
        return batch.to(device)
    container: Any = type(batch)  # rebuilt with the moved items
    if isinstance(batch, Mapping):
        return container({k: to_device(v, device) for k, v in batch.items()})
    if isinstance(batch, tuple) and hasattr(batch, "_fields"):  # a NamedTuple
        return container(*(to_device(v, device) for v in batch))
    if isinstance(batch, Sequence) and not isinstance(batch, (str, bytes)):
        return container(to_device(v, device) for v in batch)
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


#: The name of a committed checkpoint, or a path to one.
CheckpointName: TypeAlias = str | Path


def find_checkpoint(name_or_path: CheckpointName, folder: Path, trainer: str) -> Path:
    """The checkpoint file ``name_or_path`` names: a path (with a suffix), or the name of
    a committed checkpoint in ``folder``; ``trainer`` is the command that writes one.
    For the package's loaders (``load_bare``, ``load_baseline``, ``load_masked``)."""
    if not isinstance(name_or_path, (str, Path)):
        raise TypeError(f"name_or_path must be a str or Path, got {name_or_path!r}")
    path = Path(name_or_path)
    if not path.suffix:
        path = folder / f"{name_or_path}.pt"
    if not path.exists():
        raise FileNotFoundError(f"no checkpoint {path}; train one with `{trainer}`")
    return path
