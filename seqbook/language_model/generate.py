r"""Generating text from a language model: greedy or sampled, with or without a cache.

Shape letters: ``B`` batch, ``T_0`` prompt length, ``n`` new tokens, ``V`` vocabulary.
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import Tensor, nn

from seqbook._checks import check_int, check_positive_int, check_real, check_token_ids

__all__ = ["generate", "next_token", "truncate_scores"]


def _check_truncation(top_k: int | None, top_p: float | None) -> None:
    """``top_k`` is >= 1 and ``top_p``, the nucleus' probability mass, in (0, 1]."""
    if top_k is not None:
        check_positive_int("top_k", top_k)
    if top_p is not None:
        check_real("top_p", top_p, min_value=0.0, max_value=1.0, strict_min=True)


def _check_sampling(temperature: float, greedy: bool, top_k: int | None,
                    top_p: float | None) -> None:
    """The temperature is > 0 (unless greedy, which ignores it), and the truncation as
    :func:`_check_truncation` wants it."""
    if not greedy:
        check_real("temperature", temperature, min_value=0.0, strict_min=True)
    _check_truncation(top_k, top_p)


def next_token(
    logits: Float[Tensor, "B V"],
    temperature: float = 1.0,
    greedy: bool = False,
    generator: torch.Generator | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Int[Tensor, " B"]:
    r"""Choose the next token from its scores: the most likely, or a sample at temperature
    :math:`\tau`, optionally from the top :math:`k` tokens or the nucleus only.

    .. math::
        p_\tau(v) = \frac{\exp(s_v / \tau)}{\sum_u \exp(s_u / \tau)}

    A low temperature sharpens the distribution toward the most likely tokens (as
    :math:`\tau \to 0`, sampling becomes greedy), a high one flattens it. With
    ``top_k`` or ``top_p`` the sample is drawn from :math:`p_\tau` renormalised over
    the tokens that :func:`truncate_scores` keeps (top-:math:`k` first, then the
    nucleus).

    Args:
        logits: the scores :math:`s` of the next token (a floating tensor, at least one
            score above :math:`-\infty` and none NaN or :math:`+\infty` in every row).
        temperature: :math:`\tau > 0` (ignored when ``greedy``, but still a number).
        greedy: take the arg max instead of sampling.
        generator: the random generator of the sampling (seed it to repeat a sample).
        top_k: sample among the ``top_k >= 1`` highest-scoring tokens only.
        top_p: sample from the nucleus: the fewest most likely tokens whose
            probability at temperature :math:`\tau` adds up to at least ``top_p``
            (in ``(0, 1]``).

    Shapes:
        logits: ``(B, V)`` with ``V >= 1``.
        returns: ``(B,)`` token ids.

    Example:
        >>> scores = torch.tensor([[2.0, 1.0, 0.0]])
        >>> next_token(scores, greedy=True)
        tensor([0])
        >>> g = torch.Generator().manual_seed(0)
        >>> next_token(scores, temperature=0.01, generator=g)   # almost greedy
        tensor([0])
    """
    _check_sampling(temperature, greedy, top_k, top_p)
    # -inf masks a token out; NaN, +inf or a row with every token masked leave no choice
    if not bool(((logits < math.inf).all(-1) & (logits > -math.inf).any(-1)).all()):
        raise ValueError("logits must hold no NaN or +inf and at least one score above -inf "
                         f"in every row (V >= 1), got shape {tuple(logits.shape)}")
    if greedy:
        return logits.argmax(dim=-1)  # (B,)
    scores = truncate_scores(logits / temperature, top_k, top_p)  # (B, V)
    probs = F.softmax(scores, dim=-1)  # (B, V)  (eq-lm-temperature)
    return torch.multinomial(probs, 1, generator=generator)[:, 0]  # (B,)


def truncate_scores(scores: Float[Tensor, "B V"], top_k: int | None = None,
                    top_p: float | None = None) -> Float[Tensor, "B V"]:
    r"""The scores with :math:`-\infty` for every token outside the top :math:`k` and
    outside the nucleus, so that a softmax gives the truncated distribution.

    Top-:math:`k` sampling keeps the :math:`k` highest scores (tokens tied with the
    :math:`k`-th are kept too). Nucleus sampling (Holtzman et al., 2020) keeps the
    smallest set of most likely tokens whose probability
    :math:`\operatorname{softmax}(s)` adds up to at least :math:`p`; a token is kept
    when the tokens more likely than it hold less than :math:`p`. The most likely
    token is always kept. With both, the nucleus is taken of the distribution that
    top-:math:`k` leaves (renormalised). The probabilities are summed in float32 even
    for half-precision scores.

    Args:
        scores: the scores :math:`s` of the next token (already divided by the
            temperature).
        top_k: how many tokens to keep (>= 1), or ``None``.
        top_p: the nucleus' probability mass, in ``(0, 1]``, or ``None``.

    Shapes:
        scores: ``(B, V)``.
        returns: ``(B, V)``.

    Example:
        >>> scores = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
        >>> truncate_scores(scores, top_k=2).isfinite().tolist()
        [[True, True, False, False]]
        >>> truncate_scores(scores, top_p=0.9).isfinite().tolist()
        [[True, True, True, False]]
    """
    _check_truncation(top_k, top_p)
    if top_k is not None and top_k < scores.shape[-1]:  # (eq-lm-top-k)
        kth_best = scores.topk(top_k, dim=-1).values[:, -1:]  # (B, 1)
        scores = scores.masked_fill(scores < kth_best, -math.inf)
    if top_p is not None and top_p < 1.0:  # (eq-lm-nucleus)
        p, order = F.softmax(scores.float(), dim=-1).sort(
            dim=-1, descending=True
        )  # (B, V)
        mass_before = p.cumsum(dim=-1) - p  # of the tokens likelier than each
        drop = mass_before >= top_p  # (B, V), most likely first
        # in token order
        drop = torch.empty_like(drop).scatter_(-1, order, drop)
        scores = scores.masked_fill(drop, -math.inf)
    return scores


def generate(
    model: nn.Module,
    prompt: Int[Tensor, "B T_0"],
    num_tokens: int,
    *,
    temperature: float = 1.0,
    greedy: bool = False,
    generator: torch.Generator | None = None,
    use_cache: bool = True,
    context: int | None = None,
    top_k: int | None = None,
    top_p: float | None = None,
) -> Int[Tensor, "B T_0+{num_tokens}"]:
    r"""Continue ``prompt`` by ``num_tokens`` tokens, one at a time.

    Each step feeds the model what it has not read yet and picks the next token from
    the scores of the last position (:func:`next_token`). With ``use_cache=True`` the
    model keeps what it computed for earlier positions in its state (a recurrent
    model's hidden state, a transformer's :class:`~seqbook.language_model.KVCache`),
    so each step reads one new token; with ``use_cache=False`` it re-reads the whole
    sequence at every step. Both give the same tokens. With a ``context`` :math:`W`
    (and no cache) each step reads only the last :math:`W` tokens: a transformer
    trained on windows of :math:`W` tokens can then write texts longer than its
    ``max_len``, at the cost of recomputing the window at every step (its positions
    shift, so a cache cannot be kept).

    The model is any language model of :mod:`seqbook.language_model`: it has
    ``vocab_size``, ``init_state(batch_size)`` and ``forward(ids, state) -> (logits,
    state)``, and optionally ``max_len``. It runs in evaluation mode without gradients
    and is put back in its previous mode afterwards.

    Args:
        model: the language model.
        prompt: the first tokens of each sequence.
        num_tokens: how many tokens to add (>= 1).
        temperature: :math:`\tau > 0` of the sampling.
        greedy: pick the most likely token instead of sampling.
        generator: the random generator of the sampling.
        use_cache: carry the model's state from step to step.
        context: read at most this many of the last tokens at each step (requires
            ``use_cache=False``; at most the model's ``max_len``); ``None``: all of
            them.
        top_k, top_p: sample from the top-:math:`k` tokens or the nucleus only (see
            :func:`next_token`).

    Shapes:
        prompt: ``(B, T_0)``, ``T_0 >= 1``; ``T_0 + num_tokens - 1 <= model.max_len``
        (the last token is never read back) unless a ``context <= max_len`` is given.
        returns: ``(B, T_0 + num_tokens)``: the prompt and its continuation.

    Example:
        >>> from seqbook.language_model import RecurrentLM
        >>> _ = torch.manual_seed(0)
        >>> model = RecurrentLM(vocab_size=10, hidden_size=8, embedding_dim=4)
        >>> prompt = torch.tensor([[1, 2]])
        >>> fast = generate(model, prompt, 5, greedy=True)
        >>> slow = generate(model, prompt, 5, greedy=True, use_cache=False)
        >>> tuple(fast.shape), torch.equal(fast, slow)
        ((1, 7), True)
    """
    lm: Any = model  # vocab_size, init_state: what torch's Module type does not know
    B, T_0 = prompt.shape
    check_positive_int("num_tokens", num_tokens)
    _check_sampling(temperature, greedy, top_k, top_p)
    check_token_ids("prompt", prompt, lm.vocab_size, of="model.vocab_size")
    if T_0 == 0:
        raise ValueError(f"prompt must have shape (B, T_0) with T_0 >= 1, got {(B, T_0)}")
    max_len = getattr(model, "max_len", None)
    if context is not None:
        check_int("context", context, min_value=1, max_value=max_len)
        if use_cache:
            raise ValueError("context needs use_cache=False: a cache keeps every position")
    # the last token is never read back, so the model reads T_0 + num_tokens - 1
    if max_len is not None and context is None and T_0 + num_tokens - 1 > max_len:
        raise ValueError(f"prompt length {T_0} + num_tokens {num_tokens} - 1 = "
                         f"{T_0 + num_tokens - 1} positions to read, more than the model's "
                         f"max_len={max_len}")
    was_training = model.training
    model.eval()
    try:
        with torch.no_grad():
            ids = prompt
            state = lm.init_state(B) if use_cache else None
            logits, state = model(prompt[:, -context:] if context else prompt, state)
            for step in range(num_tokens):
                new = next_token(logits[:, -1], temperature, greedy, generator,
                                 top_k, top_p)  # (B,)
                ids = torch.cat([ids, new[:, None]], dim=1)  # (B, T_0 + step + 1)
                if step == num_tokens - 1:
                    break
                if use_cache:
                    logits, state = model(new[:, None], state)  # (B, 1, V)
                else:
                    logits, _ = model(ids[:, -context:] if context else ids)  # (B, ., V)
    finally:
        model.train(was_training)
    return ids
