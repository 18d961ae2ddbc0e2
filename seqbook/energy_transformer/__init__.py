"""The Energy Transformer (Hoover et al., 2023): attention that descends one global energy.

- ``layer_norm``: the energy layer norm, the gradient of a convex Lagrangian;
- ``attention``: energy attention, an energy of queries and keys whose gradient is the
  update (no value matrix);
- ``hopfield``: the Hopfield network module, a token-wise dense associative memory
  that replaces the MLP;
- ``block``: the Energy Transformer block, its energy and its token dynamics;
- ``masked``: the block on masked digits (the attractor chapter's task), its training
  by backpropagation through the dynamics, and committed checkpoints;
- ``train``: the command line that trains them
  (``python -m seqbook.energy_transformer.train --help``).
"""

from seqbook.energy_transformer.attention import EnergyAttention
from seqbook.energy_transformer.block import EnergyTransformer
from seqbook.energy_transformer.hopfield import HopfieldNetwork
from seqbook.energy_transformer.layer_norm import EnergyLayerNorm
from seqbook.energy_transformer.masked import (
    CHECKPOINTS,
    MaskedConfig,
    MaskedEnergyTransformer,
    grid_encoding,
    load_masked,
    masked_loss,
    paste_visible,
    save_masked,
    train_masked,
)

__all__ = [
    "CHECKPOINTS",
    "EnergyAttention",
    "EnergyLayerNorm",
    "EnergyTransformer",
    "HopfieldNetwork",
    "MaskedConfig",
    "MaskedEnergyTransformer",
    "grid_encoding",
    "load_masked",
    "masked_loss",
    "paste_visible",
    "save_masked",
    "train_masked",
]
