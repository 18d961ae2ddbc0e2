"""Self-attention as an attractor network (D'Amico & Negri, 2024).

- ``embedding``: images as vector spins (patches, pixel spins, a fixed random
  orthonormal embedding and its exact inverse);
- ``bare``: the bare self-attention, a recurrent network of vector spins with
  position-dependent couplings, its dynamics and local energies;
- ``pseudolikelihood``: training without backpropagation, by minimising the energy
  of the training data;
- ``tasks``: the data split, masked prediction, denoising and their measurements;
- ``baselines``: the backpropagation-trained recurrent transformer block and vision
  transformer, with committed checkpoints;
- ``train``: the command line that trains the baselines
  (``python -m seqbook.attractor.train --help``).
"""

from seqbook.attractor.bare import BareSelfAttention
from seqbook.attractor.baselines import (
    CHECKPOINTS,
    BaselineConfig,
    PatchTransformer,
    RecurrentTransformer,
    VisionTransformer,
    build_baseline,
    corrupt,
    load_baseline,
    save_baseline,
    train_baseline,
)
from seqbook.attractor.embedding import (
    PatchEmbedding,
    image_to_patches,
    patches_to_image,
    pixel_spins,
    spins_to_pixels,
)
from seqbook.attractor.pseudolikelihood import (
    pseudo_likelihood_gradient,
    pseudo_likelihood_loss,
    train_pseudo_likelihood,
)
from seqbook.attractor.tasks import add_noise, mask_tokens, mnist_split, mse_curve, patch_variance

__all__ = [
    "CHECKPOINTS",
    "BareSelfAttention",
    "BaselineConfig",
    "PatchEmbedding",
    "PatchTransformer",
    "RecurrentTransformer",
    "VisionTransformer",
    "add_noise",
    "build_baseline",
    "corrupt",
    "image_to_patches",
    "load_baseline",
    "mask_tokens",
    "mnist_split",
    "mse_curve",
    "patch_variance",
    "patches_to_image",
    "pixel_spins",
    "pseudo_likelihood_gradient",
    "pseudo_likelihood_loss",
    "save_baseline",
    "spins_to_pixels",
    "train_baseline",
    "train_pseudo_likelihood",
]
