r"""Cross-entropy, entropy, KL divergence and label smoothing.

Shape letters: ``...`` any leading dimensions (e.g. ``(B, T)``), ``C`` classes (the
vocabulary, for a language model). Distributions are over the **last** dimension
(class-last, as the book's models return their logits), unlike
``torch.nn.functional.cross_entropy``, which wants the classes in dimension 1.

Logarithms are natural, so the quantities are in **nats**; divide by :math:`\ln 2`
for bits.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from jaxtyping import Float, Integer
from torch import Tensor

from seqbook._checks import check_choice, check_float_dtype, check_int, check_real

__all__ = [
    "cross_entropy",
    "entropy",
    "kl_divergence",
    "smoothed_targets",
    "label_smoothing_loss",
]


# Distributions are over the last dimension; their values are the caller's contract
# (non-negative, summing to 1): the tests check the results, not every call.


def cross_entropy(
    p: Float[Tensor, "*batch C"], q: Float[Tensor, "*batch C"]
) -> Float[Tensor, "*batch"]:
    r"""The cross-entropy :math:`H(p, q)` of two distributions over the last dimension.

    .. math::
        H(p, q) = -\sum_{x \in \mathcal{X}} p(x) \log q(x)

    with :math:`0 \log 0 = 0`: classes that ``p`` never produces cost nothing, even if
    ``q`` gives them probability 0; a class with :math:`p(x) > 0 = q(x)` costs
    :math:`+\infty`.

    Args:
        p: the true distribution (e.g. one-hot or smoothed targets).
        q: the model's distribution.

    Shapes:
        p, q: ``(..., C)``.
        returns: ``(...)``.

    Example:
        >>> p = torch.tensor([1.0, 0.0])
        >>> q = torch.tensor([0.5, 0.5])
        >>> round(cross_entropy(p, q).item(), 4)            # log 2 nats
        0.6931
    """
    return -torch.xlogy(p, q).sum(-1)  # (eq-loss-cross-entropy)


def entropy(p: Float[Tensor, "*batch C"]) -> Float[Tensor, "*batch"]:
    r"""The entropy :math:`H(p) = -\sum_x p(x) \log p(x) = H(p, p)`.

    Shapes:
        p: ``(..., C)``.
        returns: ``(...)``.

    Example:
        >>> round(entropy(torch.full((4,), 0.25)).item(), 4)      # log 4
        1.3863
    """
    return -torch.xlogy(p, p).sum(-1)


def kl_divergence(
    p: Float[Tensor, "*batch C"], q: Float[Tensor, "*batch C"]
) -> Float[Tensor, "*batch"]:
    r"""The Kullback-Leibler divergence :math:`D_{KL}(p \,\|\, q) \ge 0`.

    .. math::
        D_{KL}(p \,\|\, q) = \sum_x p(x) \log \frac{p(x)}{q(x)}
        = H(p, q) - H(p)

    Zero exactly when :math:`p = q`; not symmetric.

    Shapes:
        p, q: ``(..., C)``.
        returns: ``(...)``.

    Example:
        >>> p, q = torch.tensor([0.5, 0.5]), torch.tensor([0.9, 0.1])
        >>> round(kl_divergence(p, q).item(), 4), round(kl_divergence(q, p).item(), 4)
        (0.5108, 0.3681)
    """
    return (torch.xlogy(p, p) - torch.xlogy(p, q)).sum(-1)  # (eq-loss-kl)


def smoothed_targets(
    target: Integer[Tensor, "*batch"],
    num_classes: int,
    epsilon: float,
    dtype: torch.dtype | None = None,
) -> Float[Tensor, "*batch {num_classes}"]:
    r"""The label-smoothed target distribution with the uniform prior.

    .. math::
        p'(k \mid x) = (1 - \epsilon)\, \delta_{k, y} + \epsilon\, u(k), \qquad
        u(k) = \frac{1}{C}

    The uniform prior covers *all* :math:`C` classes, the true one included, so the
    true class gets :math:`1 - \epsilon + \epsilon / C` and every other
    :math:`\epsilon / C` (PyTorch's convention).

    Args:
        target: class indices in ``[0, C)``.
        num_classes: :math:`C` >= 2.
        epsilon: the smoothing :math:`\epsilon \in [0, 1]`.
        dtype: the floating-point dtype of the result (default: torch's default,
            float32); the distribution is computed in it.

    Shapes:
        target: ``(...)``, integer.
        returns: ``(..., C)``.

    Example:
        >>> smoothed_targets(torch.tensor([2]), num_classes=4, epsilon=0.2)
        tensor([[0.0500, 0.0500, 0.8500, 0.0500]])
    """
    C = check_int("num_classes", num_classes, min_value=2)
    check_real("epsilon", epsilon, min_value=0.0, max_value=1.0)
    _check_classes(target, C)
    if dtype is None:
        dtype = torch.get_default_dtype()
    check_float_dtype("dtype", dtype)
    delta = F.one_hot(target.long(), C).to(dtype)  # delta_{k,y}, (..., C)
    return (1 - epsilon) * delta + epsilon / C  # (eq-loss-label-smoothing)


def _check_classes(target: Tensor, C: int, ignore_index: int | None = None) -> None:
    """What a type cannot say: the targets are class indices in ``[0, C)`` (or
    ``ignore_index``). Reads the targets: not under torch.compile."""
    kept = target if ignore_index is None else target[target != ignore_index]
    if torch.compiler.is_compiling() or not kept.numel():
        return
    low, high = int(kept.min()), int(kept.max())
    if low < 0 or high >= C:
        ignored = "" if ignore_index is None else f" or ignore_index={ignore_index}"
        raise ValueError(f"target must hold class indices in [0, {C}) (the classes of logits)"
                         f"{ignored}, got values from {low} to {high}")


REDUCTIONS = ("mean", "sum", "none")


def _check_targets(logits: Tensor, target: Tensor, ignore_index: int, reduction: str) -> None:
    """What types cannot say about :func:`label_smoothing_loss`'s arguments."""
    if logits.shape[-1] < 2:
        raise ValueError(f"logits must score at least 2 classes, got shape {tuple(logits.shape)}")
    kept = target != ignore_index
    if reduction == "mean" and not torch.compiler.is_compiling() and not bool(kept.any()):
        raise ValueError("target must have at least one entry that is not ignore_index (the "
                         "mean of no losses is undefined; reduction='sum' gives 0)")
    _check_classes(target, logits.shape[-1], ignore_index)


def label_smoothing_loss(
    logits: Float[Tensor, "*batch C"],
    target: Integer[Tensor, "*batch"],
    epsilon: float,
    ignore_index: int = -100,
    reduction: str = "mean",
) -> Float[Tensor, ""] | Float[Tensor, "*batch"]:
    r"""Cross-entropy between smoothed targets and ``softmax(logits)``.

    .. math::
        \mathcal{L} = \frac{1}{|\mathcal{N}|} \sum_{n \in \mathcal{N}}
        H\big(p'_n, \operatorname{softmax}(\mathbf{l}_n)\big)
        = \frac{1}{|\mathcal{N}|} \sum_{n \in \mathcal{N}} \Big[
        (1 - \epsilon)(-\log q_n(y_n)) + \epsilon \frac{1}{C}\sum_k (-\log q_n(k))
        \Big]

    over the positions :math:`\mathcal{N}` whose target is not ``ignore_index``
    (padding). Equal to ``F.cross_entropy(logits.reshape(-1, C), target.reshape(-1),
    label_smoothing=epsilon, ignore_index=ignore_index, reduction=reduction)``, in
    the dtype of ``logits`` (float64 logits: float64-accurate); ``epsilon=0`` is the
    plain cross-entropy.

    Args:
        logits: unnormalised scores :math:`\mathbf{l}`, classes last.
        target: class indices, or ``ignore_index`` where there is nothing to predict.
        epsilon: the smoothing :math:`\epsilon \in [0, 1]` (torch's ``label_smoothing``).
        ignore_index: the target value to skip (torch's default, -100).
        reduction: ``"mean"`` over the kept positions (torch's default), ``"sum"``,
            or ``"none"``: one loss per position, 0 where the target is ignored.

    Shapes:
        logits: ``(..., C)``, ``C >= 2``.
        target: ``(...)``, integer, the shape of ``logits`` without its last dimension.
        returns: a scalar, or ``(...)`` for ``reduction="none"``.

    Example:
        >>> logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
        >>> target = torch.tensor([0, -100])
        >>> round(label_smoothing_loss(logits, target, 0.0).item(), 4)
        0.2395
        >>> round(label_smoothing_loss(logits, target, 0.3).item(), 4)
        0.6395
    """
    check_real("epsilon", epsilon, min_value=0.0, max_value=1.0)
    check_choice("reduction", reduction, REDUCTIONS)
    _check_targets(logits, target, ignore_index, reduction)
    keep = target != ignore_index  # (...)
    log_q = torch.log_softmax(logits[keep], dim=-1)  # log q_n, (N, C)
    C = logits.shape[-1]
    p = smoothed_targets(target[keep], C, epsilon, log_q.dtype)  # p'_n, (N, C)
    losses = -(p * log_q).sum(-1)  # H(p'_n, q_n), (N,)  (eq-loss-smoothed)
    if reduction == "mean":
        return losses.mean()  # the mean over N
    if reduction == "sum":
        return losses.sum()
    zeros = torch.zeros(target.shape, dtype=losses.dtype, device=losses.device)
    return zeros.masked_scatter(keep, losses)  # (...), 0 where ignored
