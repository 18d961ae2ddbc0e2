r"""The language-model loss, and perplexity on a held-out stream.

Shape letters: ``B`` batch, ``T`` time, ``V`` vocabulary, ``N`` characters in a
stream, ``W`` the evaluation window.

A language model assigns the stream :math:`x_1, \dots, x_N` the probability
:math:`\prod_t P(x_{t+1} \mid x_{\le t})`; its loss is the mean negative log-likelihood
of the next token (in nats), and its **perplexity** the exponential of that mean,

.. math::
    \operatorname{PPL} = \exp\Big(-\frac{1}{N-1} \sum_{t=1}^{N-1}
    \log P(x_{t+1} \mid x_{\le t})\Big),

the number of equally likely choices that would leave the model as unsure as it is.

Every language model of this package is called as ``model(ids, state) -> (logits,
state)`` with logits ``(B, T, V)``; the functions here also accept a model that returns
the logits alone.
"""

from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int, check_tensor, check_token_ids

__all__ = ["lm_loss", "sequence_loss", "perplexity", "loss_by_position"]


def _logits(output: Tensor | tuple) -> Tensor:
    logits = output[0] if isinstance(output, tuple) else output
    check_tensor("the model's logits", logits, ndim=3, floating=True)
    return logits  # (B, T, V)


#: A batch of windows: ``(inputs, targets)``, two ``(B, T)`` id tensors (the targets'
#: shape is checked against the logits, with a message that says so).
Batch = tuple[Int[Tensor, "B T"], Int[Tensor, "*targets"]] | list[Int[Tensor, "..."]]


def lm_loss(model: nn.Module, batch: Batch) -> Float[Tensor, ""]:
    r"""Mean cross-entropy of the next token over a batch of windows, for
    :func:`~seqbook.train.fit`.

    .. math::
        \mathcal{L} = -\frac{1}{BT} \sum_{b, t} \log P(y_{b,t} \mid x_{b, \le t})

    Args:
        model: a language model, ``model(inputs)`` gives logits ``(B, T, V)`` (alone or
            first in a tuple).
        batch: ``(inputs, targets)``, e.g. from
            :func:`~seqbook.language_model.random_windows`.

    Shapes:
        batch: two ``(B, T)`` id tensors.
        returns: a scalar.

    Example:
        >>> from seqbook.language_model import RecurrentLM
        >>> model = RecurrentLM(vocab_size=10, hidden_size=8, embedding_dim=4)
        >>> ids = torch.randint(0, 10, (2, 6))
        >>> lm_loss(model, (ids, ids)).item() > 0
        True
    """
    if not (isinstance(batch, (tuple, list)) and len(batch) == 2):
        raise TypeError("batch must be a pair (inputs, targets) of (B, T) id tensors")
    inputs, targets = batch
    check_tensor("targets", targets, ndim=2, floating=False)
    logits = _logits(model(inputs))  # (B, T, V)
    if logits.shape[:2] != targets.shape:
        raise ValueError(f"targets must have the shape {tuple(logits.shape[:2])} of the inputs "
                         f"(B, T), got {tuple(targets.shape)}")
    V = logits.shape[-1]
    check_token_ids("targets", targets, V, of="the V scores of the model's logits")
    return F.cross_entropy(logits.reshape(-1, V), targets.reshape(-1))


def _window_starts(N: int, window: int, stride: int) -> list[int]:
    """Starts of windows of ``window`` inputs covering all ``N - 1`` targets."""
    last = N - 1 - window
    if last <= 0:
        return [0]
    starts = list(range(0, last, stride))
    return starts + [last]


