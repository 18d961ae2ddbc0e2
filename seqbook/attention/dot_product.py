r"""Scaled dot-product attention (Vaswani et al., 2017), returning its weights.

Shape letters: ``T_q`` queries, ``T_k`` keys (= values), ``d_k`` the size of a query
and of a key, ``d_v`` the size of a value; ``...`` any leading batch dimensions, e.g.
``(B,)`` or ``(B, heads)``.
"""

from __future__ import annotations

import math
from typing import TypeAlias

import torch  # noqa: F401  (the Example below)
import torch.nn.functional as F
from jaxtyping import Bool, Float
from torch import Tensor

from seqbook._checks import check_probability
from seqbook.attention.masking import causal_mask, masked_softmax

__all__ = ["scaled_dot_product_attention"]

# a keep mask (True = attend) or a float mask added to the scores
Mask: TypeAlias = Bool[Tensor, "*#batch #T_q #T_k"] | Float[Tensor, "*#batch #T_q #T_k"]


def _check_options(attn_mask: Tensor | None, dropout_p: float, is_causal: bool) -> None:
    check_probability("dropout_p", dropout_p)
    if attn_mask is not None and is_causal:
        raise ValueError("pass either attn_mask or is_causal=True, not both (as in F.scaled_dot_"
                         "product_attention); merge the causal mask into attn_mask")


def scaled_dot_product_attention(
    Q: Float[Tensor, "*#batch T_q d_k"],
    K: Float[Tensor, "*#batch T_k d_k"],
    V: Float[Tensor, "*#batch T_k d_v"],
    attn_mask: Mask | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    *,
    scale: float | None = None,
) -> tuple[Float[Tensor, "*batch T_q d_v"], Float[Tensor, "*batch T_q T_k"]]:
    r"""Attention of every query to all keys, with the weights it used.

    .. math::
        \operatorname{Attention}(\mathbf{Q}, \mathbf{K}, \mathbf{V}) =
        \operatorname{softmax}\!\left(\frac{\mathbf{Q}\mathbf{K}^\top}{\sqrt{d_k}}
        + \mathbf{M}\right) \mathbf{V}

    with :math:`\mathbf{M}` the mask: 0 where attention is allowed, :math:`-\infty`
    where it is not, or any real bias. The arguments are those of
    ``torch.nn.functional.scaled_dot_product_attention`` with the same meanings and
    defaults (a boolean ``attn_mask`` is True where attention is **allowed**, a float
    one is added to the scores); it also returns the attention weights, and a query
    whose keys are all masked gets the zero vector (as torch's).

    Args:
        Q: queries, floating point.
        K: keys, with the same ``d_k`` and dtype as the queries.
        V: values, one per key.
        attn_mask: boolean **keep mask** (True = attend, False = ignore; see
            :mod:`seqbook.attention.masking`) or floating-point mask added to the
            scores (e.g. a relative-position bias, or :math:`-\infty` to forbid),
            broadcastable to the scores' shape ``(..., T_q, T_k)``. E.g. a key padding
            mask ``(B, 1, T_k)`` or a causal mask ``(T_q, T_k)``. A float mask is
            converted to the queries' dtype.
        dropout_p: probability in ``[0, 1)`` of zeroing a weight before it is applied
            to the values (survivors are scaled by ``1 / (1 - dropout_p)``); applied
            whenever it is > 0, as torch's. Pass 0 at evaluation time.
        is_causal: apply :func:`~seqbook.attention.causal_mask` (query :math:`i`
            sees keys :math:`j \le i`, aligned at the first position); not together
            with ``attn_mask``.
        scale: the factor applied to :math:`\mathbf{Q}\mathbf{K}^\top`; defaults to
            :math:`1/\sqrt{d_k}`.

    Shapes:
        Q: ``(..., T_q, d_k)``; the leading dimensions of Q, K and V must broadcast.
        K: ``(..., T_k, d_k)``.
        V: ``(..., T_k, d_v)``.
        attn_mask: broadcastable to ``(..., T_q, T_k)``.
        returns: output ``(..., T_q, d_v)`` and weights ``(..., T_q, T_k)``.

    Returns:
        ``(output, weights)``. ``weights`` are the attention distribution before
        dropout: each row is non-negative and sums to 1 (or is all zero if the mask
        hides every key). Without dropout ``output == weights @ V``.

    Example:
        >>> Q = torch.tensor([[1.0, 0.0]])               # (T_q, d_k) = (1, 2)
        >>> K = torch.tensor([[1.0, 0.0], [0.0, 1.0]])   # (T_k, d_k) = (2, 2)
        >>> V = torch.tensor([[10.0], [20.0]])           # (T_k, d_v) = (2, 1)
        >>> output, weights = scaled_dot_product_attention(Q, K, V)
        >>> weights
        tensor([[0.6698, 0.3302]])
        >>> output
        tensor([[13.3024]])
    """
    _check_options(attn_mask, dropout_p, is_causal)
    T_q, T_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    mask = causal_mask(T_q, T_k, device=Q.device) if is_causal else attn_mask
    scale = 1.0 / math.sqrt(d_k) if scale is None else scale
    # Scaling Q (T_q x d_k numbers) rather than the scores (T_q x T_k) is
    # the same product with fewer multiplications when T_k > d_k.
    # (..., T_q, T_k)  (eq-attn-sdpa)
    scores = (Q * scale) @ K.transpose(-2, -1)
    if mask is not None and mask.is_floating_point():  # a bias: add, drop -inf
        scores, mask = scores + mask.to(Q.dtype), mask > float("-inf")
    # (..., T_q, T_k)  (eq-attn-masked-softmax)
    weights = masked_softmax(scores, mask)
    dropped = F.dropout(weights, p=dropout_p) if dropout_p > 0 else weights
    return dropped @ V, weights  # (..., T_q, d_v), (..., T_q, T_k)
