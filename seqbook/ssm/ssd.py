r"""Mamba-2's chunked algorithm (state space duality, SSD): a selective SSM with one
decay per step computed by blocks, the masked-attention form inside each chunk and the
recurrence from chunk to chunk.

The recurrence :math:`\mathbf{H}_t = a_t \mathbf{H}_{t-1} + \mathbf{B}_t
\mathbf{x}_t^\top`, :math:`\mathbf{y}_t = \mathbf{H}_t^\top \mathbf{C}_t` is also gated
linear attention with a scalar decay
(:func:`~seqbook.linear_attention.gated_linear_attention` with queries
:math:`\mathbf{C}`, keys :math:`\mathbf{B}` and values :math:`\mathbf{x}`).

Shape letters: ``b`` batch, ``L`` length, ``N`` state size (keys), ``P`` channels of a
head (values), ``C`` chunk length.
"""

from __future__ import annotations

from typing import TypeAlias

import torch
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import _reads_values, check_positive_int, check_steps
from seqbook.ssm.selective import semiseparable_matrix

__all__ = ["ssd_chunk", "ssd_chunked"]

# the inputs of a head (values), its log-decays, its input and output vectors (keys and
# queries), and its state: one column of N numbers per channel
Inputs: TypeAlias = Float[Tensor, "b L P"]
LogDecays: TypeAlias = Float[Tensor, "b L"]
Vectors: TypeAlias = Float[Tensor, "b L N"]
State: TypeAlias = Float[Tensor, "b N P"]


def ssd_chunked(x: Inputs, log_a: LogDecays, B: Vectors, C: Vectors,
                chunk_size: int = 64) -> Inputs:
    r"""A selective SSM with a scalar decay per step, computed by chunks (Mamba-2's SSD).

    Cut the sequence into chunks of :math:`C` positions. Inside chunk :math:`c` the
    outputs are the masked attention of :func:`~seqbook.ssm.semiseparable_matrix` on the
    chunk alone, plus the state left by the earlier chunks, decayed to each position:

    .. math::
        \mathbf{Y}_{[c]} = \mathbf{M}_{[c]} \mathbf{X}_{[c]}
        + \operatorname{diag}(\boldsymbol{\alpha}_{[c]})\,\mathbf{C}_{[c]}
        \mathbf{H}_{[c-1]}, \qquad
        \mathbf{H}_{[c]} = \alpha_{[c],C}\, \mathbf{H}_{[c-1]}
        + \mathbf{B}_{[c]}^\top \operatorname{diag}(\boldsymbol{\beta}_{[c]})
        \mathbf{X}_{[c]}

    with :math:`\alpha_{[c],i}` the product of the chunk's decays up to its position
    :math:`i` and :math:`\beta_{[c],j}` the product of those after :math:`j` (one chunk:
    :func:`ssd_chunk`). Cost :math:`O(L C (N + P) + L N P)`: :math:`C = 1` is the
    recurrence, :math:`C = L` the whole :math:`L \times L` matrix.

    Args:
        x: the inputs (values), :math:`P` channels sharing one decay.
        log_a: :math:`\log a_t \le 0` of each position (:math:`a_t = e^{\Delta_t A}`).
        B: the input vectors (keys; Mamba writes :math:`\Delta_t \mathbf{B}_t` here).
        C: the output vectors (queries).
        chunk_size: :math:`C \ge 1` (the last chunk may be shorter).

    Shapes:
        x: ``(b, L, P)``, with ``L >= 1``.
        log_a: ``(b, L)``.
        B: ``(b, L, N)``.
        C: ``(b, L, N)``.
        returns: ``(b, L, P)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> x, B, C = torch.randn(3, 1, 10, 2, generator=g)
        >>> log_a = -torch.rand(1, 10, generator=g)
        >>> whole = semiseparable_matrix(log_a, B, C) @ x
        >>> torch.allclose(ssd_chunked(x, log_a, B, C, chunk_size=4), whole, atol=1e-6)
        True
    """
    check_positive_int("chunk_size", chunk_size)
    check_steps("x", x, "b L P")
    if _reads_values(log_a) and not bool((log_a <= 0).all()):
        raise ValueError("log_a must be <= 0 (the logarithm of a decay in (0, 1]), got "
                         f"a maximum of {log_a.max().item():.4g}")
    H = x.new_zeros(x.shape[0], B.shape[2], x.shape[2])  # (b, N, P)
    outputs = []
    for start in range(0, x.shape[1], chunk_size):
        part = slice(start, start + chunk_size)
        H, Y = ssd_chunk(H, log_a[:, part], B[:, part], C[:, part], x[:, part])
        outputs.append(Y)
    return torch.cat(outputs, dim=1)  # (b, L, P)


def ssd_chunk(H: State, log_a: LogDecays, B: Vectors, C: Vectors,
              x: Inputs) -> tuple[State, Inputs]:
    r"""One chunk of :func:`ssd_chunked`: its own positions through the masked matrix,
    the earlier ones through the state :math:`\mathbf{H}`, which it then carries over
    the chunk.

    Returns the new state and the chunk's outputs.

    Shapes:
        H: ``(b, N, P)``.
        log_a: ``(b, C)``.
        B: ``(b, C, N)``.
        C: ``(b, C, N)``.
        x: ``(b, C, P)``.
        returns: ``(b, N, P)`` and ``(b, C, P)``.

    Example:
        >>> ones = torch.ones(1, 2, 1)
        >>> H, Y = ssd_chunk(torch.ones(1, 1, 1), torch.log(torch.full((1, 2), 0.5)),
        ...                  ones, ones, ones)
        >>> H.item(), Y[0, :, 0]          # 1/4 of the old state + 1/2 + 1
        (1.75, tensor([1.5000, 1.7500]))
    """
    log_alpha = log_a.cumsum(-1)  # log(a_1 ... a_i) inside the chunk, (b, C)
    alpha = torch.exp(log_alpha)  # the old state's decay to position i
    beta = torch.exp(log_alpha[:, -1:] - log_alpha)  # a_{j+1} ... a_C, (b, C)
    inside = semiseparable_matrix(log_a, B, C) @ x  # M_[c] X_[c], (b, C, P)
    Y = inside + alpha[:, :, None] * (C @ H)  # (eq-ssm-ssd-chunk)
    written = B.transpose(1, 2) @ (beta[:, :, None] * x)  # (b, N, P)
    H = alpha[:, -1, None, None] * H + written  # (eq-ssm-ssd-chunk)
    return H, Y
