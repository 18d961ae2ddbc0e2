"""Self-attention as an attractor network (D'Amico & Negri, 2024).

- ``embedding``: images as vector spins (patches, pixel spins, a fixed random
  orthonormal embedding and its exact inverse);
- ``bare``: the bare self-attention, a recurrent network of vector spins with
  position-dependent couplings, its dynamics and local energies;
- ``pseudolikelihood``: training without backpropagation, by minimising the energy
  of the training data, and the plain Hebbian couplings (a control);
- ``spectrum``: the dynamics at uniform attention as a projected power iteration,
  its leading eigenvalues and eigenvectors, and the attention's effective partners;
- ``tasks``: the data split, masked prediction, denoising, the evaluation protocol
  (seeded evaluation sets, reconstruction curves) and simple baselines;
- ``storage``: saving and loading the trained bare model in a few hundred kilobytes;
- ``baselines``: the backpropagation-trained recurrent transformer block and vision
  transformer, with committed checkpoints;
- ``train``: the command line that trains the bare model and the baselines
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
    hebbian_couplings,
    pseudo_likelihood_gradient,
    pseudo_likelihood_loss,
    train_pseudo_likelihood,
)
from seqbook.attractor.spectrum import (
    coupling_matrix,
    effective_partners,
    forgetting_time,
    leading_modes,
    mode_spins,
    power_operator,
)
from seqbook.attractor.storage import compress_couplings, expand_couplings, load_bare, save_bare
from seqbook.attractor.tasks import (
    CorruptedDigits,
    add_noise,
    bare_reconstructions,
    blur,
    corrupt_digits,
    evaluation_set,
    mask_tokens,
    mean_fill,
    mnist_split,
    mse_curve,
    patch_variance,
)

__all__ = [
    "CHECKPOINTS",
    "BareSelfAttention",
    "BaselineConfig",
    "CorruptedDigits",
    "PatchEmbedding",
    "PatchTransformer",
    "RecurrentTransformer",
    "VisionTransformer",
    "add_noise",
    "bare_reconstructions",
    "blur",
    "build_baseline",
    "compress_couplings",
    "corrupt",
    "corrupt_digits",
    "coupling_matrix",
    "effective_partners",
    "evaluation_set",
    "expand_couplings",
    "forgetting_time",
    "hebbian_couplings",
    "image_to_patches",
    "leading_modes",
    "load_bare",
    "load_baseline",
    "mask_tokens",
    "mean_fill",
    "mnist_split",
    "mode_spins",
    "mse_curve",
    "patch_variance",
    "patches_to_image",
    "pixel_spins",
    "power_operator",
    "pseudo_likelihood_gradient",
    "pseudo_likelihood_loss",
    "save_bare",
    "save_baseline",
    "spins_to_pixels",
    "train_baseline",
    "train_pseudo_likelihood",
]
