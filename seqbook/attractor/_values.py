"""What the types of :mod:`seqbook.attractor` cannot say: checks of tensor values.

A jaxtyping annotation fixes a tensor's dtype and shape; these helpers check what it
holds (pixels in [0, 1], finite spins), its device, and sizes a shape cannot bound
(a batch of one configuration at least, an image grid of whole patches). Each raises
a ``ValueError`` that names the argument.
"""

from __future__ import annotations

import torch
from torch import Tensor

from seqbook._checks import _finite, _reads_values


def check_finite(name: str, value: Tensor) -> Tensor:
    """Return ``value`` if it holds no NaN or inf (read at the outermost checked call
    only)."""
    if not _finite(value):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return value


def check_pixels(name: str, value: Tensor) -> Tensor:
    """Return ``value`` if it holds finite pixels in [0, 1]."""
    check_finite(name, value)
    if value.numel() and _reads_values(value) and (value.min() < 0 or value.max() > 1):
        raise ValueError(f"{name} must hold values in [0, 1] (pixels), got values from "
                         f"{value.min().item():.4g} to {value.max().item():.4g}")
    return value


def check_not_empty(name: str, value: Tensor, what: str) -> Tensor:
    """Return ``value`` if its first dimension holds one ``what`` at least."""
    if len(value) == 0:
        raise ValueError(f"{name} must hold at least one {what}, got shape "
                         f"{tuple(value.shape)}")
    return value


def check_grid(name: str, images: Tensor, patch_size: int) -> Tensor:
    """Return ``images`` ``(..., H, W)`` if ``H`` and ``W`` are positive multiples of
    ``patch_size``: whole patches."""
    height, width = images.shape[-2:]
    for letter, size in (("H", height), ("W", width)):
        if size == 0:
            raise ValueError(f"{name} must have shape (B, H, W) with {letter} >= 1, got "
                             f"{tuple(images.shape)}")
        if size % patch_size:
            raise ValueError(f"{name} must have shape (B, H, W) with {letter} a multiple of "
                             f"patch_size = {patch_size} (the argument patch_size), got "
                             f"{tuple(images.shape)}")
    return images


def check_device(name: str, value: Tensor | None, device: torch.device, of: str) -> None:
    """Raise unless ``value`` (if any) is on ``device``, that of ``of``."""
    if value is not None and value.device != device:
        raise ValueError(f"{name} is on {value.device} but {of} are on {device}; move one "
                         f"to the other (e.g. {name}.to({str(device)!r}))")
