r"""Masks for attention: a softmax that skips masked keys, and the causal mask.

Convention of the whole book: a boolean mask is **True where attention is allowed**
(a real token, a past position) and False where it is not (padding, the future). This
is the convention of ``torch.nn.functional.scaled_dot_product_attention``'s boolean
``attn_mask`` and of :func:`seqbook.data.pad_batch`'s mask, so a padding mask can be
passed on as it is. ``torch.nn.MultiheadAttention`` uses the **opposite** convention
for its boolean ``key_padding_mask`` and ``attn_mask`` (True = *ignore* this key); to
translate between the two, negate the mask: ``~mask``.

Shape letters: ``T_q`` queries, ``T_k`` keys; ``...`` any leading batch dimensions.
"""

from __future__ import annotations

import torch

from seqbook._checks import check_int, check_tensor

__all__ = ["masked_softmax", "causal_mask", "check_mask"]


def check_mask(name: str, mask: object, shape: torch.Size) -> torch.Tensor:
    """Return ``mask`` if it is a boolean tensor that broadcasts to ``shape``.

    Broadcasting must not enlarge ``shape`` itself: a mask of shape ``(2, 1, 5)`` fits
    scores of shape ``(2, 4, 5)``, but a mask of shape ``(3, 4, 5)`` does not.
    """
    check_tensor(name, mask)
    assert isinstance(mask, torch.Tensor)
    if mask.dtype != torch.bool:
        raise TypeError(
            f"{name} must be a boolean tensor (True = attend), got dtype {mask.dtype}; "
            "an additive float mask is not supported"
        )
    try:
        fits = torch.broadcast_shapes(mask.shape, shape) == shape
    except RuntimeError:
        fits = False
    if not fits:
        raise ValueError(
            f"{name} must broadcast to the scores' shape {tuple(shape)}, "
            f"got shape {tuple(mask.shape)}"
        )
    return mask


def masked_softmax(
    scores: torch.Tensor, mask: torch.Tensor | None = None, dim: int = -1
) -> torch.Tensor:
    r"""Softmax over ``dim`` that gives masked entries exactly zero weight.

    .. math::
        \alpha_{ij} = \frac{m_{ij} \exp(e_{ij})}{\sum_{k} m_{ik} \exp(e_{ik})}

    with :math:`m_{ij} \in \{0, 1\}` the mask. A row whose entries are all masked has
    no distribution to normalise; it gets all-zero weights (not NaN), so that the
    attention output of a query that may see nothing is the zero vector.

    Args:
        scores: attention scores (energies) :math:`e`, floating point.
        mask: boolean, broadcastable to ``scores``; True = attend, False = ignore
            (the opposite of ``nn.MultiheadAttention``). ``None`` = plain softmax.
        dim: the dimension to normalise over (the keys).

    Shapes:
        scores: ``(..., T_q, T_k)``.
        mask: broadcastable to ``scores``.
        returns: the shape of ``scores``.

    Returns:
        The weights, non-negative and summing to 1 over ``dim`` in every row that
        has at least one unmasked entry, and all zero in a fully masked row.

    Example:
        >>> scores = torch.tensor([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
        >>> mask = torch.tensor([[True, True, False], [False, False, False]])
        >>> masked_softmax(scores, mask)
        tensor([[0.2689, 0.7311, 0.0000],
                [0.0000, 0.0000, 0.0000]])
    """
    check_tensor("scores", scores, floating=True)
    check_int("dim", dim)
    if not -scores.dim() <= dim < max(scores.dim(), 1):
        raise ValueError(
            f"dim must index one of the {scores.dim()} dimensions of scores, got {dim}"
        )
    if mask is None:
        return torch.softmax(scores, dim=dim)
    check_mask("mask", mask, scores.shape)
    # The most negative finite number instead of -inf: a fully masked row then gives
    # a finite (uniform) softmax instead of 0/0 = NaN, and multiplying by the mask
    # zeroes it. In a row with a real entry, exp(min - max) underflows to exactly 0.
    lowest = torch.finfo(scores.dtype).min
    filled = scores.masked_fill(~mask, lowest)
    return torch.softmax(filled, dim=dim) * mask  # (eq-attn-masked-softmax)


def causal_mask(
    T_q: int, T_k: int | None = None, device: torch.device | str | None = None
) -> torch.Tensor:
    r"""The mask that lets query :math:`i` attend to keys :math:`j \le i` only.

    .. math::
        m_{ij} = [\, j \le i \,]

    Queries and keys are aligned at their first position (``torch.tril``, as
    ``F.scaled_dot_product_attention(..., is_causal=True)`` does).

    Args:
        T_q: number of queries (>= 1).
        T_k: number of keys (>= 1); defaults to ``T_q`` (self-attention).
        device: where to create the mask.

    Shapes:
        returns: ``(T_q, T_k)``, boolean, True = may attend.

    Example:
        >>> causal_mask(3)
        tensor([[ True, False, False],
                [ True,  True, False],
                [ True,  True,  True]])
    """
    check_int("T_q", T_q, min_value=1)
    T_k = T_q if T_k is None else check_int("T_k", T_k, min_value=1)
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril()  # (T_q, T_k)
