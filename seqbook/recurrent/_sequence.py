"""Input checks and the masked loop over time shared by RNN, LSTM and GRU.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units,
``K`` = ``num_layers * num_directions`` the stacked layers and directions.
Error messages name the argument and the expected shape, as everywhere in seqbook.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Annotated, Any

import torch

from seqbook._checks import _describe, check_same_dtype, check_tensor
from seqbook._contracts import Check, Shaped

State = tuple[torch.Tensor, ...]  # (h,) for the RNN and the GRU, (y, c) for the LSTM


def check_sequence_batch(
    x: object, input_size: int, batch_first: bool, like: torch.Tensor
) -> torch.Tensor:
    """``x`` validated (``T >= 1``, ``D == input_size``, the parameters' dtype and
    device) and returned batch-first."""
    check_tensor("x", x, ndim=3, floating=True)
    x = x if batch_first else x.transpose(0, 1)  # (B, T, D)
    if x.shape[1] == 0:
        raise ValueError(f"x must have at least one time step, got shape {tuple(x.shape)}")
    if x.shape[2] != input_size:
        raise ValueError(f"x must have {input_size} features (input_size) in its last "
                         f"dimension, got shape {tuple(x.shape)}")
    return check_like("x", x, like)


def check_one_layer(
    name: str, module: object, *, classes: tuple[type, ...], what: str, why: str,
    batch_first: bool = False,
) -> torch.nn.Module:
    """``module`` (the argument ``name``) is one of ``classes`` (``what`` in the
    message) with one layer and one direction (and, if ``batch_first``, batch-first);
    ``why`` says what needs it. The check of :func:`OneLayer`."""
    if not isinstance(module, classes):
        raise TypeError(f"{name} must be {what}, got {_describe(module)}")
    if batch_first and getattr(module, "batch_first", True) is not True:
        raise ValueError(f"{name} must be batch-first (batch_first=True)")
    layers = getattr(module, "num_layers", 1)
    bidirectional = getattr(module, "bidirectional", False)
    if layers != 1 or bidirectional:
        raise ValueError(f"{name} must have num_layers=1 and bidirectional=False ({why}), "
                         f"got num_layers={layers}, bidirectional={bidirectional}")
    return module


def OneLayer(*classes: type, what: str, why: str, batch_first: bool = False) -> Any:
    """A recurrent module, an instance of one of ``classes``, with one layer and one
    direction (see :func:`check_one_layer`): a contract of a function's argument."""
    return Annotated[classes[0], Check(check_one_layer, classes=classes, what=what, why=why,
                                       batch_first=batch_first)]


def check_like(name: str, tensor: torch.Tensor, like: torch.Tensor) -> torch.Tensor:
    """``tensor`` has the dtype and device of the module's parameters ``like``."""
    check_same_dtype(name, tensor, like.dtype, of="the module's parameters")
    if tensor.device != like.device:
        raise ValueError(f"{name} is on {tensor.device} but the module's parameters are on "
                         f"{like.device}; move one to the other (e.g. "
                         f"{name}.to({str(like.device)!r}))")
    return tensor


def ModuleInput(dims: str) -> Any:
    """A floating tensor with named dimensions (as ``Shaped(dims)``), in the dtype and on
    the device of the module's parameters: a contract of a method's argument."""
    return Shaped(dims, floating=True, dtype_of="module", device_of="module")


def check_state(
    name: str, state: object, shape: tuple[int, ...], like: torch.Tensor, what: str
) -> torch.Tensor:
    """A state tensor of the given shape, dtype and device; ``what`` spells the shape
    out in letters, e.g. ``"(num_layers * num_directions, B, H)"``."""
    check_tensor(name, state, ndim=len(shape), floating=True)
    if tuple(state.shape) != tuple(shape):
        raise ValueError(f"{name} must have shape {tuple(shape)} {what}, got {tuple(state.shape)}")
    return check_like(name, state, like)


def check_lengths(lengths: torch.Tensor, B: int, T: int) -> torch.Tensor:
    """Lengths ``(B,)``, integers >= 0 (the signature's contract), for ``B`` sequences
    of ``T`` steps: at most ``T``."""
    if lengths.shape[0] != B:
        raise ValueError(f"lengths must have one entry per sequence (B={B}), got "
                         f"{lengths.shape[0]}")
    if lengths.numel() and int(lengths.max()) > T:
        raise ValueError(f"lengths must lie in [0, T={T}] (T: the time axis of x), got "
                         f"{lengths.tolist()}")
    return lengths


def padding_mask(lengths: torch.Tensor | None, T: int, device: Any) -> torch.Tensor | None:
    """A ``(B, T, 1)`` mask, True at the real steps of each sequence, or None."""
    if lengths is None:
        return None
    steps = torch.arange(T, device=device)  # (T,)
    return (steps.unsqueeze(0) < lengths.to(device).unsqueeze(1)).unsqueeze(-1)  # (B, T, 1)


def run_masked(
    step: Callable[[torch.Tensor, State], tuple[State, Any]],
    input_parts: torch.Tensor,
    state: State,
    mask: torch.Tensor | None,
    record: bool = False,
) -> tuple[torch.Tensor, State, list[tuple[State, Any]] | None]:
    """Run ``state, extra = step(input_parts[:, t], state)`` for every ``t``.

    ``input_parts`` ``(B, T, .)`` holds what each step needs of its input, computed
    for all steps at once; ``mask`` ``(B, T, 1)`` (or None) marks the real steps.
    At padding steps the state is carried over and the output is zero, as
    ``pack_padded_sequence`` gives with torch's layers. Returns the outputs
    ``(B, T, H)`` (the first state tensor of every step), the last state and, if
    ``record``, every step's (carried) state and ``extra`` (e.g. its gates).
    """
    outputs, history = [], [] if record else None
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
        if record:
            history.append((state, extra))
    return torch.stack(outputs, dim=1), state, history  # (B, T, H), State


def stack_history(values: Sequence[torch.Tensor | None]) -> torch.Tensor | None:
    """Per-step ``(B, H)`` tensors as one ``(B, T, H)`` tensor (None stays None)."""
    return None if values[0] is None else torch.stack(list(values), dim=1)  # (B, T, H)
