r"""The bigram baseline: the next character predicted from the current one alone.

Shape letters: ``B`` batch, ``T`` time, ``V`` vocabulary, ``N`` characters.
"""

from __future__ import annotations

import math

import torch
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_positive_int, check_real, check_token_ids

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
        train_ids: the training stream ``(N,)``, ``N >= 2``.
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

    log_p: Tensor

    def __init__(
        self,
        train_ids: Int[Tensor, " N"],
        vocab_size: int,
        smoothing: float = 1.0,
    ) -> None:
        super().__init__()
        check_positive_int("vocab_size", vocab_size)
        _check_stream("train_ids", train_ids, vocab_size)
        check_real("smoothing", smoothing, min_value=0.0, strict_min=True)
        self.vocab_size = V = vocab_size
        self.smoothing = smoothing
        counts = torch.full((V, V), self.smoothing)  # (V, V): row = current character
        counts.index_put_(
            (train_ids[:-1], train_ids[1:]), torch.ones(len(train_ids) - 1), accumulate=True
        )
        log_p = (counts / counts.sum(1, keepdim=True)).log()  # (V, V)
        self.register_buffer("log_p", log_p)

    def init_state(self, batch_size: int) -> None:
        """No state: the prediction depends on the last character only."""
        check_positive_int("batch_size", batch_size)
        return None

    def forward(
        self, ids: Int[Tensor, "B T"], state: None = None
    ) -> tuple[Float[Tensor, "B T {self.vocab_size}"], None]:
        check_token_ids("ids", ids, self.vocab_size)
        return self.log_p[ids], None  # (B, T, V)


def _check_stream(name: str, ids: Tensor, vocab_size: int) -> None:
    """A stream of at least two ids (one pair) in [0, vocab_size)."""
    if len(ids) < 2:
        raise ValueError(f"{name} must have shape (N) with N >= 2, got {tuple(ids.shape)}")
    check_token_ids(name, ids, vocab_size)


def bigram_perplexity(
    train_ids: Int[Tensor, " N_train"],
    valid_ids: Int[Tensor, " N"],
    vocab_size: int,
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
    check_positive_int("vocab_size", vocab_size)
    _check_stream("valid_ids", valid_ids, vocab_size)
    log_p = BigramLM(train_ids, vocab_size, smoothing).log_p
    return math.exp(-log_p[valid_ids[:-1], valid_ids[1:]].mean().item())
