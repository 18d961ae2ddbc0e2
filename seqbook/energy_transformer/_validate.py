"""Argument checks shared by the Energy Transformer's modules."""

from __future__ import annotations

import torch

from seqbook._checks import check_same_dtype, check_tensor


def check_tokens(name: str, value: object, dim: int, dtype: torch.dtype) -> torch.Tensor:
    """``value`` if it is a floating ``(B, N, D)`` tensor with ``N >= 2`` tokens of ``dim``
    features.

    A token never attends to itself, so a configuration needs at least two tokens; the
    dtype must be the parameters' (float64 input is computed in float64 only by a
    float64 module: ``module.double()``).
    """
    value = check_tensor(name, value, ndim=3, floating=True)
    if value.shape[-1] != dim or value.shape[1] < 2:
        raise ValueError(f"{name} must have shape (B, N, D) with N >= 2 tokens of D = {dim} "
                         f"features, got {tuple(value.shape)}")
    if not torch.isfinite(value).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return check_same_dtype(name, value, dtype, of="the module's parameters")
