"""Batching variable-length sequences: padding, lengths and masks.

Shape letters: ``B`` batch, ``T`` time (the longest sequence in the batch), ``D``
features per time step.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from typing import Any

import torch
from jaxtyping import Bool, Int, Shaped
from torch import Tensor
from torch.nn.utils.rnn import pad_sequence

from seqbook._checks import check_int, check_real, check_sequence

__all__ = ["pad_batch", "lengths_to_mask"]


def lengths_to_mask(
    lengths: Int[Tensor, " B"], max_len: int | None = None
) -> Bool[Tensor, "B T"]:
    """Boolean mask that is True at the real (non-padding) positions.

    Args:
        lengths: integer tensor of shape ``(B,)``, each >= 0.
        max_len: width ``T`` of the mask, at least ``lengths.max()`` (its default).

    Returns:
        ``mask`` of shape ``(B, T)`` with ``mask[b, t] = t < lengths[b]``.

    Example:
        >>> lengths_to_mask(torch.tensor([3, 1]))
        tensor([[ True,  True,  True],
                [ True, False, False]])
    """
    if max_len is not None:
        check_int("max_len", max_len, min_value=0)
    if lengths.numel() and not torch.compiler.is_compiling():
        low, high = int(lengths.min()), int(lengths.max())
        if low < 0 or (max_len is not None and high > max_len):
            top = "inf" if max_len is None else f"max_len = {max_len}"
            raise ValueError(f"lengths must hold values in [0, {top}] (lengths of sequences), "
                             f"got values from {low} to {high}")
    if max_len is None:
        max_len = int(lengths.max()) if lengths.numel() else 0
    positions = torch.arange(max_len, device=lengths.device)  # (T,)
    return positions.unsqueeze(0) < lengths.unsqueeze(1)  # (B, T)


def pad_batch(
    sequences: Sequence[Tensor | Iterable[Any]], pad_value: float = 0
) -> tuple[Shaped[Tensor, "B T *D"], Int[Tensor, " B"], Bool[Tensor, "B T"]]:
    """Stack sequences of different lengths into one padded, batch-first tensor.

    Args:
        sequences: ``B`` sequences, each a list of token ids or a tensor of shape
            ``(T_b,)`` or ``(T_b, D)`` (the same ``D`` for all).
        pad_value: the value written after the end of each sequence (0 is
            ``Vocab.pad_id``).

    Returns:
        ``(padded, lengths, mask)``: ``padded`` of shape ``(B, T)`` or ``(B, T, D)`` with
        ``T = max(T_b)``; ``lengths`` of shape ``(B,)``; ``mask`` of shape ``(B, T)``,
        True at real positions and False at padding.

    Example:
        >>> padded, lengths, mask = pad_batch([[5, 6, 7], [8]])
        >>> padded
        tensor([[5, 6, 7],
                [8, 0, 0]])
        >>> lengths.tolist(), mask.sum().item()
        ([3, 1], 4)
    """
    check_sequence("sequences", sequences, what="a list of sequences (lists of ids or tensors)",
                   non_empty=True)
    check_real("pad_value", pad_value)
    tensors = []
    for b, seq in enumerate(sequences):
        if isinstance(seq, (str, bytes)) or not isinstance(seq, (Iterable, torch.Tensor)):
            raise TypeError(f"sequences[{b}] must be a list of token ids or a tensor, got "
                            f"{type(seq).__name__}")
        try:
            tensor = seq if isinstance(seq, torch.Tensor) else torch.as_tensor(list(seq))
        except (TypeError, ValueError, RuntimeError):
            raise TypeError(f"sequences[{b}] must hold numbers (token ids or features), got "
                            f"{seq!r:.60}") from None
        if tensor.dim() not in (1, 2):
            raise ValueError(f"sequences[{b}] must have shape (T,) or (T, D), got "
                             f"{tuple(tensor.shape)}")
        tensors.append(tensor)
    if len({t.shape[1:] for t in tensors}) > 1:
        shapes = sorted({tuple(t.shape[1:]) for t in tensors})
        raise ValueError(f"all sequences must share their trailing shape, got {shapes}")
    if len({t.dtype for t in tensors}) > 1:
        # Mixed dtypes arise when an empty list (float32) meets lists of ids (int64):
        # the empty ones take the dtype of the others.
        dtypes = [t.dtype for t in tensors if t.numel()] or [torch.long]
        dtype = functools.reduce(torch.promote_types, dtypes)
        tensors = [t.to(dtype) for t in tensors]
    lengths = torch.tensor([t.shape[0] for t in tensors], dtype=torch.long)
    padded = pad_sequence(tensors, batch_first=True, padding_value=pad_value)  # (B, T[, D])
    return padded, lengths, lengths_to_mask(lengths, padded.shape[1])
