"""What the experiment modules share: the ignore label and the generator check."""

from __future__ import annotations

import torch

#: Target of a step without a loss, as ``F.cross_entropy``'s default ``ignore_index``.
IGNORE = -100


def check_generator(generator: object) -> torch.Generator:
    """``generator`` if it is a ``torch.Generator`` (the tasks draw only from it)."""
    if not isinstance(generator, torch.Generator):
        raise TypeError(
            "generator must be a torch.Generator (e.g. torch.Generator().manual_seed(0)), "
            f"got {type(generator).__name__}"
        )
    return generator
