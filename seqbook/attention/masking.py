r"""Masks for attention: a softmax that skips masked keys, the causal mask, and the
translation between the two mask conventions of PyTorch.

Two conventions meet in attention code, and this book uses each one under the name
PyTorch gives it, with PyTorch's meaning:

* a **keep mask** is True where attention is allowed (a real token, a past position).
  It is the polarity of :func:`~seqbook.attention.masked_softmax`'s ``mask``, of
  :func:`~seqbook.attention.causal_mask`, of
  :func:`seqbook.data.pad_batch`'s mask, and of the boolean ``attn_mask`` of
  ``torch.nn.functional.scaled_dot_product_attention`` (and of
  :func:`~seqbook.attention.scaled_dot_product_attention`);
* an **ignore mask** is True where attention is *forbidden* (padding, the future). It
  is the polarity of the boolean ``key_padding_mask`` and ``attn_mask`` of
  ``torch.nn.MultiheadAttention`` and of the ``src_mask``, ``tgt_mask``, ``memory_mask``
  and ``*_key_padding_mask`` of PyTorch's transformer layers, and so of
  :class:`~seqbook.attention.MultiHeadAttention` and the transformer blocks.

Negation (``~mask``) turns one into the other. A floating-point mask is neither: it is
**added** to the scores (0 keeps a score, :math:`-\infty` removes the key, anything
else is a bias such as a relative-position bias), in both conventions.

Shape letters: ``T_q`` queries, ``T_k`` keys; ``...`` any leading batch dimensions.
"""

from __future__ import annotations

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from seqbook._checks import check_positive_int

__all__ = ["masked_softmax", "causal_mask", "merge_masks"]


def merge_masks(*masks: torch.Tensor | None) -> torch.Tensor | None:
    """Combine keep masks and additive float masks into one mask of the same kind.

    Boolean keep masks combine with ``&``; if any mask is floating point, the boolean
    ones become 0 (keep) or :math:`-\\infty` (drop) and all are added. ``None`` entries
    are skipped; ``None`` comes back when all are ``None``.

    Example:
        >>> keep = torch.tensor([True, False, True])
        >>> merge_masks(keep, torch.tensor([True, True, False]))
        tensor([ True, False, False])
        >>> merge_masks(keep, torch.tensor([0.5, 0.0, 0.0]))
        tensor([0.5000,   -inf, 0.0000])
    """
    present = [m for m in masks if m is not None]
    if not present:
        return None
    floats = [m for m in present if m.is_floating_point()]
    if not floats:
        merged = present[0]
        for m in present[1:]:
            merged = merged & m
        return merged
    dtype = floats[0].dtype
    biases = [m.to(dtype) if m.is_floating_point() else _keep_to_bias(m, dtype)
              for m in present]
    merged = biases[0]
    for bias in biases[1:]:
        merged = merged + bias
    return merged


def _keep_to_bias(keep: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """A keep mask as an additive mask: 0 where kept, -inf where dropped."""
    bias = torch.zeros(keep.shape, dtype=dtype, device=keep.device)
    return bias.masked_fill(~keep, float("-inf"))


def masked_softmax(
    scores: Float[Tensor, "*shape"],
    mask: Bool[Tensor, "*#shape"] | None = None,
    dim: int = -1,
) -> Float[Tensor, "*shape"]:
    r"""Softmax over ``dim`` that gives masked entries exactly zero weight.

    .. math::
        \alpha_{ij} = \frac{m_{ij} \exp(e_{ij})}{\sum_{k} m_{ik} \exp(e_{ik})}

    with :math:`m_{ij} \in \{0, 1\}` the mask. A row whose entries are all masked has
    no distribution to normalise; it gets all-zero weights (not NaN), so that the
    attention output of a query that may see nothing is the zero vector (as in
    ``F.scaled_dot_product_attention``).

    Args:
        scores: attention scores (energies) :math:`e`, floating point.
        mask: a boolean **keep mask**, broadcastable to ``scores``: True = attend,
            False = ignore (see :mod:`seqbook.attention.masking`). ``None`` = plain
            softmax.
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
    n = scores.dim()
    if not -n <= dim < max(n, 1):
        raise ValueError(f"dim must index one of the {n} dimensions of scores, "
                         f"got {dim}")
    if mask is None:
        return torch.softmax(scores, dim=dim)
    # The most negative finite number instead of -inf: a fully masked row
    # then gives a finite (uniform) softmax instead of 0/0 = NaN, and
    # multiplying by the mask zeroes it. In a row with a real entry,
    # exp(min - max) underflows to exactly 0.
    lowest = torch.finfo(scores.dtype).min
    filled = scores.masked_fill(~mask, lowest)
    return torch.softmax(filled, dim=dim) * mask  # (eq-attn-masked-softmax)


def causal_mask(
    T_q: int, T_k: int | None = None, device: torch.device | str | None = None
) -> Bool[Tensor, "T_q T_k"]:
    r"""The keep mask that lets query :math:`i` attend to keys :math:`j \le i` only.

    .. math::
        m_{ij} = [\, j \le i \,]

    Queries and keys are aligned at their first position (``torch.tril``, as
    ``F.scaled_dot_product_attention(..., is_causal=True)`` does). This is a **keep
    mask** (True = may attend); the boolean masks of ``torch.nn.MultiheadAttention``
    and the transformer blocks mean the opposite, so pass ``~causal_mask(T)`` (or
    ``is_causal=True``). ``nn.Transformer.generate_square_subsequent_mask`` returns
    neither: a float mask, 0 where allowed and ``-inf`` above the diagonal.

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
    T_k = T_q if T_k is None else T_k
    check_positive_int("T_q", T_q), check_positive_int("T_k", T_k)
    return torch.ones(T_q, T_k, dtype=torch.bool, device=device).tril()  # (T_q, T_k)
