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

from seqbook._contracts import OneOf, PositiveReal, Shaped

__all__ = ["associative_memory", "delta_rule_attention"]


# the keys and the values written with them
Keys = Shaped("B T d_k", floating=True)
Values = Shaped("B T d_v", dtype_of="K")


def associative_memory(
    K: Keys,
    V: Values,
    rule: OneOf('hebbian', 'delta') = "hebbian",
    beta: PositiveReal = 1.0,
) -> torch.Tensor:
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

    Args:
        K: the keys (the feature map already applied, if any).
        V: the values.
        rule: ``"hebbian"`` or ``"delta"``.
        beta: the delta rule's writing strength :math:`\beta` (ignored by Hebb).

    Shapes:
        K: ``(B, T, d_k)``; V: ``(B, T, d_v)``; returns ``(B, d_v, d_k)``.

    Example:
        >>> K = torch.eye(3)[None]                  # three orthonormal keys
        >>> V = torch.tensor([[[1.0], [2.0], [3.0]]])
        >>> (associative_memory(K, V) @ K[0, 1])   # reads the second value
        tensor([[2.]])
    """
    S = K.new_zeros(K.shape[0], V.shape[2], K.shape[2])  # (B, d_v, d_k)
    for t in range(K.shape[1]):
        if rule == "hebbian":
            S = _hebbian_write(S, K[:, t], V[:, t])
        else:
            S = _delta_write(S, K[:, t], V[:, t], beta)
    return S


def _hebbian_write(
    S: torch.Tensor, k: torch.Tensor, v: torch.Tensor
) -> torch.Tensor:
    return S + v[:, :, None] * k[:, None, :]  # (eq-linattn-state): S + v k^T


def _delta_write(S: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                 beta: float) -> torch.Tensor:
    v_old = (S @ k[:, :, None])[:, :, 0]  # what the memory returns for k
    # (eq-linattn-delta)
    return S + beta * (v - v_old)[:, :, None] * k[:, None, :]


def delta_rule_attention(
    Q: Shaped("B T d_k", floating=True, dtype_of="K", min_size={"T": 1}),
    K: Keys,
    V: Values,
    beta: PositiveReal = 1.0,
) -> torch.Tensor:
    r"""Causal attention with a delta-rule memory: write each pair, then read.

    .. math::
        \mathbf{S}_t = \mathbf{S}_{t-1}
        + \beta\,(\mathbf{v}_t - \mathbf{S}_{t-1}\mathbf{k}_t)\,\mathbf{k}_t^\top,
        \qquad \mathbf{y}_t = \mathbf{S}_t \mathbf{q}_t

    (DeltaNet's recurrence with a fixed :math:`\beta`; no normaliser, so keys are
    usually scaled to unit length.)

    Shapes:
        Q, K: ``(B, T, d_k)``; V: ``(B, T, d_v)``; returns ``(B, T, d_v)``.

    Example:
        >>> K = torch.eye(2).repeat(1, 2, 1)        # key 1, key 2, key 1, key 2
        >>> V = torch.tensor([[[1.0], [2.0], [5.0], [7.0]]])
        >>> delta_rule_attention(K, K, V)[0, :, 0]  # the later values overwrite
        tensor([1., 2., 5., 7.])
    """
    S = K.new_zeros(K.shape[0], V.shape[2], K.shape[2])  # (B, d_v, d_k)
    outputs = []
    for t in range(K.shape[1]):
        S = _delta_write(S, K[:, t], V[:, t], beta)
        outputs.append((S @ Q[:, t, :, None])[:, :, 0])  # (B, d_v)
    return torch.stack(outputs, dim=1)  # (B, T, d_v)
