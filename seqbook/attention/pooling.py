r"""Attention pooling over a bag of instances (Ilse et al., 2018; Widrich et al., 2020).

A sample is a set ("bag") of instances, e.g. the feature vectors of a sequence with
the order ignored. Each instance gets a score from a small network, the scores are
normalised with a softmax over the bag, and the bag is summarised by the weighted sum
of its instances: one fixed-size vector for a bag of any size.

Shape letters: ``B`` bags, ``N`` instances per bag (the largest bag; smaller ones are
padded), ``D`` features per instance, ``H`` hidden units of the scoring network.
"""

from __future__ import annotations

import torch
from jaxtyping import Bool, Float
from torch import Tensor, nn

from seqbook._checks import check_positive_int
from seqbook.attention.masking import masked_softmax

__all__ = ["AttentionPooling"]


class AttentionPooling(nn.Module):
    r"""Summarise a bag of instances by an attention-weighted sum.

    .. math::
        a_i^* = \mathbf{w}^\top \tanh(\mathbf{W} \mathbf{x}_i + \mathbf{b}), \qquad
        \mathbf{a} = \operatorname{softmax}(\mathbf{a}^*), \qquad
        \mathbf{x}_{\text{pool}} = \sum_{i} a_i \mathbf{x}_i

    Ilse et al. (2018) use this scorer without the bias :math:`\mathbf{b}`. With it,
    this is additive attention whose query is a learned constant: the bias plays the
    role of :math:`\mathbf{W}_q \mathbf{q}`. The result does not depend on the order
    of the instances.

    Args:
        input_size: :math:`D`, the size of an instance.
        hidden_size: :math:`H`, the width of the scoring network.

    Shapes:
        bags: ``(B, N, D)``.
        mask: ``(B, N)``, a keep mask: True = a real instance, False = padding.
        returns: the pooled bags ``(B, D)`` and the weights ``(B, N)``.

    Example:
        >>> _ = torch.manual_seed(0)
        >>> pool = AttentionPooling(input_size=4, hidden_size=8)
        >>> bags = torch.randn(2, 5, 4)
        >>> pooled, weights = pool(bags)
        >>> tuple(pooled.shape), tuple(weights.shape)
        ((2, 4), (2, 5))
        >>> shuffled, _ = pool(bags[:, torch.randperm(5)])
        >>> torch.allclose(pooled, shuffled, atol=1e-6)
        True
    """

    def __init__(self, input_size: int, hidden_size: int) -> None:
        super().__init__()
        check_positive_int("input_size", input_size)
        check_positive_int("hidden_size", hidden_size)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.W = nn.Linear(input_size, hidden_size)  # W and b
        self.w = nn.Linear(hidden_size, 1, bias=False)

    def forward(
        self,
        bags: Float[Tensor, "B N {self.input_size}"],
        mask: Bool[Tensor, "B N"] | None = None,
    ) -> tuple[Float[Tensor, "B {self.input_size}"], Float[Tensor, "B N"]]:
        """Return ``(pooled, weights)`` for each bag (shapes in the class docstring)."""
        # (B, N)  (eq-attn-bag)
        scores = self.w(torch.tanh(self.W(bags))).squeeze(-1)
        weights = masked_softmax(scores, mask)  # (B, N)
        pooled = (weights.unsqueeze(-1) * bags).sum(dim=1)  # (B, D)
        return pooled, weights

    def extra_repr(self) -> str:
        return f"input_size={self.input_size}, hidden_size={self.hidden_size}"
