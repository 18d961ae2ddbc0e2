r"""The mLSTM of xLSTM (Beck et al., 2024): a matrix memory written with exponential
input gates and sigmoid forget gates, in a recurrent and a parallel form.

Shape letters: ``B`` batch, ``T`` time, ``d`` the width of queries, keys and values.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F

from seqbook._contracts import Shaped

__all__ = ["mlstm_recurrent", "mlstm_parallel"]


def mlstm_recurrent(
    q: Shaped("B T d", floating=True, min_size={"T": 1}),
    k: Shaped("B T d", dtype_of="q"),
    v: Shaped("B T d", dtype_of="q"),
    i_pre: Shaped("B T", dtype_of="q"),
    f_pre: Shaped("B T", dtype_of="q"),
) -> torch.Tensor:
    r"""The mLSTM's memory, one step at a time.

    .. math::
        \mathbf{C}_t = f_t\,\mathbf{C}_{t-1} + i_t\,\mathbf{v}_t\mathbf{k}_t^\top, \quad
        \mathbf{n}_t = f_t\,\mathbf{n}_{t-1} + i_t\,\mathbf{k}_t, \quad
        \tilde{\mathbf{h}}_t = \frac{\mathbf{C}_t\mathbf{q}_t}
        {\max(|\mathbf{n}_t^\top\mathbf{q}_t|, 1)}

    with :math:`i_t = \exp(\tilde{i}_t)`, :math:`f_t = \sigma(\tilde{f}_t)` and the keys
    scaled by :math:`1/\sqrt{d}` (as in xLSTM's code). The memory is stored divided by
    :math:`e^{m_t}` (the stabiliser of the sLSTM), so the bound 1 becomes
    :math:`e^{-m_t}`. The output gate and the projections around the cell are left to
    the block.

    Args:
        q, k, v: queries, keys and values.
        i_pre, f_pre: the input and forget gates' pre-activations :math:`\tilde{i}_t,
            \tilde{f}_t`.

    Shapes:
        q, k, v: ``(B, T, d)``; i_pre, f_pre: ``(B, T)``; returns ``(B, T, d)``.

    Example:
        >>> g = torch.Generator().manual_seed(0)
        >>> q, k, v = torch.randn(3, 1, 6, 4, generator=g)
        >>> i_pre, f_pre = torch.randn(2, 1, 6, generator=g)
        >>> torch.allclose(mlstm_recurrent(q, k, v, i_pre, f_pre),
        ...                mlstm_parallel(q, k, v, i_pre, f_pre), atol=1e-6)
        True
    """
    B, T, d = q.shape
    C = q.new_zeros(B, d, d)  # (B, d, d): values x keys
    n = q.new_zeros(B, d)
    m = q.new_full((B,), -math.inf)
    hs = []
    for t in range(T):
        C, n, m, h = _step(C, n, m, q[:, t], k[:, t] / math.sqrt(d), v[:, t],
                           i_pre[:, t], f_pre[:, t])
        hs.append(h)
    return torch.stack(hs, dim=1)  # (B, T, d)


def _step(
    C: torch.Tensor,
    n: torch.Tensor,
    m: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    i_pre: torch.Tensor,
    f_pre: torch.Tensor,
) -> tuple[torch.Tensor, ...]:
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
    q: Shaped("B T d", floating=True, min_size={"T": 1}),
    k: Shaped("B T d", dtype_of="q"),
    v: Shaped("B T d", dtype_of="q"),
    i_pre: Shaped("B T", dtype_of="q"),
    f_pre: Shaped("B T", dtype_of="q"),
) -> torch.Tensor:
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
    return _parallel(q, k / math.sqrt(q.shape[-1]), v, i_pre, f_pre)


def _parallel(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    i_pre: torch.Tensor,
    f_pre: torch.Tensor,
) -> torch.Tensor:
    log_f = F.logsigmoid(f_pre).cumsum(-1)  # log(f_1 ... f_t), (B, T)
    T = q.shape[1]
    causal = torch.ones(T, T, dtype=torch.bool, device=q.device).tril()
    # (eq-mlstm-parallel)
    log_D = log_f[:, :, None] - log_f[:, None, :] + i_pre[:, None, :]
    log_D = log_D.masked_fill(~causal, -math.inf)  # (B, T, T)
    m = log_D.max(-1, keepdim=True).values  # the row's stabiliser, (B, T, 1)
    scores = (q @ k.transpose(1, 2)) * torch.exp(log_D - m)  # (B, T, T)
    bound = torch.maximum(scores.sum(-1, keepdim=True).abs(), torch.exp(-m))
    return (scores @ v) / bound  # (eq-mlstm-read)
