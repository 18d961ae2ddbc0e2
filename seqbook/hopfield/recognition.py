r"""A dense associative memory trained as a classifier (Krotov & Hopfield, 2016).

The network has :math:`N_v` visible neurons (the pixels, in :math:`[-1, 1]`) and
:math:`N_c` classification neurons (:math:`\pm 1`), and :math:`K` memories
:math:`\boldsymbol\xi_\mu \in [-1, 1]^{N_v + N_c}`. Its energy is
:math:`E = -\sum_\mu F(\boldsymbol\xi_\mu \cdot \boldsymbol\sigma)` with the rectified
polynomial :math:`F(z) = \max(z, 0)^n`. One update of a classification neuron, the others
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
from typing import Annotated

import torch

from seqbook._contracts import (
    Dims,
    IntIn,
    NonNegativeInt,
    NonNegativeReal,
    PositiveInt,
    PositiveReal,
    RandomGenerator,
    Real,
    RealIn,
    Shaped,
    TensorOf,
)

__all__ = [
    "DAMClassifierHistory",
    "class_means",
    "digits_pm1",
    "dam_class_scores",
    "prototype_score",
    "train_dam_classifier",
]


# images (B, N_v), every pixel p in [0, 1] mapped to 2p - 1, and their classes 0 .. C-1;
# train_dam_classifier checks its test set with them too
_PIXELS = Dims("B N_v", floating=True, finite=True, min_value=-1, max_value=1)
_LABELS = Dims("B", floating=False, min_value=0)


def digits_pm1(train_per_class: IntIn(1, 499) = 400) -> tuple[torch.Tensor, ...]:
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
    from seqbook.data import mnist5k

    images, labels = mnist5k(flatten=True)
    order = torch.argsort(labels, stable=True)  # class by class, in the file's order
    images, labels = 2 * images[order] - 1, labels[order]
    rank = torch.arange(len(labels)) - torch.searchsorted(labels, labels)  # within class
    train = rank < train_per_class
    return images[train], labels[train], images[~train], labels[~train]


def class_means(
    pixels: Shaped("S P", floating=True),
    labels: Shaped("S", floating=False, min_value=0, min_size={"S": 1}),
) -> torch.Tensor:
    """The mean image of each class, ``(C, P)`` for ``C = labels.max() + 1`` classes.

    Example:
        >>> class_means(torch.tensor([[1.0, 0.0], [3.0, 0.0], [0.0, 1.0]]),
        ...             torch.tensor([0, 0, 1]))
        tensor([[2., 0.],
                [0., 1.]])
    """
    C = int(labels.max()) + 1
    counts = torch.bincount(labels, minlength=C)
    if (counts == 0).any():
        raise ValueError(f"every class 0 .. {C - 1} needs an image, got {counts.tolist()}")
    sums = torch.zeros(C, pixels.shape[1], dtype=pixels.dtype).index_add_(0, labels, pixels)
    return sums / counts.unsqueeze(1).to(pixels.dtype)


def dam_class_scores(
    memories: TensorOf(2, floating=True),
    pixels: Shaped(
        "B N_v", floating=True, dtype_of="memories", finite=True, min_value=-1, max_value=1
    ),
    degree: PositiveInt,
    temperature: PositiveReal,
) -> torch.Tensor:
    r"""The classification neurons after one update, :math:`c_\alpha` of the module's equation.

    Args:
        memories: ``(K, N_v + N_c)`` memories :math:`\boldsymbol\xi_\mu`, visible part first.
        pixels: ``(B, N_v)`` images in :math:`[-1, 1]`.
        degree: :math:`n` of the rectified polynomial :math:`F(z) = \max(z, 0)^n`.
        temperature: :math:`T`, with :math:`\beta = 1/T^n`.

    Shapes:
        returns: ``(B, N_c)``, in :math:`(-1, 1)`; the predicted class is the argmax.

    Example:
        >>> memories = torch.tensor([[1.0, -1.0, 1.0, -1.0], [-1.0, 1.0, -1.0, 1.0]])
        >>> dam_class_scores(memories, torch.tensor([[1.0, -1.0]]), 2, 2.0).argmax(-1)
        tensor([0])
    """
    if memories.shape[1] <= pixels.shape[1]:
        raise ValueError(f"memories must have more columns than pixels (N_v + N_c, N_c >= 1), "
                         f"got {memories.shape[1]} and {pixels.shape[1]}")
    return _dam_class_scores(memories, pixels, degree, temperature)


def _dam_class_scores(
    xi: torch.Tensor, v: torch.Tensor, n: int, T: float
) -> torch.Tensor:
    N_v = v.shape[1]  # xi: the memories (K, N_v + N_c), v: the pixels (B, N_v)
    xi_v, xi_c = xi[:, :N_v], xi[:, N_v:]  # visible part, class part
    # (eq-hopfield-dam-classifier) u_mu, every sigma at -1  (B, K)
    u = v @ xi_v.T - xi_c.sum(1)
    on = u.unsqueeze(-1) + 2 * xi_c  # u_mu + 2 xi_mu_alpha: sigma_alpha at +1
    F_on = (on.clamp(min=0) / T) ** n  # beta F, beta = 1 / T^n
    F_off = (u.clamp(min=0) / T) ** n  # (B, K)
    # (eq-hopfield-dam-classifier)
    return torch.tanh((F_on - F_off.unsqueeze(-1)).sum(1))


@dataclass
class DAMClassifierHistory:
    """What :func:`train_dam_classifier` measured after every epoch."""

    train_error: list[float] = field(default_factory=list)
    test_error: list[float] = field(default_factory=list)
    prototype: list[float] = field(default_factory=list)


def prototype_score(
    memories: Shaped("K M", floating=True),
    class_means: Shaped("C P", floating=True, max_size={"P": "M"}),  # P <= M columns
) -> torch.Tensor:
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
    m = memories[:, :P] - memories[:, :P].mean(1, keepdim=True)
    c = class_means.to(m.dtype) - class_means.to(m.dtype).mean(1, keepdim=True)
    m = m / m.norm(dim=1, keepdim=True).clamp(min=1e-12)
    c = c / c.norm(dim=1, keepdim=True).clamp(min=1e-12)
    return (m @ c.T).max(1).values  # (K,)


def train_dam_classifier(
    pixels: Annotated[torch.Tensor, _PIXELS],
    labels: Shaped("B", floating=False, min_value=0, min_size={"B": 1}),
    *,
    degree: PositiveInt,
    temperature: PositiveReal,
    num_memories: PositiveInt = 100,
    epochs: NonNegativeInt = 100,
    batch_size: PositiveInt = 100,
    lr: PositiveReal = 0.04,
    decay: RealIn(0.0, 1.0, strict_min=True) = 0.998,
    momentum: RealIn(0.0, 1.0) = 0.6,
    loss_power: PositiveInt = 30,
    init_mean: Real = -0.3,
    init_std: NonNegativeReal = 0.3,
    test: tuple[torch.Tensor, torch.Tensor] | None = None,
    class_means: TensorOf(2, floating=True) | None = None,
    generator: RandomGenerator = None,
) -> tuple[torch.Tensor, DAMClassifierHistory]:
    r"""Train the memories of a dense associative memory classifier (Krotov & Hopfield, 2016).

    Minimises :math:`\sum (t_\alpha - c_\alpha)^{2m}` over mini-batches with the authors'
    update: a momentum :math:`V \leftarrow p V - \nabla`, each memory moved by
    :math:`\varepsilon V_\mu / \max_j |V_{\mu j}|`, then clipped to :math:`[-1, 1]`; the
    learning rate :math:`\varepsilon` decays by ``decay`` per epoch.

    Args:
        pixels: ``(S, N_v)`` training images in :math:`[-1, 1]`.
        labels: ``(S,)`` integer classes ``0 .. C-1``.
        degree: :math:`n` of :math:`F(z) = \max(z, 0)^n`.
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
    K = num_memories
    m = loss_power
    num_classes = int(labels.max()) + 1
    if test is not None:
        if not (isinstance(test, tuple) and len(test) == 2):
            raise TypeError("test must be a tuple (pixels, labels)")
        sizes = {"N_v": (pixels.shape[1], "as in pixels")}  # the training images' size
        test_x = _PIXELS.check_in("test pixels", test[0], {}, sizes).double()
        test_y = _LABELS.check_in("test labels", test[1], {}, sizes)  # one per test image
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
            c = _dam_class_scores(xi, x_all[batch], degree, temperature)  # (B, C)
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
                guess = _dam_class_scores(xi, test_x, degree, temperature).argmax(-1)
            history.test_error.append((guess != test_y).double().mean().item())
        if class_means is not None:
            history.prototype.append(prototype_score(xi, class_means).mean().item())
    return xi.detach(), history
