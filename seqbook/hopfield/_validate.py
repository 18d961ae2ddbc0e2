"""Argument checks shared by the Hopfield modules (on top of ``seqbook._checks``)."""

from __future__ import annotations

from typing import Any

import torch

from seqbook._checks import check_tensor


def check_patterns(name: str, value: Any, *, binary: bool, ndim: int | tuple[int, ...] = 2) -> torch.Tensor:
    """Return ``value`` as a floating tensor of stored patterns, one per row.

    ``binary=True`` asks for entries in {-1, +1} (the spins of the binary models).
    """
    value = check_tensor(name, value, ndim=ndim)
    if value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must have a real dtype, got {value.dtype}")
    if value.shape[-2] == 0 or value.shape[-1] == 0:
        raise ValueError(
            f"{name} must hold at least one pattern of at least one component, "
            f"got shape {tuple(value.shape)}"
        )
    if not value.is_floating_point():
        value = value.float()
    if binary:
        check_spins(name, value)
    elif not torch.isfinite(value).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return value


def check_spins(name: str, value: torch.Tensor) -> None:
    """Raise unless every entry of ``value`` is -1 or +1."""
    bad = (value != 1) & (value != -1)
    if bad.any():
        example = value[bad].flatten()[0].item()
        raise ValueError(
            f"{name} must contain only -1 and +1 (spins), got {bad.sum().item()} other "
            f"value(s), e.g. {example!r}; map 0/1 data with 2 * x - 1"
        )


def check_state(name: str, value: Any, dim: int, *, binary: bool, dtype: torch.dtype) -> torch.Tensor:
    """Return a state (or a batch of states) whose last dimension is ``dim``."""
    value = check_tensor(name, value)
    if value.dim() == 0:
        raise ValueError(f"{name} must have shape (d,) or (..., d) with d = {dim}, got a scalar")
    if value.shape[-1] != dim:
        raise ValueError(
            f"{name} must have last dimension d = {dim} (the patterns' dimension), "
            f"got shape {tuple(value.shape)}"
        )
    if value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must have a real dtype, got {value.dtype}")
    value = value.to(dtype)
    if binary:
        check_spins(name, value)
    elif not torch.isfinite(value).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return value
