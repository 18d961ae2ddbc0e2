r"""The two tasks of the paper, their data, their evaluation protocol and simple baselines.

Shape letters: ``B`` images, ``H`` x ``W`` pixels, ``N`` tokens, ``D`` features per
token, ``S`` iterations.

- masked prediction: a fraction (30%) of the tokens of an image is set to zero;
- denoising: Gaussian noise of variance 0.7 on every pixel, then the image is
  rescaled to the variance of the original (and clipped to [0, 1]);
- the error of a reconstruction: the mean squared error per pixel, after each
  iteration :math:`t` of a recurrent model;
- the variance of the pixels within each patch (the paper's Fig. 2).

The evaluation protocol is public so that other models can be compared on exactly
the same corrupted digits: :func:`evaluation_set` gives the seeded test digits of one
task as :class:`CorruptedDigits`, :func:`bare_reconstructions` runs a
:class:`~seqbook.attractor.BareSelfAttention` on them, and :func:`mse_curve` scores
any model's reconstructions after :math:`t = 0, 1, \dots` iterations.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import TypeAlias

import torch
from jaxtyping import Bool, Float
from torch import Tensor

from seqbook._checks import check_choice, check_int, check_positive_int, check_real
from seqbook.attractor._values import check_pixels
from seqbook.attractor.bare import BareSelfAttention
from seqbook.attractor.embedding import PatchEmbedding, image_to_patches, patches_to_image
from seqbook.data import mnist5k, split_dataset

__all__ = [
    "CorruptedDigits",
    "add_noise",
    "bare_reconstructions",
    "blur",
    "corrupt_digits",
    "evaluation_set",
    "mask_tokens",
    "mean_fill",
    "mnist_split",
    "mse_curve",
    "patch_variance",
]

TASKS = ("mask", "denoise")

# Grey-level images (pixels in [0, 1], which the functions check).
Images: TypeAlias = Float[Tensor, "B H W"]


def _check_fraction(fraction: float) -> float:
    """A share of the tokens to mask, in [0, 1): some tokens must stay visible."""
    return check_real("fraction", fraction, min_value=0.0, max_value=1.0, strict_max=True)


def mnist_split(
    train_size: int = 4000, test_size: int = 1000, seed: int = 0
) -> tuple[Float[Tensor, "{train_size} 28 28"], Float[Tensor, "{test_size} 28 28"]]:
    """Disjoint training and test digits from :func:`seqbook.data.mnist5k`.

    The 5,000 digits are split 4,000 / 1,000, with the same share of every class in
    both (a seeded, stratified shuffle); the first ``train_size`` training digits and
    the first ``test_size`` test digits are returned, so a smaller training set is a
    subset of a larger one.

    Args:
        train_size: number of training images, 1 to 4,000 (the paper used 50,000).
        test_size: number of test images, 1 to 1,000.
        seed: the seed of the split.

    Shapes:
        returns: ``(train_size, 28, 28)`` and ``(test_size, 28, 28)``, floats in [0, 1].

    Example:
        >>> train, test = mnist_split(100, 10)
        >>> tuple(train.shape), tuple(test.shape)
        ((100, 28, 28), (10, 28, 28))
    """
    check_int("train_size", train_size, min_value=1, max_value=4000)
    check_int("test_size", test_size, min_value=1, max_value=1000)
    images, _ = mnist5k()
    train, test = _split_indices(seed)
    return images[list(train[:train_size])], images[list(test[:test_size])]


@functools.cache
def _split_indices(seed: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """The training and test indices of :func:`mnist_split`'s split with ``seed``,
    computed once (the chapters and scripts ask for the same split dozens of times)."""
    _, labels = mnist5k()
    train, _, test = split_dataset(
        list(range(len(labels))), 0.0, 0.2, seed=seed, stratify=lambda k: int(labels[k])
    )
    return tuple(train), tuple(test)


def mask_tokens(
    tokens: Float[Tensor, "B N D"],
    fraction: float = 0.3,
    generator: torch.Generator | None = None,
) -> tuple[Float[Tensor, "B N D"], Bool[Tensor, "B N"]]:
    """Set a random ``fraction`` of the tokens of each configuration to zero.

    Exactly ``round(fraction * N)`` tokens per configuration, chosen uniformly.

    Args:
        tokens: embedded images (spins or patch vectors).
        fraction: share of tokens to mask, in [0, 1).
        generator: random generator.

    Shapes:
        tokens: ``(B, N, D)``.
        returns: the masked tokens ``(B, N, D)`` and the boolean mask ``(B, N)``,
        True = visible (not masked).

    Example:
        >>> masked, visible = mask_tokens(torch.ones(2, 10, 3), 0.3)
        >>> visible.sum(-1).tolist(), masked[~visible].abs().sum().item()
        ([7, 7], 0.0)
    """
    B, N, _ = tokens.shape
    count = int(round(_check_fraction(fraction) * N))
    ranks = torch.rand(B, N, generator=generator).argsort(-1).argsort(-1)  # random ranks
    visible = (ranks >= count).to(tokens.device)  # (B, N)
    return tokens * visible.unsqueeze(-1), visible


def add_noise(
    images: Images, variance: float = 0.7, generator: torch.Generator | None = None
) -> Images:
    r"""Gaussian noise on every pixel, rescaled to the original variance, clipped to [0, 1].

    .. math::
        \tilde{\mathbf p} = \mathbf p + \sqrt{v}\,\boldsymbol\epsilon, \qquad
        \mathbf p' = \operatorname{clip}_{[0,1]}\Bigl(\bar{\tilde p} +
        \frac{\sigma_{\mathbf p}}{\sigma_{\tilde{\mathbf p}}}(\tilde{\mathbf p} -
        \bar{\tilde p})\Bigr)

    with :math:`\boldsymbol\epsilon \sim \mathcal N(0, I)`, means and standard
    deviations over the pixels of each image.

    Args:
        images: clean images with pixels in [0, 1].
        variance: noise variance per pixel (0.7 in the paper).
        generator: random generator.

    Shapes:
        images: ``(B, H, W)``.
        returns: ``(B, H, W)``.

    Example:
        >>> noisy = add_noise(torch.rand(4, 28, 28), generator=torch.Generator().manual_seed(0))
        >>> tuple(noisy.shape), 0.0 <= noisy.min().item() and noisy.max().item() <= 1.0
        ((4, 28, 28), True)
    """
    check_pixels("images", images), check_real("variance", variance, min_value=0.0)
    noise = torch.randn(images.shape, generator=generator).to(images)
    noisy = images + math.sqrt(variance) * noise  # (B, H, W)
    mean = noisy.mean((1, 2), keepdim=True)
    scale = images.std((1, 2), keepdim=True) / noisy.std((1, 2), keepdim=True).clamp_min(1e-12)
    return (mean + scale * (noisy - mean)).clamp(0.0, 1.0)


def mse_curve(
    reconstructions: Float[Tensor, "S B H W"], images: Images
) -> Float[Tensor, " S"]:
    """Mean squared error per pixel of each step's reconstruction.

    Args:
        reconstructions: the images after ``t = 0, 1, ...`` iterations.
        images: the clean images.

    Shapes:
        reconstructions: ``(S, B, H, W)``.
        images: ``(B, H, W)``.
        returns: ``(S,)``, averaged over images and pixels.

    Example:
        >>> clean = torch.zeros(2, 4, 4)
        >>> mse_curve(torch.stack([clean + 0.5, clean + 0.1, clean]), clean)
        tensor([0.2500, 0.0100, 0.0000])
    """
    return ((reconstructions - images) ** 2).mean((1, 2, 3))  # (S,)


def patch_variance(
    images: Images, patch_size: int, tokens: Bool[Tensor, "B N"] | None = None
) -> Float[Tensor, " M"]:
    """The variance of the pixels inside each patch (population variance).

    Args:
        images: predicted (or clean) images.
        patch_size: the side of the square patches.
        tokens: optional boolean mask ``(B, N)`` selecting the patches to keep (for
            example the masked ones, ``~visible``).

    Shapes:
        images: ``(B, H, W)``.
        returns: ``(B * N,)`` or, with ``tokens``, one value per selected patch.

    Example:
        >>> image = torch.tensor([[[0., 1., 0., 0.], [1., 0., 0., 0.]]])
        >>> patch_variance(image, 2)
        tensor([0.2500, 0.0000])
    """
    check_pixels("images", images)
    patches = image_to_patches(images, patch_size)  # (B, N, a)
    variances = patches.var(-1, unbiased=False)  # (B, N)
    if tokens is None:
        return variances.flatten()
    if tokens.shape != variances.shape:
        raise ValueError(
            f"tokens must be a boolean tensor of shape {tuple(variances.shape)} (one per "
            f"patch), got shape {tuple(tokens.shape)}"
        )
    return variances[tokens.to(variances.device)]


@dataclass(frozen=True)
class CorruptedDigits:
    """Clean digits and their corrupted versions for one task: what every model is given.

    Attributes:
        task: ``"mask"`` or ``"denoise"``.
        clean: the clean digits ``(B, H, W)``, the targets.
        corrupted: the corrupted digits ``(B, H, W)``: masked patches set to paper (0),
            or the noisy images. At :math:`t = 0` a model's reconstruction is this.
        visible: ``(B, N)``, True for the visible patches of ``patch_size`` (``"mask"``);
            None for ``"denoise"``.
        patch_size: the side of the patches that were masked.
    """

    task: str
    clean: Float[Tensor, "B H W"]
    corrupted: Float[Tensor, "B H W"]
    visible: Bool[Tensor, "B N"] | None
    patch_size: int

    @property
    def height(self) -> int:
        """The height ``H`` of the digits."""
        return self.clean.shape[1]

    @property
    def width(self) -> int:
        """The width ``W`` of the digits."""
        return self.clean.shape[2]


def corrupt_digits(
    images: Images,
    task: str,
    patch_size: int = 2,
    fraction: float = 0.3,
    variance: float = 0.7,
    generator: torch.Generator | None = None,
) -> CorruptedDigits:
    """Corrupt clean digits for one task.

    ``"mask"``: a ``fraction`` of the ``patch_size`` x ``patch_size`` patches of each
    image is hidden (:func:`mask_tokens`; their pixels set to 0 in ``corrupted``);
    ``"denoise"``: :func:`add_noise` of variance ``variance``. The generator draws only
    the masks or only the noise, so the same seed gives the same noisy images for any
    ``patch_size``.

    Shapes:
        images: ``(B, H, W)``, pixels in [0, 1].

    Example:
        >>> digits = corrupt_digits(torch.rand(2, 28, 28), "mask")
        >>> tuple(digits.visible.shape), (~digits.visible).sum(-1).tolist()
        ((2, 196), [59, 59])
    """
    check_pixels("images", images), check_choice("task", task, TASKS)
    _check_fraction(fraction), check_real("variance", variance, min_value=0.0)
    patches = image_to_patches(images, patch_size)  # (B, N, a); checks the grid
    if task == "denoise":
        noisy = add_noise(images, variance, generator)
        return CorruptedDigits(task, images, noisy, None, patch_size)
    hidden, visible = mask_tokens(patches, fraction, generator)
    _, H, W = images.shape
    hidden_image = patches_to_image(hidden, patch_size, H, W)
    return CorruptedDigits(task, images, hidden_image, visible, patch_size)


def evaluation_set(
    task: str, seed: int = 0, num_images: int = 32, patch_size: int = 2,
) -> CorruptedDigits:
    """The chapter's evaluation digits: test digits of :func:`mnist_split`, corrupted with a seed.

    Seed ``s`` takes the test digits ``s * num_images`` to ``(s + 1) * num_images - 1``
    (disjoint sets for different seeds) and corrupts them with
    ``torch.Generator().manual_seed(s)`` through :func:`corrupt_digits` (30% of the
    patches masked; noise of variance 0.7). The sets do not move with
    ``SEQBOOK_SEED_SHIFT``: they are the data the committed tables were measured on.

    Args:
        task: ``"mask"`` or ``"denoise"``.
        seed: which set, 0, 1, 2, ...
        num_images: digits per set.
        patch_size: the patches that ``"mask"`` hides (2 for the bare model, 4 for the
            transformers); the noisy images do not depend on it.

    Example:
        >>> a, b = evaluation_set("denoise", 0, 4), evaluation_set("denoise", 0, 4, patch_size=4)
        >>> torch.equal(a.corrupted, b.corrupted), tuple(a.clean.shape)
        (True, (4, 28, 28))
    """
    check_choice("task", task, TASKS), check_int("seed", seed, min_value=0)
    check_positive_int("num_images", num_images), check_positive_int("patch_size", patch_size)
    if (seed + 1) * num_images > 1000:
        raise ValueError(
            f"(seed + 1) * num_images must be <= 1000 (the test digits), got "
            f"({seed} + 1) * {num_images}"
        )
    _, test = mnist_split(1, 1000)
    images = test[seed * num_images : (seed + 1) * num_images]
    # Not seeded_generator: the committed tables were measured on exactly these corrupted
    # digits, and the chapter compares live reruns with them on the same data.
    generator = torch.Generator().manual_seed(seed)
    return corrupt_digits(images, task, patch_size, generator=generator)


def bare_reconstructions(
    model: BareSelfAttention,
    embedding: PatchEmbedding,
    digits: CorruptedDigits,
    steps: int,
) -> Float[Tensor, "{steps+1} B {embedding.height} {embedding.width}"]:
    """The images after ``t = 0, 1, ..., steps`` iterations of the bare self-attention.

    The corrupted digits are embedded as spins; masked tokens are zero vectors that are
    not attended to in the first step (:meth:`BareSelfAttention.run
    <seqbook.attractor.BareSelfAttention.run>`); every state is decoded to pixels. At
    ``t = 0`` the result is the corrupted image.

    Shapes:
        returns: ``(steps + 1, B, H, W)``; score it with :func:`mse_curve`.

    Example:
        >>> digits = evaluation_set("denoise", 0, 2)
        >>> model = BareSelfAttention(196, 8)
        >>> tuple(bare_reconstructions(model, PatchEmbedding(2), digits, 3).shape)
        (4, 2, 28, 28)
    """
    check_int("steps", steps, min_value=0)
    if digits.visible is not None and digits.patch_size != embedding.patch_size:
        raise ValueError(
            f"digits were masked with patch_size {digits.patch_size} but the embedding "
            f"uses patch_size {embedding.patch_size}"
        )
    with torch.no_grad():
        x0 = embedding(digits.corrupted).to(model.J)  # (B, N, d)
        visible = None if digits.visible is None else digits.visible.to(x0.device)  # (B, N)
        if visible is not None:
            x0 = x0 * visible.unsqueeze(-1)  # masked tokens: zero vectors
        states = model.run(x0, steps, key_mask=visible)  # (S + 1, B, N, d)
        images = torch.stack([embedding.decode(x.to(embedding.F)) for x in states[1:]])
        return torch.cat([digits.corrupted[None], images])  # (S + 1, B, H, W)


def mean_fill(
    digits: CorruptedDigits, mean_image: Float[Tensor, "{digits.height} {digits.width}"]
) -> Float[Tensor, "B {digits.height} {digits.width}"]:
    """A baseline for masked prediction: every masked patch takes the pixels of ``mean_image``.

    Shapes:
        mean_image: ``(H, W)``, e.g. the mean training digit.
        returns: ``(B, H, W)``.

    Example:
        >>> digits = corrupt_digits(torch.zeros(1, 4, 4), "mask", fraction=0.5)
        >>> mean_fill(digits, torch.ones(4, 4)).sum().item()
        8.0
    """
    check_pixels("mean_image", mean_image)
    if digits.visible is None:
        raise ValueError("digits must be CorruptedDigits of the task 'mask' (with a visible mask)")
    P = digits.patch_size
    _, H, W = digits.clean.shape
    patches = image_to_patches(digits.corrupted, P)  # (B, N, a)
    mean = image_to_patches(mean_image[None], P)  # (1, N, a)
    filled = torch.where(digits.visible.unsqueeze(-1), patches, mean)
    return patches_to_image(filled, P, H, W)


def blur(images: Images, sigma: float) -> Images:
    r"""A baseline for denoising: a Gaussian blur of standard deviation ``sigma`` pixels.

    The kernel is truncated at :math:`3\sigma` and renormalised near the borders (the
    image is treated as zero outside, and each output pixel divided by the kernel mass
    inside the image).

    Shapes:
        images: ``(B, H, W)``, pixels in [0, 1].
        returns: ``(B, H, W)``.

    Example:
        >>> image = torch.zeros(1, 5, 5)
        >>> image[0, 2, 2] = 1.0
        >>> out = blur(image, 1.0)
        >>> round(out[0, 2, 2].item(), 3), bool(out[0, 2, 1] > 0)
        (0.162, True)
    """
    check_pixels("images", images), check_real("sigma", sigma, min_value=0.0, strict_min=True)
    radius = max(1, math.ceil(3 * sigma))
    offsets = torch.arange(-radius, radius + 1, dtype=images.dtype, device=images.device)
    kernel = torch.exp(-(offsets**2) / (2 * sigma**2))
    kernel = kernel / kernel.sum()

    def smooth(x: Tensor) -> Tensor:  # (B, H, W): along both axes
        x = torch.nn.functional.conv2d(x[:, None], kernel.view(1, 1, 1, -1), padding=(0, radius))
        return torch.nn.functional.conv2d(x, kernel.view(1, 1, -1, 1), padding=(radius, 0))[:, 0]

    return smooth(images) / smooth(torch.ones_like(images[:1]))
