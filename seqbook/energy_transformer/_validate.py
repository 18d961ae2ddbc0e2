"""The tokens the Energy Transformer's modules take: their type, and what a type cannot say."""

from __future__ import annotations

from typing import TypeAlias

from jaxtyping import Float
from torch import Tensor

from seqbook._checks import _finite

#: Tokens ``(B, N, D)`` of the module's ``dim`` features and dtype (the hook checks
#: that the dtype is the parameters'; float64 input needs ``module.double()``).
Tokens: TypeAlias = Float[Tensor, "B N {self.dim}"]


def check_tokens(name: str, x: Tensor) -> None:
    """What a type cannot say about tokens ``(B, N, D)``: at least two of them (a token
    never attends to itself, so one token alone has nothing to attend to), and finite
    (a NaN would spread through the whole dynamics without an error)."""
    if x.shape[-2] < 2:
        raise ValueError(f"{name} must hold N >= 2 tokens (a token never attends to "
                         f"itself), got shape {tuple(x.shape)}")
    if not _finite(x):  # read at the outermost checked call only
        raise ValueError(f"{name} must be finite (no NaN or inf)")
