r"""What a language model costs per generated token: time and state, against position.

A transformer generating text keeps every earlier key and value (the KV cache of the
language-model chapter), so its state and the work of a step grow with the position;
a recurrent model (an LSTM, a linear-attention or mLSTM memory, a state-space model)
keeps a state of fixed size. :func:`generation_profile` measures both on a real model,
one token at a time.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_positive_int
from seqbook.costs.measure import count_flops
from seqbook.language_model.cache import KVCache
from seqbook.language_model.mixers import MixerLM

__all__ = ["generation_profile", "state_bytes"]


def state_bytes(state: object) -> int:
    """The bytes of every tensor in a generation state (tuples, lists, dicts, KV caches)."""
    if isinstance(state, torch.Tensor):
        return state.numel() * state.element_size()
    if isinstance(state, KVCache):
        return state.nbytes
    if isinstance(state, dict):
        return sum(state_bytes(value) for value in state.values())
    if isinstance(state, (tuple, list)):
        return sum(state_bytes(value) for value in state)
    return 0  # None: a recurrent layer's zero state before the first token


Step = Callable[[Int[Tensor, " 1"], Any], tuple[Float[Tensor, "1 V"], Any]]


def _one_step(model: nn.Module) -> Step:
    """A function (token ids (1,), state) -> (scores (1, V), state) for the model."""
    if isinstance(model, MixerLM):
        return model.step
    return lambda ids, state: (lambda out: (out[0][:, -1], out[1]))(model(ids[:, None], state))


def generation_profile(
    model: nn.Module,
    num_tokens: int,
    block_size: int = 64,
    repeats: int = 3,
) -> dict[str, list]:
    """Generate ``num_tokens`` tokens greedily, one at a time, and measure each block.

    The model needs ``init_state(batch_size)`` and a step that reads one token with a
    state: :meth:`~seqbook.language_model.MixerLM.step`, or a forward
    ``(ids, state) -> (logits, state)`` as
    :class:`~seqbook.language_model.RecurrentLM` and
    :class:`~seqbook.language_model.TransformerLM` (with its KV cache) have.

    Each block of ``block_size`` tokens is timed ``repeats`` times from the same state,
    keeping the fastest (the least disturbed by the rest of the machine); the
    floating-point operations of its first step are counted (:func:`~seqbook.costs.count_flops`: the
    matrix products, the same on every machine).

    Returns:
        ``{"position", "seconds_per_token", "flops_per_token", "state_bytes"}``: per
        block, the position of its first token, the fastest mean time per token, the
        operations of its first step and the state's bytes after the block.

    Example:
        >>> model = MixerLM(10, d_model=8, mixer="lstm", num_layers=1)
        >>> profile = generation_profile(model, 8, block_size=4, repeats=1)
        >>> profile["position"], profile["state_bytes"]   # h, c, the last embedding
        ([0, 4], [96, 96])
    """
    for name, count in dict(num_tokens=num_tokens, block_size=block_size,
                            repeats=repeats).items():
        check_positive_int(name, count)
    if num_tokens % block_size:
        raise ValueError(f"num_tokens must be a multiple of block_size = {block_size}, got "
                         f"{num_tokens}")
    was_training = model.training
    model.eval()
    step = _one_step(model)
    lm: Any = model  # init_state: what torch's Module type does not know
    profile: dict[str, list] = {"position": [], "seconds_per_token": [],
                                "flops_per_token": [], "state_bytes": []}
    with torch.no_grad():
        state = lm.init_state(1)
        token = torch.zeros(1, dtype=torch.long, device=next(model.parameters()).device)
        for position in range(0, num_tokens, block_size):
            profile["flops_per_token"].append(count_flops(lambda: step(token, _copy(state))))
            fastest = float("inf")
            for _ in range(repeats):  # the same block from the same state each time
                s, t = _copy(state), token
                start = time.perf_counter()
                for _ in range(block_size):
                    logits, s = step(t, s)
                    t = logits.argmax(-1)
                fastest = min(fastest, (time.perf_counter() - start) / block_size)
            state, token = s, t
            profile["position"].append(position)
            profile["seconds_per_token"].append(fastest)
            profile["state_bytes"].append(state_bytes(state))
    model.train(was_training)
    return profile


def _copy(state: object) -> object:
    """A copy that the next steps cannot change (a KV cache is extended in place)."""
    if isinstance(state, KVCache):
        return state.copy()
    return state  # the other states are replaced, never changed in place
