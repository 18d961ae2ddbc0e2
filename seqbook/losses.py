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

from seqbook._checks import check_int, check_real, check_tensor

__all__ = [
    "cross_entropy",
    "entropy",
    "kl_divergence",
    "smoothed_targets",
    "label_smoothing_loss",
]


def _check_distribution(name: str, p: torch.Tensor, atol: float = 1e-5) -> torch.Tensor:
    check_tensor(name, p, floating=True)
    if p.dim() == 0:
        raise ValueError(f"{name} must have a class dimension, got a scalar")
    if bool((p < 0).any()):
        raise ValueError(f"{name} must be non-negative (a probability distribution)")
    total = p.sum(-1)
    if not torch.allclose(total, torch.ones_like(total), atol=atol):
        raise ValueError(
            f"{name} must sum to 1 over its last dimension, got sums between "
            f"{total.min().item():.6g} and {total.max().item():.6g}"
        )
    return p


def _check_pair(p: torch.Tensor, q: torch.Tensor) -> None:
    _check_distribution("p", p)
    _check_distribution("q", q)
    if p.shape != q.shape:
        raise ValueError(
            f"p and q must have the same shape, got {tuple(p.shape)} and {tuple(q.shape)}"
        )


def cross_entropy(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
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
    _check_pair(p, q)
    return -torch.xlogy(p, q).sum(-1)  # (eq-loss-cross-entropy)


def entropy(p: torch.Tensor) -> torch.Tensor:
    r"""The entropy :math:`H(p) = -\sum_x p(x) \log p(x) = H(p, p)`.

    Shapes:
        p: ``(..., C)``.
        returns: ``(...)``.

    Example:
        >>> round(entropy(torch.full((4,), 0.25)).item(), 4)      # log 4
        1.3863
    """
    _check_distribution("p", p)
    return -torch.xlogy(p, p).sum(-1)


def kl_divergence(p: torch.Tensor, q: torch.Tensor) -> torch.Tensor:
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
    _check_pair(p, q)
    return (torch.xlogy(p, p) - torch.xlogy(p, q)).sum(-1)  # (eq-loss-kl)


def smoothed_targets(
    target: torch.Tensor, num_classes: int, epsilon: float
) -> torch.Tensor:
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

    Shapes:
        target: ``(...)``, integer.
        returns: ``(..., C)``.

    Example:
        >>> smoothed_targets(torch.tensor([2]), num_classes=4, epsilon=0.2)
        tensor([[0.0500, 0.0500, 0.8500, 0.0500]])
    """
    check_tensor("target", target, floating=False)
    C = check_int("num_classes", num_classes, min_value=2)
    epsilon = check_real("epsilon", epsilon, min_value=0.0, max_value=1.0)
    if target.numel() and (int(target.min()) < 0 or int(target.max()) >= C):
        raise ValueError(
            f"target must hold class indices in [0, {C}), got values from "
            f"{int(target.min())} to {int(target.max())}"
        )
    one_hot = torch.nn.functional.one_hot(target.long(), C).float()  # (..., C)
    return (1 - epsilon) * one_hot + epsilon / C  # (eq-loss-label-smoothing)


def label_smoothing_loss(
    logits: torch.Tensor,
    target: torch.Tensor,
    epsilon: float,
    ignore_index: int = -100,
) -> torch.Tensor:
    r"""Mean cross-entropy between smoothed targets and ``softmax(logits)``.

    .. math::
        \mathcal{L} = \frac{1}{|\mathcal{N}|} \sum_{n \in \mathcal{N}}
        H\big(p'_n, \operatorname{softmax}(\mathbf{z}_n)\big)
        = \frac{1}{|\mathcal{N}|} \sum_{n \in \mathcal{N}} \Big[
        (1 - \epsilon)(-\log q_n(y_n)) + \epsilon \frac{1}{C}\sum_k (-\log q_n(k))
        \Big]

    over the positions :math:`\mathcal{N}` whose target is not ``ignore_index``
    (padding). Equal to ``F.cross_entropy(logits.reshape(-1, C), target.reshape(-1),
    label_smoothing=epsilon, ignore_index=ignore_index)``; ``epsilon=0`` is the plain
    cross-entropy.

    Args:
        logits: unnormalised scores :math:`\mathbf{z}`, classes last.
        target: class indices, or ``ignore_index`` where there is nothing to predict.
        epsilon: the smoothing :math:`\epsilon \in [0, 1]`.
        ignore_index: the target value to skip.

    Shapes:
        logits: ``(..., C)``.
        target: ``(...)``, integer, the shape of ``logits`` without its last dimension.
        returns: a scalar.

    Example:
        >>> logits = torch.tensor([[2.0, 0.0, 0.0], [0.0, 0.0, 0.0]])
        >>> target = torch.tensor([0, -100])
        >>> round(label_smoothing_loss(logits, target, 0.0).item(), 4)
        0.2395
        >>> round(label_smoothing_loss(logits, target, 0.3).item(), 4)
        0.6395
    """
    check_tensor("logits", logits, floating=True)
    check_tensor("target", target, floating=False)
    epsilon = check_real("epsilon", epsilon, min_value=0.0, max_value=1.0)
    check_int("ignore_index", ignore_index)
    if logits.dim() == 0 or logits.shape[:-1] != target.shape:
        raise ValueError(
            "target must have the shape of logits without the class dimension, got "
            f"logits {tuple(logits.shape)} and target {tuple(target.shape)}"
        )
    C = logits.shape[-1]
    if C < 2:
        raise ValueError(f"logits must score at least 2 classes, got shape {tuple(logits.shape)}")
    keep = target != ignore_index  # (...)
    if not bool(keep.any()):
        raise ValueError("target must have at least one entry that is not ignore_index")
    log_q = torch.log_softmax(logits[keep], dim=-1)  # (N, C)
    p = smoothed_targets(target[keep], C, epsilon).to(log_q.dtype)  # (N, C)
    return -(p * log_q).sum(-1).mean()  # (eq-loss-smoothed)
