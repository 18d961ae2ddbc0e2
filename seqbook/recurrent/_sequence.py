"""The masked loop over time shared by RNN, LSTM and GRU, and the check of a
one-layer, one-direction module (plumbing, not concepts of the chapters).

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units.
Error messages name the argument and the expected shape, as everywhere in seqbook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeAlias

import torch
from torch import Tensor

from seqbook._checks import _describe

State: TypeAlias = tuple[Tensor, ...]  # (h,) for the RNN and the GRU, (y, c) for the LSTM
# the recurrence of one layer and direction: (input part of x_t, state) -> (state, gates)
Step: TypeAlias = Callable[[Tensor, State], tuple[State, Any]]


def check_one_layer(
    name: str, module: object, *, classes: tuple[type, ...], what: str, why: str,
    batch_first: bool = False,
) -> None:
    """``module`` (the argument ``name``) is one of ``classes`` (``what`` in the
    message) with one layer and one direction (and, if ``batch_first``, batch-first);
    ``why`` says what needs it."""
    if not isinstance(module, classes):
        raise TypeError(f"{name} must be {what}, got {_describe(module)}")
    if batch_first and getattr(module, "batch_first", True) is not True:
        raise ValueError(f"{name} must be batch-first (batch_first=True)")
    layers = getattr(module, "num_layers", 1)
    bidirectional = getattr(module, "bidirectional", False)
    if layers != 1 or bidirectional:
        raise ValueError(f"{name} must have num_layers=1 and bidirectional=False ({why}), "
                         f"got num_layers={layers}, bidirectional={bidirectional}")


def padding_mask(lengths: Tensor | None, T: int, device: torch.device) -> Tensor | None:
    """A ``(B, T, 1)`` mask, True at the real steps of each sequence, or None."""
    if lengths is None:
        return None
    steps = torch.arange(T, device=device)  # (T,)
    return (steps.unsqueeze(0) < lengths.to(device).unsqueeze(1)).unsqueeze(-1)  # (B, T, 1)


def run_masked(
    step: Step,
    input_parts: Tensor,
    state: State,
    mask: Tensor | None,
    record: bool = False,
) -> tuple[Tensor, State, list[tuple[State, Any]] | None]:
    """Run ``state, extra = step(input_parts[:, t], state)`` for every ``t``.

    ``input_parts`` ``(B, T, .)`` holds what each step needs of its input, computed
    for all steps at once; ``mask`` ``(B, T, 1)`` (or None) marks the real steps.
    At padding steps the state is carried over and the output is zero, as
    ``pack_padded_sequence`` gives with torch's layers. Returns the outputs
    ``(B, T, H)`` (the first state tensor of every step), the last state and, if
    ``record``, every step's (carried) state and ``extra`` (e.g. its gates).
    """
    outputs: list[Tensor] = []
    history: list[tuple[State, Any]] | None = [] if record else None
    # unbind (not input_parts[:, t]) so that the backward pass assembles the gradient
    # of input_parts once instead of once per step
    for t, part in enumerate(input_parts.unbind(1)):
        new, extra = step(part, state)
        if mask is not None:  # padding: keep the old state, output zeros
            state = tuple(torch.where(mask[:, t], n, s) for n, s in zip(new, state))
            outputs.append(new[0] * mask[:, t])
        else:
            state = new
            outputs.append(state[0])
        if history is not None:
            history.append((state, extra))
    return torch.stack(outputs, dim=1), state, history  # (B, T, H), State


def stack_history(values: Sequence[Tensor | None]) -> Tensor | None:
    """Per-step ``(B, H)`` tensors as one ``(B, T, H)`` tensor (None stays None)."""
    if values[0] is None:  # a gate the module does not have (for every step)
        return None
    return torch.stack([v for v in values if v is not None], dim=1)  # (B, T, H)
