r"""A dense associative memory trained as a classifier (Krotov & Hopfield, 2016).

The network has :math:`N_v` visible neurons (the pixels, in :math:`[-1, 1]`) and
:math:`N_c` classification neurons (:math:`\pm 1`), and :math:`K` memories
:math:`\boldsymbol\xi_\mu \in [-1, 1]^{N_v + N_c}`. Its energy is
:math:`E = -\sum_\mu F(\boldsymbol\xi_\mu \cdot \boldsymbol\sigma)` with the rectified
polynomial :math:`F(u) = \max(u, 0)^n`. One update of a classification neuron, the others
held at :math:`-1`, compares the energies of its two states (the paper's eq. 9):

.. math::

    c_\alpha = \tanh\Big(\beta \sum_\mu \big[F(u_\mu + 2\xi_{\mu\alpha}) - F(u_\mu)\big]\Big),
    \qquad u_\mu = \sum_i \xi_{\mu i} v_i - \sum_\gamma \xi_{\mu\gamma},
    \qquad \beta = 1 / T^n .

Training lowers :math:`\sum (t_\alpha - c_\alpha)^{2m}` (targets :math:`t = \pm 1`) with the
authors' update: momentum, every memory's step scaled so that its largest entry moves by
the learning rate, and the weights clipped to :math:`[-1, 1]`.

As :math:`n` grows the learned memories change from **features** (strokes, parts of digits
shared by many classes) to **prototypes** (whole digits): :func:`prototype_score` measures
it by the correlation of each memory with the class means.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeAlias

import torch
from jaxtyping import Float, Float64, Int
from torch import Tensor

from seqbook._checks import (
    check_int,
    check_positive_int,
    check_real,
    check_tensor,
)

__all__ = [
    "DAMClassifierHistory",
    "class_means",
    "digits_pm1",
    "dam_class_scores",
    "prototype_score",
    "train_dam_classifier",
]


# K memories of M = N_v + N_c neurons (visible first), and B images of N_v pixels
Memories: TypeAlias = Float[Tensor, "K M"]
Pixels: TypeAlias = Float[Tensor, "B N_v"]


def _check_pixels(name: str, pixels: Tensor, memories: Tensor | None = None) -> None:
    """Images whose pixels p in [0, 1] were mapped to 2p - 1: finite, in [-1, 1]; with
    ``memories``, whose columns are these pixels and at least one class neuron."""
    if memories is not None and memories.shape[1] <= pixels.shape[1]:
        raise ValueError(f"memories must have more columns than {name} (N_v + N_c, N_c >= 1), "
                         f"got {memories.shape[1]} and {pixels.shape[1]}")
    if not torch.isfinite(pixels).all():
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    if pixels.numel() and not -1 <= pixels.min() <= pixels.max() <= 1:
        raise ValueError(f"{name} must hold values in [-1, 1], got values from "
                         f"{pixels.min().item():g} to {pixels.max().item():g}")


def _check_labels(name: str, labels: Tensor) -> None:
    """Classes 0 .. C-1, at least one."""
    if labels.numel() == 0:
        raise ValueError(f"{name} must hold at least one label, got shape {tuple(labels.shape)}")
    if labels.min() < 0:
        raise ValueError(f"{name} must hold classes >= 0, got values from "
                         f"{labels.min().item()} to {labels.max().item()}")


def digits_pm1(train_per_class: int = 400) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """The 5,000 digits of :func:`seqbook.data.mnist5k` as pixels in [-1, 1], split by class.

    Krotov and Hopfield map every pixel :math:`p \\in [0, 1]` to :math:`2p - 1`. The
    first ``train_per_class`` digits of each class (in the file's order, 1 to 499 of its
    500) are for training, the rest of each class for testing: a fixed split, the same in
    every run.

    Returns:
        ``(train_x, train_y, test_x, test_y)``: float32 ``(S, 784)`` pixels and int64
        labels, ``S = 10 * train_per_class`` for training.

    Example:
        >>> train_x, train_y, test_x, test_y = digits_pm1(400)
        >>> tuple(train_x.shape), tuple(test_x.shape), float(train_x.min())
        ((4000, 784), (1000, 784), -1.0)
    """
    check_int("train_per_class", train_per_class, min_value=1, max_value=499)
    from seqbook.data import mnist5k

    images, labels = mnist5k(flatten=True)
    order = torch.argsort(labels, stable=True)  # class by class, in the file's order
    images, labels = 2 * images[order] - 1, labels[order]
    rank = torch.arange(len(labels)) - torch.searchsorted(labels, labels)  # within class
    train = rank < train_per_class
    return images[train], labels[train], images[~train], labels[~train]


def class_means(
    pixels: Float[Tensor, "S P"], labels: Int[Tensor, " S"]
) -> Float[Tensor, "C P"]:
    """The mean image of each class, ``(C, P)`` for ``C = labels.max() + 1`` classes.

    Example:
        >>> class_means(torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0]]),
        ...             torch.tensor([0, 0, 1]))
        tensor([[2., 0.],
                [0., 1.]])
    """
    _check_labels("labels", labels)
    C = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=C)
    if (counts == 0).any():
        raise ValueError(f"every class 0 .. {C - 1} needs an image, got {counts.tolist()}")
    sums = torch.zeros(C, pixels.shape[1], dtype=pixels.dtype).index_add_(0, labels, pixels)
    return sums / counts.unsqueeze(1).to(pixels.dtype)


def dam_class_scores(memories: Memories, pixels: Pixels, degree: int,
                     temperature: float) -> Float[Tensor, "B C"]:
    r"""The classification neurons after one update, :math:`c_\alpha` of the module's equation.

    Args:
        memories: ``(K, N_v + N_c)`` memories :math:`\boldsymbol\xi_\mu`, visible part first.
        pixels: ``(B, N_v)`` images in :math:`[-1, 1]`.
        degree: :math:`n` of the rectified polynomial :math:`F(u) = \max(u, 0)^n`.
        temperature: :math:`T`, with :math:`\beta = 1/T^n`.

    Shapes:
        returns: ``(B, N_c)``, in :math:`(-1, 1)`; the predicted class is the argmax.

    Example:
        >>> memories = torch.tensor([[1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, -1.0, 1.0]])
        >>> dam_class_scores(memories, torch.tensor([[1.0, -1.0]]), 2, 2.0).argmax(-1)
        tensor([0])
    """
    _check_pixels("pixels", pixels, memories)
    check_positive_int("degree", degree)
    check_real("temperature", temperature, min_value=0.0, strict_min=True)
    N_v = pixels.shape[1]
    xi_v, xi_c = memories[:, :N_v], memories[:, N_v:]  # visible, class parts
    # (eq-hopfield-dam-classifier) u_mu, every sigma at -1  (B, K)
    u = pixels @ xi_v.T - xi_c.sum(1)
    on = u.unsqueeze(-1) + 2 * xi_c  # u_mu + 2 xi_mu_alpha: sigma_alpha at +1
    F_on = (on.clamp(min=0) / temperature) ** degree  # beta F, beta = 1 / T^n
    F_off = (u.clamp(min=0) / temperature) ** degree  # (B, K)
    # (eq-hopfield-dam-classifier)
    return torch.tanh((F_on - F_off.unsqueeze(-1)).sum(1))


@dataclass
class DAMClassifierHistory:
    """What :func:`train_dam_classifier` measured after every epoch."""

    train_error: list[float] = field(default_factory=list)
    test_error: list[float] = field(default_factory=list)
    prototype: list[float] = field(default_factory=list)


def prototype_score(memories: Memories, class_means: Float[Tensor, "C P"]) -> Float[Tensor, " K"]:
    r"""How much each memory looks like a whole digit: its largest correlation with a class mean.

    The Pearson correlation, over the pixels, of every memory's visible part with every
    class-mean image; the maximum over the classes. A prototype (a whole digit of one
    class) scores near 1; a feature (a stroke, a part shared by several digits) lower.

    Args:
        memories: ``(K, P)`` visible parts of the memories (``P`` pixels), or the whole
            memories, of which the first ``P`` columns are used.
        class_means: ``(C, P)`` the mean image of each class.

    Shapes:
        returns: ``(K,)``.

    Example:
        >>> means = torch.tensor([[1.0, 0.0, 0.0], [0.0, 0.0, 1.0]])
        >>> prototype_score(torch.tensor([[2.0, 0.0, 1.0]]), means)
        tensor([0.8660])
    """
    P = class_means.shape[1]
    if P > memories.shape[1]:  # the first P columns of the memories are their pixels
        raise ValueError(f"class_means must have at most as many columns as memories "
                         f"(P <= M = {memories.shape[1]}), got shape {tuple(class_means.shape)}")
    m = memories[:, :P] - memories[:, :P].mean(1, keepdim=True)
    c = class_means.to(m.dtype) - class_means.to(m.dtype).mean(1, keepdim=True)
    m = m / m.norm(dim=1, keepdim=True).clamp(min=1e-12)
    c = c / c.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return (m @ c.T).max(1).values  # (K,)


def train_dam_classifier(
    pixels: Pixels,
    labels: Int[Tensor, " B"],
    *,
    degree: int,
    temperature: float,
    num_memories: int = 100,
    epochs: int = 100,
    batch_size: int = 100,
    lr: float = 0.04,
    decay: float = 0.998,
    momentum: float = 0.6,
    loss_power: int = 30,
    init_mean: float = -0.3,
    init_std: float = 0.3,
    test: tuple[Tensor, Tensor] | None = None,
    class_means: Float[Tensor, "C P"] | None = None,
    generator: torch.Generator | None = None,
) -> tuple[Float64[Tensor, "K M"], DAMClassifierHistory]:
    r"""Train the memories of a dense associative memory classifier (Krotov & Hopfield, 2016).

    Minimises :math:`\sum (t_\alpha - c_\alpha)^{2m}` over mini-batches with the authors'
    update: a momentum :math:`V \leftarrow p V - \nabla`, each memory moved by
    :math:`\varepsilon V_\mu / \max_j |V_{\mu j}|`, then clipped to :math:`[-1, 1]`; the
    learning rate :math:`\varepsilon` decays by ``decay`` per epoch.

    Args:
        pixels: ``(S, N_v)`` training images in :math:`[-1, 1]`.
        labels: ``(S,)`` integer classes ``0 .. C-1``.
        degree: :math:`n` of :math:`F(u) = \max(u, 0)^n`.
        temperature: :math:`T` (:math:`\beta = 1/T^n`).
        num_memories: :math:`K`.
        epochs, batch_size: passes over the data and mini-batch size.
        lr, decay, momentum, loss_power: :math:`\varepsilon_0`, its decay per epoch,
            :math:`p` and :math:`m` of the loss.
        init_mean, init_std: the Gaussian of the initial memories (the authors' -0.3, 0.3).
        test: optional ``(pixels, labels)`` scored after every epoch.
        class_means: optional ``(C, N_v)`` class means; :func:`prototype_score` is
            recorded after every epoch.
        generator: random generator of the initial memories and the mini-batches.

    Returns:
        ``(memories, history)``: ``(K, N_v + C)`` float64 memories and a
        :class:`DAMClassifierHistory` (errors as fractions).

    Example:
        >>> x = torch.tensor([[1.0, -1.0], [-1.0, 1.0]]).repeat(8, 1)
        >>> y = torch.tensor([0, 1]).repeat(8)
        >>> xi, h = train_dam_classifier(x, y, degree=2, temperature=2.0, num_memories=4,
        ...                              epochs=5, batch_size=4,
        ...                              generator=torch.Generator().manual_seed(0))
        >>> tuple(xi.shape), h.train_error[-1]
        ((4, 4), 0.0)
    """
    _check_pixels("pixels", pixels)
    _check_labels("labels", labels)
    check_positive_int("degree", degree)
    check_real("temperature", temperature, min_value=0.0, strict_min=True)
    for name, size in dict(num_memories=num_memories, batch_size=batch_size,
                           loss_power=loss_power).items():
        check_positive_int(name, size)
    check_int("epochs", epochs, min_value=0)
    check_real("lr", lr, min_value=0.0, strict_min=True)
    check_real("decay", decay, min_value=0.0, max_value=1.0, strict_min=True)
    check_real("momentum", momentum, min_value=0.0, max_value=1.0)
    check_real("init_mean", init_mean), check_real("init_std", init_std, min_value=0.0)
    K = num_memories
    m = loss_power
    num_classes = int(labels.max()) + 1
    if test is not None:
        test_x, test_y = _check_test(test, pixels.shape[1])
    x_all, y_all = pixels.double(), labels
    targets = -torch.ones(len(y_all), num_classes, dtype=torch.float64)
    targets[torch.arange(len(y_all)), y_all] = 1.0
    xi = init_mean + init_std * torch.randn(
        K, pixels.shape[1] + num_classes, dtype=torch.float64, generator=generator)
    xi = xi.clamp(-1.0, 1.0)
    velocity = torch.zeros_like(xi)
    history = DAMClassifierHistory()
    for epoch in range(epochs):
        eps = lr * decay**epoch
        wrong = 0
        for batch in torch.randperm(len(y_all), generator=generator).split(batch_size):
            xi.requires_grad_(True)
            c = dam_class_scores(xi, x_all[batch], degree, temperature)  # (B, C)
            loss = ((targets[batch] - c) ** (2 * m)).sum()
            (grad,) = torch.autograd.grad(loss, xi)
            xi = xi.detach()
            wrong += int((c.argmax(-1) != y_all[batch]).sum())
            velocity = momentum * velocity - grad
            scale = velocity.abs().amax(1, keepdim=True).clamp(min=1e-30)
            xi = (xi + eps * velocity / scale).clamp(-1.0, 1.0)
        history.train_error.append(wrong / max(len(y_all), 1))
        if test is not None:
            with torch.no_grad():
                guess = dam_class_scores(xi, test_x, degree, temperature).argmax(-1)
            history.test_error.append((guess != test_y).double().mean().item())
        if class_means is not None:
            history.prototype.append(prototype_score(xi, class_means).mean().item())
    return xi.detach(), history


def _check_test(test: tuple[Tensor, Tensor], N_v: int) -> tuple[Tensor, Tensor]:
    """A test set ``(pixels (B, N_v), labels (B,))``, its pixels as float64."""
    test_x = check_tensor("test pixels", test[0], floating=True, shape=("B", N_v))
    test_y = check_tensor("test labels", test[1], floating=False, ndim=1)
    if len(test_y) != len(test_x):
        raise ValueError(f"test labels must have one label per test image (B = "
                         f"{len(test_x)}), got shape {tuple(test_y.shape)}")
    _check_pixels("test pixels", test_x)
    _check_labels("test labels", test_y)
    return test_x.double(), test_y
