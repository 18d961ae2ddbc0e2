"""Input checks and the masked loop over time shared by RNN, LSTM and GRU.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units.
Error messages name the argument and the expected shape, as everywhere in seqbook.
"""

from __future__ import annotations

from collections.abc import Callable

import torch

from seqbook._checks import check_tensor


def check_sequence_batch(x: object, input_size: int, batch_first: bool) -> torch.Tensor:
    """``x`` validated (``T >= 1``, ``D == input_size``) and returned batch-first."""
    check_tensor("x", x, ndim=3, floating=True)
    if not batch_first:
        x = x.transpose(0, 1)  # (B, T, D)
    if x.shape[1] == 0:
        raise ValueError(f"x must have at least one time step, got shape {tuple(x.shape)}")
    if x.shape[2] != input_size:
        raise ValueError(
            f"x must have {input_size} features (input_size) in its last dimension, "
            f"got shape {tuple(x.shape)}"
        )
    return x


def check_step_input(x_t: object, input_size: int) -> torch.Tensor:
    """The input ``(B, D)`` of one step of a cell."""
    check_tensor("x_t", x_t, ndim=2, floating=True)
    if x_t.shape[1] != input_size:
        raise ValueError(
            f"x_t must have {input_size} features (input_size), got shape {tuple(x_t.shape)}"
        )
    return x_t


def check_state(name: str, state: object, B: int, H: int) -> torch.Tensor:
    """A state tensor of shape ``(B, H)``."""
    check_tensor(name, state, ndim=2, floating=True)
    if state.shape != (B, H):
        raise ValueError(f"{name} must have shape {(B, H)} (B, H), got {tuple(state.shape)}")
    return state


def padding_mask(lengths: object, B: int, T: int, device) -> torch.Tensor | None:
    """A ``(B, T, 1)`` mask, True at the real steps of each sequence, or None."""
    if lengths is None:
        return None
    check_tensor("lengths", lengths, ndim=1, floating=False)
    if lengths.shape[0] != B:
        raise ValueError(f"lengths must have one entry per sequence ({B}), got {lengths.shape[0]}")
    if lengths.numel() and (int(lengths.min()) < 0 or int(lengths.max()) > T):
        raise ValueError(f"lengths must lie in [0, T={T}], got {lengths.tolist()}")
    steps = torch.arange(T, device=device)  # (T,)
    return (steps.unsqueeze(0) < lengths.to(device).unsqueeze(1)).unsqueeze(-1)  # (B, T, 1)


def run_masked(
    step: Callable[[torch.Tensor, torch.Tensor], torch.Tensor],
    input_parts: torch.Tensor,
    h: torch.Tensor,
    mask: torch.Tensor | None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Run ``h = step(input_parts[:, t], h)`` for every ``t``; padding keeps the state.

    ``input_parts`` ``(B, T, .)`` holds what each step needs of its input, computed
    for all steps at once; ``mask`` ``(B, T, 1)`` (or None) marks the real steps.
    At padding steps the state is carried over and the output is zero, as
    ``pack_padded_sequence`` gives with torch's layers. Returns the outputs
    ``(B, T, H)`` and the last state ``(B, H)``.
    """
    outputs = []
    # unbind (not input_parts[:, t]) so that the backward pass assembles the gradient
    # of input_parts once instead of once per step
    for t, part in enumerate(input_parts.unbind(1)):
        h_new = step(part, h)  # (B, H)
        if mask is not None:  # padding: keep the old state, output zeros
            h = torch.where(mask[:, t], h_new, h)
            outputs.append(h_new * mask[:, t])
        else:
            h = h_new
            outputs.append(h)
    return torch.stack(outputs, dim=1), h  # (B, T, H), (B, H)
