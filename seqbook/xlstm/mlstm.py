r"""The mLSTM of xLSTM (Beck et al., 2024): a matrix memory written with exponential
input gates and sigmoid forget gates, in a recurrent and a parallel form.

Shape letters: ``B`` batch, ``T`` time, ``d`` the width of queries, keys and values.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import Tensor

from seqbook._checks import check_steps

__all__ = ["mlstm_recurrent", "mlstm_parallel", "mlstm_step"]


def mlstm_recurrent(
    q: Float[Tensor, "B T d"],
    k: Float[Tensor, "B T d"],
    v: Float[Tensor, "B T d"],
    i_pre: Float[Tensor, "B T"],
    f_pre: Float[Tensor, "B T"],
) -> Float[Tensor, "B T d"]:
    r"""The mLSTM's memory, one step at a time.

    .. math::
        \mathbf{C}_t = f_t\,\mathbf{C}_{t-1} + i_t\,\mathbf{v}_t\mathbf{k}_t^\top, \quad
        \mathbf{n}_t = f_t\,\mathbf{n}_{t-1} + i_t\,\mathbf{k}_t, \quad
        \tilde{\mathbf{h}}_t = \frac{\mathbf{C}_t\mathbf{q}_t}
        {\max(|\mathbf{n}_t^\top\mathbf{q}_t|, 1)}

    with :math:`i_t = \exp(\tilde{i}_t)`, :math:`f_t = \sigma(\tilde{f}_t)` and the keys
    scaled by :math:`1/\sqrt{d}` (as in xLSTM's code). The memory is stored divided by
    :math:`e^{m_t}` (the stabiliser of the sLSTM), so the bound 1 becomes
    :math:`e^{-m_t}`. Each step is :func:`mlstm_step`. The output gate and the
    projections around the cell are left to the block.

    Args:
        q, k, v: queries, keys and values.
        i_pre, f_pre: the input and forget gates' pre-activations :math:`\tilde{i}_t,
            \tilde{f}_t`.

    Shapes:
        q, k, v: ``(B, T, d)`` with ``T >= 1``; i_pre, f_pre: ``(B, T)``; returns
        ``(B, T, d)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> q, k, v = torch.randn(3, 1, 6, 4, generator=g)
        >>> i_pre, f_pre = torch.randn(2, 1, 6, generator=g)
        >>> torch.allclose(mlstm_recurrent(q, k, v, i_pre, f_pre),
        ...                mlstm_parallel(q, k, v, i_pre, f_pre), atol=1e-6)
        True
    """
    check_steps("q", q, "B T d")
    B, T, d = q.shape
    C = q.new_zeros(B, d, d)  # (B, d, d): values x keys
    n = q.new_zeros(B, d)
    m = q.new_full((B,), -math.inf)
    hs = []
    for t in range(T):
        C, n, m, h = mlstm_step(C, n, m, q[:, t], k[:, t] / math.sqrt(d), v[:, t],
                                i_pre[:, t], f_pre[:, t])
        hs.append(h)
    return torch.stack(hs, dim=1)  # (B, T, d)


def mlstm_step(
    C: Float[Tensor, "B d d"], n: Float[Tensor, "B d"], m: Float[Tensor, " B"],
    q: Float[Tensor, "B d"], k: Float[Tensor, "B d"], v: Float[Tensor, "B d"],
    i_pre: Float[Tensor, " B"], f_pre: Float[Tensor, " B"],
) -> tuple[Float[Tensor, "B d d"], Float[Tensor, "B d"], Float[Tensor, " B"],
           Float[Tensor, "B d"]]:
    r"""One stabilised step of the mLSTM: write :math:`(\mathbf{k}_t, \mathbf{v}_t)` into
    the memory :math:`(\mathbf{C}, \mathbf{n})` through the gates, then read it with
    :math:`\mathbf{q}_t`.

    The memory is stored divided by :math:`e^{m}` (the stabiliser :math:`m` starts at
    :math:`-\infty`, nothing written); the key is already scaled by :math:`1/\sqrt{d}`
    (as :func:`mlstm_recurrent` does). Returns the new :math:`(\mathbf{C}, \mathbf{n},
    m)` and the read-out :math:`\tilde{\mathbf{h}}_t`.

    Shapes:
        C: ``(B, d, d)`` (values x keys).
        n, q, k, v: ``(B, d)``.
        m, i_pre, f_pre: ``(B,)``.
        returns: ``(B, d, d)``, ``(B, d)``, ``(B,)``, ``(B, d)``.

    Example:
        >>> C, n, m = torch.zeros(1, 2, 2), torch.zeros(1, 2), torch.full((1,), -math.inf)
        >>> q = k = torch.tensor([[1.0, 0.0]])
        >>> C, n, m, h = mlstm_step(C, n, m, q, k, torch.tensor([[3.0, 4.0]]),
        ...                         torch.zeros(1), torch.zeros(1))
        >>> h                                  # one pair read with its own key
        tensor([[3., 4.]])
    """
    log_f = F.logsigmoid(f_pre)  # (B,)
    m_new = torch.maximum(log_f + m, i_pre)  # (eq-slstm-stabiliser)
    i, f = (
        torch.exp(i_pre - m_new)[:, None],
        torch.exp(log_f + m - m_new)[:, None],
    )
    # (eq-mlstm-memory)
    C = f[:, :, None] * C + i[:, :, None] * v[:, :, None] * k[:, None, :]
    n = f * n + i * k  # (B, d)
    numerator = (C @ q[:, :, None])[:, :, 0]  # (B, d)
    # (eq-mlstm-read)
    bound = torch.maximum((n * q).sum(-1).abs(), torch.exp(-m_new))
    return C, n, m_new, numerator / bound[:, None]


def mlstm_parallel(
    q: Float[Tensor, "B T d"],
    k: Float[Tensor, "B T d"],
    v: Float[Tensor, "B T d"],
    i_pre: Float[Tensor, "B T"],
    f_pre: Float[Tensor, "B T"],
) -> Float[Tensor, "B T d"]:
    r"""The mLSTM's memory for all positions at once: gated, masked linear attention.

    .. math::
        \tilde{\mathbf{h}} = \frac{(\mathbf{Q}\mathbf{K}^\top \odot \mathbf{D})\,\mathbf{V}}
        {\max(|(\mathbf{Q}\mathbf{K}^\top \odot \mathbf{D})\mathbf{1}|, e^{-\mathbf{m}})},
        \qquad D_{ij} = \Big(\prod_{l=j+1}^{i} f_l\Big)\, i_j \quad (j \le i)

    computed in log space and divided row by row by :math:`e^{m_i}`, :math:`m_i =
    \max_j \log D_{ij}`. Same arguments and result as :func:`mlstm_recurrent`.

    Example:
        >>> q = k = v = torch.ones(1, 3, 2)
        >>> mlstm_parallel(q, k, v, torch.zeros(1, 3), torch.full((1, 3), 50.0))[0, :, 0]
        tensor([1., 1., 1.])
    """
    check_steps("q", q, "B T d")
    B, T, d = q.shape
    log_f = F.logsigmoid(f_pre).cumsum(-1)  # log(f_1 ... f_t), (B, T)
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    # (eq-mlstm-parallel)
    log_D = log_f[:, :, None] - log_f[:, None, :] + i_pre[:, None, :]
    log_D = log_D.masked_fill(~causal, -math.inf)  # (B, T, T)
    m = log_D.max(-1, keepdim=True).values  # the row's stabiliser, (B, T, 1)
    scores = (q @ (k / math.sqrt(d)).transpose(1, 2)) * torch.exp(log_D - m)
    bound = torch.maximum(scores.sum(-1, keepdim=True).abs(), torch.exp(-m))
    return (scores @ v) / bound  # (eq-mlstm-read)