def sequence_loss(
    model: nn.Module,
    ids: Int[Tensor, " N"],
    window: int | None = None,
    stride: int | None = None,
    batch_size: int = 64,
) -> Float[Tensor, ""]:
    r"""Mean negative log-likelihood (nats) of every token of a stream after the first.

    With ``window=None`` the model reads the whole stream in one pass (a recurrent
    model then carries its state from the first character to the last). With a
    ``window`` :math:`W`, it reads windows of :math:`W` tokens, ``stride`` apart
    (default :math:`W/2`): the first window scores all its positions, every later one
    only those no earlier window scored, so every token is scored exactly once and,
    except in the first window, from at least :math:`W - \text{stride}` tokens of
    context. This is how a transformer with a maximal length is evaluated on a
    long text.

    Args:
        model: a language model (see the module's docstring).
        ids: the stream ``(N,)``, ``N >= 2``.
        window: the number of tokens the model reads at once, or ``None`` for all.
        stride: the step between windows, ``1 <= stride <= window``.
        batch_size: how many windows to run at once.

    Shapes:
        ids: ``(N,)``.
        returns: a scalar tensor.

    Example:
        >>> from seqbook.language_model import RecurrentLM
        >>> model = RecurrentLM(vocab_size=10, hidden_size=8, embedding_dim=4)
        >>> ids = torch.randint(0, 10, (50,))
        >>> whole = sequence_loss(model, ids)
        >>> windowed = sequence_loss(model, ids, window=49)   # one window: the same
        >>> bool(torch.isclose(whole, windowed, atol=1e-6))
        True
    """
    if len(ids) < 2:
        raise ValueError(f"ids must have shape (N) with N >= 2, got {tuple(ids.shape)}")
    check_positive_int("batch_size", batch_size)
    if window is not None:
        check_positive_int("window", window)
    if stride is not None:
        check_int("stride", stride, min_value=1, max_value=window)
    N = len(ids)
    with torch.no_grad():
        if window is None:
            logits = _logits(model(ids[None, :-1]))[0]  # (N - 1, V)
            return F.cross_entropy(logits, ids[1:])
        stride = max(window // 2, 1) if stride is None else stride
        W = min(window, N - 1)
        starts = _window_starts(N, W, stride)
        offsets = torch.arange(W + 1)
        total, scored = 0.0, 0
        for first in range(0, len(starts), batch_size):
            chunk = torch.tensor(starts[first : first + batch_size])
            windows = ids[chunk[:, None] + offsets]  # (b, W + 1)
            logits = _logits(model(windows[:, :-1]))  # (b, W, V)
            nll = F.cross_entropy(
                logits.transpose(1, 2), windows[:, 1:], reduction="none"
            )  # (b, W)
            for row, start in enumerate(chunk.tolist()):
                new = max(scored - start, 0)  # positions an earlier window scored
                total += nll[row, new:].double().sum().item()
                scored = start + W
        return torch.tensor(total / (N - 1))


def perplexity(model: nn.Module, ids: Int[Tensor, " N"], window: int | None = None,
               stride: int | None = None) -> float:
    r"""The perplexity :math:`\exp(\text{mean NLL})` of a stream (see :func:`sequence_loss`).

    Example:
        >>> from seqbook.language_model import RecurrentLM
        >>> model = RecurrentLM(vocab_size=10, hidden_size=8, embedding_dim=4)
        >>> 1 < perplexity(model, torch.randint(0, 10, (50,))) < 20
        True
    """
    return math.exp(sequence_loss(model, ids, window, stride).item())


def loss_by_position(
    model: nn.Module,
    ids: Int[Tensor, " N"],
    window: int,
    offsets: int = 1,
) -> Float[Tensor, " {window}"]:
    r"""Mean negative log-likelihood at each position of a window, over a whole stream.

    The stream is cut into consecutive windows of ``window`` inputs (each followed by
    its next token); the model reads each window from a fresh start, and the loss of
    position :math:`t` is averaged over the windows. Position :math:`t` predicts from
    :math:`t` tokens of context, so the curve shows how much a model gains from
    reading further back. With ``offsets`` :math:`> 1` the stream is cut again from
    :math:`W / \text{offsets}, 2W / \text{offsets}, \dots` on, so that each position
    averages over different characters and the curve depends less on which
    characters happen to fall at one position of one cut.

    Args:
        model: a language model (see the module's docstring).
        ids: the stream ``(N,)``, ``N > window``.
        window: the window length :math:`W`.
        offsets: how many cuts of the stream, shifted by :math:`W / \text{offsets}`
            (1 to :math:`W`).

    Shapes:
        returns: ``(W,)``, in nats.

    Example:
        >>> from seqbook.language_model import BigramLM
        >>> ids = torch.randint(0, 5, (200,))
        >>> curve = loss_by_position(BigramLM(ids, 5), ids, window=8, offsets=2)
        >>> tuple(curve.shape)
        (8,)
    """
    check_positive_int("window", window)
    check_int("offsets", offsets, min_value=1, max_value=window)
    if len(ids) <= window + (offsets - 1) * window // offsets:
        raise ValueError(f"ids must be longer than window={window} plus the last offset, "
                         f"got {len(ids)} ids")
    cuts = []
    for start in (k * window // offsets for k in range(offsets)):
        stream = ids[start:]
        count = (len(stream) - 1) // window
        cuts.append(stream[: count * window + 1].unfold(0, window + 1, window))
    windows = torch.cat(cuts)  # (count, W + 1)
    with torch.no_grad():
        logits = _logits(model(windows[:, :-1]))  # (count, W, V)
        nll = F.cross_entropy(logits.transpose(1, 2), windows[:, 1:], reduction="none")
    return nll.mean(0)  # (W,)
