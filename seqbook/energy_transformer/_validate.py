"""Argument contracts shared by the Energy Transformer's modules."""

from __future__ import annotations

from typing import Annotated, Any

import torch

from seqbook.attractor.bare import _FiniteDims


class _Tokens(_FiniteDims):
    """A configuration of finite tokens (see :class:`~seqbook._contracts.Dims`), with
    ``N >= 2`` tokens.

    A token never attends to itself, so a configuration needs at least two tokens; the
    dtype must be the parameters' (float64 input is computed in float64 only by a
    float64 module: ``module.double()``).
    """

    def check_in(self, name: str, value: Any, call: dict[str, Any], bound: dict[str, Any]) -> Any:
        value = super().check_in(name, value, call, bound)
        if value.shape[1] < 2:
            raise ValueError(f"{name} must have shape (B, N, dim) with N >= 2 tokens, "
                             f"got {tuple(value.shape)}")
        return value


#: Tokens ``(B, N, D)`` of the module's ``dim`` features and dtype, at least two, finite.
Tokens = Annotated[torch.Tensor, _Tokens("B N dim", floating=True, dtype_of="module")]
