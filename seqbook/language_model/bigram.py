r"""The bigram baseline: the next character predicted from the current one alone.

Shape letters: ``B`` batch, ``T`` time, ``V`` vocabulary, ``N`` characters.
"""

from __future__ import annotations

import math

import torch
from torch import nn

from seqbook._contracts import PositiveInt, PositiveReal, Shaped

__all__ = ["BigramLM", "bigram_perplexity"]


class BigramLM(nn.Module):
    r"""A table of next-character probabilities, counted with add-one smoothing.

    .. math::
        P(x_{t+1} = w \mid x_t = v) = \frac{c(v, w) + \alpha}{\sum_{u} c(v, u)
        + \alpha V}

    with :math:`c(v, w)` the number of times :math:`w` follows :math:`v` in the
    training stream and :math:`\alpha` the smoothing count (1: Laplace's add-one), so
    that a pair never seen keeps a small probability. It has no state and no trained
    parameters; ``model(ids)`` returns the log-probabilities as logits, so the bigram
    is evaluated and sampled like every other language model of the package.

    Args:
        train_ids: the training stream ``(N,)``.
        vocab_size: :math:`V`.
        smoothing: :math:`\alpha > 0`.

    Shapes:
        ids: ``(B, T)``.
        returns (forward): ``(logits (B, T, V), None)``.

    Example:
        >>> bigram = BigramLM(torch.tensor([0, 1, 0, 1, 0, 2]), vocab_size=3)
        >>> bigram.log_p.exp()[0]                 # after 0: 1 twice, 2 once
        tensor([0.1667, 0.5000, 0.3333])
    """

    log_p: torch.Tensor

    def __init__(
        self,
        train_ids: Shaped("N", ids="vocab_size", min_size={"N": 2}),
        vocab_size: PositiveInt,
        smoothing: PositiveReal = 1.0,
    ) -> None:
        super().__init__()
        self.vocab_size = V = vocab_size
        self.smoothing = smoothing
        counts = torch.full((V, V), self.smoothing)  # (V, V): row = current character
        counts.index_put_(
            (train_ids[:-1], train_ids[1:]), torch.ones(len(train_ids) - 1), accumulate=True
        )
        log_p = (counts / counts.sum(1, keepdim=True)).log()  # (V, V)
        self.register_buffer("log_p", log_p)

    def init_state(self, batch_size: PositiveInt) -> None:
        """No state: the prediction depends on the last character only."""
        return None

    def forward(
        self, ids: Shaped("B T", ids="vocab_size"), state: None = None
    ) -> tuple[torch.Tensor, None]:
        return self.log_p[ids], None  # (B, T, V)


def bigram_perplexity(
    train_ids: torch.Tensor,
    valid_ids: Shaped("N", ids="vocab_size", min_size={"N": 2}),
    vocab_size: PositiveInt,
    smoothing: float = 1.0,
) -> float:
    r"""The perplexity of the add-one bigram model of ``train_ids`` on ``valid_ids``.

    .. math::
        \exp\Big(-\frac{1}{N-1} \sum_{t=1}^{N-1} \log P(x_{t+1} \mid x_t)\Big)

    Example:
        >>> ids = torch.tensor([0, 1, 0, 1, 0, 1, 0])   # 0 -> 1 and 1 -> 0, 3 times each
        >>> round(bigram_perplexity(ids, ids, vocab_size=2), 3)   # (3 + 1) / (3 + 2)
        1.25
    """
    log_p = BigramLM(train_ids, vocab_size, smoothing).log_p
    return math.exp(-log_p[valid_ids[:-1], valid_ids[1:]].mean().item())
