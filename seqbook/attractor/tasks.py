r"""The two tasks of the paper, their data and their measurements.

Shape letters: ``B`` images, ``H`` x ``W`` pixels, ``N`` tokens, ``D`` features per
token, ``S`` iterations.

- masked prediction: a fraction (30%) of the tokens of an image is set to zero;
- denoising: Gaussian noise of variance 0.7 on every pixel, then the image is
  rescaled to the variance of the original (and clipped to [0, 1]);
- the error of a reconstruction: the mean squared error per pixel, after each
  iteration :math:`t` of a recurrent model;
- the variance of the pixels within each patch (the paper's Fig. 2).
"""

from __future__ import annotations

import math

import torch

from seqbook._checks import check_int, check_positive_int, check_real, check_tensor
from seqbook.attractor.embedding import image_to_patches
from seqbook.data import mnist5k, split_dataset

__all__ = ["mnist_split", "mask_tokens", "add_noise", "mse_curve", "patch_variance"]


def mnist_split(
    train_size: int = 4000, test_size: int = 1000, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
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
    train_size = check_int("train_size", train_size, min_value=1)
    test_size = check_int("test_size", test_size, min_value=1)
    if train_size > 4000 or test_size > 1000:
        raise ValueError(
            f"train_size must be <= 4000 and test_size <= 1000 (5,000 digits in all), "
            f"got {train_size} and {test_size}"
        )
    images, labels = mnist5k()
    train, _, test = split_dataset(
        list(range(len(labels))), 0.0, 0.2, seed=seed, stratify=lambda k: int(labels[k])
    )
    return images[train[:train_size]], images[test[:test_size]]


def mask_tokens(
    tokens: torch.Tensor, fraction: float = 0.3, generator: torch.Generator | None = None
) -> tuple[torch.Tensor, torch.Tensor]:
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
    tokens = check_tensor("tokens", tokens, ndim=3, floating=True)
    fraction = check_real("fraction", fraction, min_value=0.0)
    if fraction >= 1:
        raise ValueError(f"fraction must be < 1 (some tokens must stay visible), got {fraction}")
    B, N, _ = tokens.shape
    count = int(round(fraction * N))
    ranks = torch.rand(B, N, generator=generator).argsort(-1).argsort(-1)  # random ranks
    visible = (ranks >= count).to(tokens.device)  # (B, N)
    return tokens * visible.unsqueeze(-1), visible


def add_noise(
    images: torch.Tensor, variance: float = 0.7, generator: torch.Generator | None = None
) -> torch.Tensor:
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
    images = check_tensor("images", images, ndim=3, floating=True)
    variance = check_real("variance", variance, min_value=0.0)
    noise = torch.randn(images.shape, generator=generator).to(images)
    noisy = images + math.sqrt(variance) * noise  # (B, H, W)
    mean = noisy.mean((1, 2), keepdim=True)
    scale = images.std((1, 2), keepdim=True) / noisy.std((1, 2), keepdim=True).clamp_min(1e-12)
    return (mean + scale * (noisy - mean)).clamp(0.0, 1.0)


def mse_curve(reconstructions: torch.Tensor, images: torch.Tensor) -> torch.Tensor:
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
    reconstructions = check_tensor("reconstructions", reconstructions, ndim=4, floating=True)
    images = check_tensor("images", images, ndim=3, floating=True)
    if reconstructions.shape[1:] != images.shape:
        raise ValueError(
            f"reconstructions must have shape (S, *{tuple(images.shape)}), "
            f"got {tuple(reconstructions.shape)}"
        )
    return ((reconstructions - images) ** 2).mean((1, 2, 3))  # (S,)


def patch_variance(
    images: torch.Tensor, patch_size: int, tokens: torch.Tensor | None = None
) -> torch.Tensor:
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
    patch_size = check_positive_int("patch_size", patch_size)
    patches = image_to_patches(images, patch_size)  # (B, N, a)
    variances = patches.var(-1, unbiased=False)  # (B, N)
    if tokens is None:
        return variances.flatten()
    tokens = check_tensor("tokens", tokens, ndim=2)
    if tokens.dtype != torch.bool or tokens.shape != variances.shape:
        raise ValueError(
            f"tokens must be a boolean tensor of shape {tuple(variances.shape)}, "
            f"got {tokens.dtype} of shape {tuple(tokens.shape)}"
        )
    return variances[tokens.to(variances.device)]
