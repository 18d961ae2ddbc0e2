r"""Gated (decaying) linear attention: the matrix memory of linear attention with a
forget gate.

Before each write the state is multiplied by a decay :math:`\gamma_t \in (0, 1]`:

.. math::
    \mathbf{S}_t = \mathbf{S}_{t-1} \operatorname{diag}(\boldsymbol{\gamma}_t)
    + \mathbf{v}_t\, \phi(\mathbf{k}_t)^\top, \qquad
    \mathbf{y}_t = \mathbf{S}_t\, \phi(\mathbf{q}_t).

A fixed scalar decay is RetNet's retention (Sun et al., 2023), a scalar computed from
the input at each step is Mamba-2's (Dao & Gu, 2024), and a decay per key feature
computed from the input is gated linear attention (GLA; Yang et al., 2024). With
:math:`\gamma_t = 1` it is causal linear attention without its normaliser.

Shape letters: ``B`` batch, ``T`` time, ``d_k`` key features (after the feature map),
``d_v`` value features. A decay of shape ``(B, T, 1)`` is one scalar per step, shared by
the key features.
"""

from __future__ import annotations

from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import _reads_values, check_steps
from seqbook.linear_attention.kernelized import Features, Key, Memory, Value, Values

__all__ = ["gated_linear_attention", "gated_linear_attention_step"]

# the decays of a sequence, one per step and key feature, or one per step (#: size 1)
Decays: TypeAlias = Float[Tensor, "B T #d_k"]
Decay: TypeAlias = Float[Tensor, " B #d_k"]


def gated_linear_attention(
    phi_Q: Features, phi_K: Features, V: Values, gamma: Decays
) -> Values:
    r"""Causal linear attention whose memory decays by :math:`\gamma_t` before each
    write, run as a recurrence (each step: :func:`gated_linear_attention_step`).

    .. math::
        \mathbf{S}_t = \mathbf{S}_{t-1} \operatorname{diag}(\boldsymbol{\gamma}_t)
        + \mathbf{v}_t\, \phi(\mathbf{k}_t)^\top, \qquad
        \mathbf{y}_t = \mathbf{S}_t\, \phi(\mathbf{q}_t)

    Unrolled, :math:`\mathbf{y}_i = \sum_{j \le i} \mathbf{v}_j\, \phi(\mathbf{k}_j)^\top
    \operatorname{diag}(\boldsymbol{\gamma}_{j+1} \odot \cdots \odot
    \boldsymbol{\gamma}_i)\, \phi(\mathbf{q}_i)`: with a scalar decay, attention
    weights masked by :math:`D_{ij} = \gamma_{j+1} \cdots \gamma_i` instead of the causal
    mask's 1. The outputs are not normalised (as in RetNet, Mamba-2 and GLA, which
    normalise the layer's output instead); with :math:`\gamma_t = 1` and a constant
    value feature of 1 appended to :math:`\mathbf{v}`, that feature's output is the
    normaliser of :func:`~seqbook.linear_attention.linear_attention`.

    Args:
        phi_Q: the feature-mapped queries.
        phi_K: the feature-mapped keys.
        V: the values.
        gamma: the decays :math:`\gamma_t \in (0, 1]`, one per step and key feature
            (GLA), or one per step, shape ``(B, T, 1)`` (RetNet, Mamba-2).

    Shapes:
        phi_Q: ``(B, T, d_k)``, with ``T >= 1``.
        phi_K: ``(B, T, d_k)``.
        V: ``(B, T, d_v)``.
        gamma: ``(B, T, d_k)`` or ``(B, T, 1)``.
        returns: ``(B, T, d_v)``.

    Example:
        >>> ones = torch.ones(1, 3, 1)
        >>> gated_linear_attention(ones, ones, ones, torch.full((1, 3, 1), 0.5))[0, :, 0]
        tensor([1.0000, 1.5000, 1.7500])
    """
    check_steps("phi_Q", phi_Q, "B T d_k")
    if _reads_values(gamma) and not bool(((gamma > 0) & (gamma <= 1)).all()):
        raise ValueError("gamma must be in (0, 1] (a decay), got values from "
                         f"{gamma.min().item():.4g} to {gamma.max().item():.4g}")
    B, T, d_k = phi_K.shape
    S = phi_K.new_zeros(B, V.shape[2], d_k)  # (B, d_v, d_k)
    outputs = []
    for t in range(T):
        S, y = gated_linear_attention_step(S, phi_Q[:, t], phi_K[:, t], V[:, t],
                                           gamma[:, t])
        outputs.append(y)
    return torch.stack(outputs, dim=1)  # (B, T, d_v)


def gated_linear_attention_step(
    S: Memory, phi_q: Key, phi_k: Key, v: Value, gamma: Decay
) -> tuple[Memory, Value]:
    r"""One step of gated linear attention: decay the memory, write the pair, read it.

    Returns the new state :math:`\mathbf{S}_t` and the output :math:`\mathbf{y}_t`.
    The decay is not checked here (see :func:`gated_linear_attention`).

    Shapes:
        S: ``(B, d_v, d_k)``.
        phi_q: ``(B, d_k)``.
        phi_k: ``(B, d_k)``.
        v: ``(B, d_v)``.
        gamma: ``(B, d_k)`` or ``(B, 1)``.
        returns: ``(B, d_v, d_k)`` and ``(B, d_v)``.

    Example:
        >>> S = torch.ones(1, 1, 2)
        >>> k, v = torch.tensor([[1.0, 0.0]]), torch.tensor([[2.0]])
        >>> S, y = gated_linear_attention_step(S, k, k, v, torch.tensor([[0.5, 1.0]]))
        >>> S                                # [1, 1] decayed to [0.5, 1], plus 2 k^T
        tensor([[[2.5000, 1.0000]]])
    """
    decayed = S * gamma[:, None, :]  # S diag(gamma_t), one decay per key column
    S = decayed + v[:, :, None] * phi_k[:, None, :]  # (eq-linattn-gated)
    y = (S @ phi_q[:, :, None])[:, :, 0]  # (B, d_v)
    return S, y
