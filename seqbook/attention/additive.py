r"""Additive (Bahdanau) attention: a one-hidden-layer network scores query-key pairs.

Shape letters: ``B`` batch, ``T_q`` queries, ``T_k`` keys (= values), ``Q`` the size
of a query, ``K`` the size of a key, ``H`` the hidden size, ``V`` the size of a value.
"""

from __future__ import annotations

from typing import TypeAlias

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from seqbook._checks import check_positive_int
from seqbook.attention.masking import masked_softmax

__all__ = ["AdditiveAttention"]

# several queries per sequence, or one (a decoder step)
Queries: TypeAlias = Float[Tensor, "B T_q {self.query_size}"] | Float[Tensor, "B {self.query_size}"]


class AdditiveAttention(nn.Module):
    r"""Attention whose scores come from a small tanh network (Bahdanau et al., 2015).

    .. math::
        e_{ij} = \mathbf{w}_v^\top \tanh(\mathbf{W}_q \mathbf{q}_i +
        \mathbf{W}_k \mathbf{k}_j), \qquad
        \alpha_{ij} = \operatorname{softmax}_j(e_{ij}), \qquad
        \mathbf{c}_i = \sum_j \alpha_{ij} \mathbf{v}_j

    with :math:`\mathbf{W}_q \in \mathbb{R}^{H \times Q}`,
    :math:`\mathbf{W}_k \in \mathbb{R}^{H \times K}` and
    :math:`\mathbf{w}_v \in \mathbb{R}^{H}` (no biases, as in the paper's
    :math:`\mathbf{v}_a^\top \tanh(\mathbf{W}_a \mathbf{s}_{i-1} + \mathbf{U}_a
    \mathbf{h}_j)`). Queries and keys may have different sizes.

    Args:
        query_size: :math:`Q`, the size of a query (e.g. the decoder state).
        key_size: :math:`K`, the size of a key (e.g. an encoder state).
        hidden_size: :math:`H`, the width of the scoring network.

    Shapes:
        queries: ``(B, T_q, Q)``, or ``(B, Q)`` for one query per sequence (a
            decoder step).
        keys: ``(B, T_k, K)``.
        values: ``(B, T_k, V)``.
        mask: boolean **keep mask**, True = attend (the opposite of
            ``nn.MultiheadAttention``'s masks): a 2-D mask is always a key padding mask
            ``(B, T_k)`` (e.g. from :func:`seqbook.data.pad_batch`); a 3-D mask
            must broadcast to ``(B, T_q, T_k)`` (a causal mask: ``(1, T_q, T_k)``).
        returns: context ``(B, T_q, V)`` and weights ``(B, T_q, T_k)``, or
            ``(B, V)`` and ``(B, T_k)`` for 2-D queries.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> attention = AdditiveAttention(query_size=3, key_size=5, hidden_size=8)
        >>> queries, keys = torch.randn(2, 3), torch.randn(2, 4, 5)
        >>> values = torch.randn(2, 4, 6)
        >>> mask = torch.tensor([[True, True, True, True], [True, True, False, False]])
        >>> context, weights = attention(queries, keys, values, mask)
        >>> tuple(context.shape), tuple(weights.shape)
        ((2, 6), (2, 4))
        >>> weights[1, 2:].tolist(), round(weights[1].sum().item(), 6)
        ([0.0, 0.0], 1.0)
    """

    def __init__(
        self,
        query_size: int,
        key_size: int,
        hidden_size: int,
    ) -> None:
        super().__init__()
        for name, size in dict(query_size=query_size, key_size=key_size,
                               hidden_size=hidden_size).items():
            check_positive_int(name, size)
        self.query_size = query_size
        self.key_size = key_size
        self.hidden_size = hidden_size
        self.W_q = nn.Linear(query_size, hidden_size, bias=False)
        self.W_k = nn.Linear(key_size, hidden_size, bias=False)
        self.w_v = nn.Linear(hidden_size, 1, bias=False)

    def scores(
        self,
        queries: Float[Tensor, "B T_q {self.query_size}"],
        keys: Float[Tensor, "B T_k {self.key_size}"],
    ) -> Float[Tensor, "B T_q T_k"]:
        """The energies :math:`e_{ij}`, shape ``(B, T_q, T_k)``, for 3-D queries."""
        # (B, T_q, T_k, H)
        hidden = self.W_q(queries).unsqueeze(2) + self.W_k(keys).unsqueeze(1)
        # (B, T_q, T_k)  (eq-attn-additive)
        return self.w_v(torch.tanh(hidden)).squeeze(-1)

    def forward(
        self,
        queries: Queries,
        keys: Float[Tensor, "B T_k {self.key_size}"],
        values: Float[Tensor, "B T_k V"],
        mask: Bool[Tensor, "#B #T_k"] | Bool[Tensor, "#B #T_q #T_k"] | None = None,
    ) -> tuple[Float[Tensor, "B *T_q V"], Float[Tensor, "B *T_q T_k"]]:
        """Return ``(context, weights)`` for each query (shapes in the class docstring)."""
        single = queries.dim() == 2  # one query per sequence: a decoder step
        q = queries.unsqueeze(1) if single else queries  # (B, T_q, Q)
        if mask is not None and mask.dim() == 2:  # a key padding mask (B, T_k)
            mask = mask.unsqueeze(1)  # (B, 1, T_k)
        weights = masked_softmax(self.scores(q, keys), mask)  # (B, T_q, T_k)
        context = weights @ values  # (B, T_q, V)  (eq-attn-pooling)
        if single:
            return context.squeeze(1), weights.squeeze(1)  # (B, V), (B, T_k)
        return context, weights

    def extra_repr(self) -> str:
        return (
            f"query_size={self.query_size}, key_size={self.key_size}, "
            f"hidden_size={self.hidden_size}"
        )
