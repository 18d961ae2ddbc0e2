r"""The state of linear attention as an associative memory: Hebbian and delta-rule writes.

Linear attention writes each pair into its state with the outer product
:math:`\mathbf{v}\mathbf{k}^\top`, the Hebbian rule of the classical Hopfield network;
the delta rule (Widrow & Hoff, 1960; as fast weights, Schlag, Irie & Schmidhuber,
2021; DeltaNet, Yang et al., 2024) writes instead the error of what the memory
already returns for that key, and so overwrites rather than adds.

Shape letters: ``B`` batch, ``T`` time (pairs written), ``d_k`` key features, ``d_v``
value features.
"""

from __future__ import annotations

import torch
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import check_choice, check_real, check_steps
from seqbook.linear_attention.kernelized import (
    Features,
    Key,
    Memory,
    Value,
    Values,
)

__all__ = ["associative_memory", "delta_rule_attention", "delta_write", "hebbian_write"]

RULES = ("hebbian", "delta")


def associative_memory(
    K: Features, V: Values, rule: str = "hebbian", beta: float = 1.0
) -> Memory:
    r"""Write the pairs :math:`(\mathbf{k}_t, \mathbf{v}_t)` one after the other into a
    matrix memory, starting from :math:`\mathbf{S}_0 = 0`, and return the final state.

    .. math::
        \text{Hebbian:}\quad \mathbf{S}_t = \mathbf{S}_{t-1} + \mathbf{v}_t \mathbf{k}_t^\top
        \qquad
        \text{delta:}\quad \mathbf{S}_t = \mathbf{S}_{t-1}
        + \beta\,(\mathbf{v}_t - \mathbf{S}_{t-1}\mathbf{k}_t)\,\mathbf{k}_t^\top

    Reading with a key, :math:`\mathbf{S}_T \mathbf{k}`, returns the stored value plus
    crosstalk from the others. With unit keys and :math:`\beta = 1`, the delta rule
    makes :math:`\mathbf{S}_t \mathbf{k}_t = \mathbf{v}_t` exactly after each write.
    Each write is :func:`hebbian_write` or :func:`delta_write`.

    Args:
        K: the keys (the feature map already applied, if any).
        V: the values.
        rule: ``"hebbian"`` or ``"delta"``.
        beta: the delta rule's writing strength :math:`\beta > 0` (ignored by Hebb).

    Shapes:
        K: ``(B, T, d_k)``; V: ``(B, T, d_v)``; returns ``(B, d_v, d_k)``.

    Example:
        >>> K = torch.eye(3)[None]                  # three orthonormal keys
        >>> V = torch.tensor([[[1.0], [2.0], [3.0]]])
        >>> (associative_memory(K, V) @ K[0, 1])   # reads the second value
        tensor([[2.]])
    """
    check_choice("rule", rule, RULES)
    check_real("beta", beta, min_value=0.0, strict_min=True)
    S = K.new_zeros(K.shape[0], V.shape[2], K.shape[2])  # (B, d_v, d_k)
    for t in range(K.shape[1]):
        if rule == "hebbian":
            S = hebbian_write(S, K[:, t], V[:, t])
        else:
            S = delta_write(S, K[:, t], V[:, t], beta)
    return S


def hebbian_write(S: Memory, k: Key, v: Value) -> Memory:
    r"""Hebb's rule: add the outer product of the pair to the memory,
    :math:`\mathbf{S} + \mathbf{v}\mathbf{k}^\top`.

    Example:
        >>> hebbian_write(torch.zeros(1, 1, 2), torch.tensor([[1.0, 2.0]]), torch.ones(1, 1))
        tensor([[[1., 2.]]])
    """
    return S + v[:, :, None] * k[:, None, :]  # (eq-linattn-state): S + v k^T


def delta_write(
    S: Memory, k: Key, v: Value, beta: float | Float[Tensor, "B 1 1"]
) -> Memory:
    r"""The delta rule: write the error of what the memory returns for the key,
    :math:`\mathbf{S} + \beta\,(\mathbf{v} - \mathbf{S}\mathbf{k})\,\mathbf{k}^\top`.

    ``beta`` is one strength, or one per row of the batch (DeltaNet's learned
    :math:`\beta_t`).

    Example:
        >>> S = torch.tensor([[[2.0, 0.0]]])          # returns 2 for the key (1, 0)
        >>> delta_write(S, torch.tensor([[1.0, 0.0]]), torch.tensor([[5.0]]), beta=1.0)
        tensor([[[5., 0.]]])
    """
    v_old = (S @ k[:, :, None])[:, :, 0]  # what the memory returns for k
    # (eq-linattn-delta)
    return S + beta * (v - v_old)[:, :, None] * k[:, None, :]


def delta_rule_attention(
    Q: Features, K: Features, V: Values, beta: float = 1.0
) -> Values:
    r"""Causal attention with a delta-rule memory: write each pair, then read.

    .. math::
        \mathbf{S}_t = \mathbf{S}_{t-1}
        + \beta\,(\mathbf{v}_t - \mathbf{S}_{t-1}\mathbf{k}_t)\,\mathbf{k}_t^\top,
        \qquad \mathbf{y}_t = \mathbf{S}_t \mathbf{q}_t

    (DeltaNet's recurrence with a fixed :math:`\beta > 0`; no normaliser, so keys are
    usually scaled to unit length.)

    Shapes:
        Q, K: ``(B, T, d_k)`` with ``T >= 1``; V: ``(B, T, d_v)``; returns
        ``(B, T, d_v)``.

    Example:
        >>> K = torch.eye(2).repeat(1, 2, 1)        # key 1, key 2, key 1, key 2
        >>> V = torch.tensor([[[1.0], [2.0], [5.0], [7.0]]])
        >>> delta_rule_attention(K, K, V)[0, :, 0]  # the later values overwrite
        tensor([1., 2., 5., 7.])
    """
    check_real("beta", beta, min_value=0.0, strict_min=True)
    check_steps("Q", Q, "B T d_k")
    S = K.new_zeros(K.shape[0], V.shape[2], K.shape[2])  # (B, d_v, d_k)
    outputs = []
    for t in range(K.shape[1]):
        S = delta_write(S, K[:, t], V[:, t], beta)
        outputs.append((S @ Q[:, t, :, None])[:, :, 0])  # (B, d_v)
    return torch.stack(outputs, dim=1)  # (B, T, d_v)
