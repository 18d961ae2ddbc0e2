"""Hopfield networks: associative memories from Hopfield (1982) to attention.

- ``classical``: binary spins, Hebbian weights, (a)synchronous updates;
- ``dense``: dense associative memory with polynomial or exponential
  interaction (Krotov & Hopfield 2016; Demircigil et al. 2017);
- ``modern``: the continuous modern Hopfield network (Ramsauer et al. 2021);
- ``layers``: Hopfield layers and Hopfield pooling for neural networks, with the
  options of Ramsauer et al.'s library ``hflayers`` (:class:`HopfieldConfig`);
- ``capacity``: storage-capacity experiments;
- ``recognition``: a dense associative memory trained as a classifier (Krotov &
  Hopfield 2016), and a measure of whether its memories are features or prototypes;
  ``feature_prototype`` is the offline run that trains it for several powers n.
"""

from seqbook.hopfield.capacity import (
    MEMORIES,
    CapacityCurve,
    bit_errors,
    capacity_curve,
    corrupt,
    random_patterns,
    retrieval_errors,
    retrieved_fraction,
)
from seqbook.hopfield.classical import (
    ClassicalHopfield,
    async_relax,
    async_sweep,
    classical_energy,
    hebbian_weights,
    sync_step,
)
from seqbook.hopfield.dense import DenseAssociativeMemory, dense_async_sweep, dense_energy
from seqbook.hopfield.layers import (
    HopfieldConfig,
    HopfieldLayer,
    HopfieldPooling,
    hopfield_association,
)
from seqbook.hopfield.memory import Retrieval
from seqbook.hopfield.modern import ModernHopfield, lse, modern_energy, modern_update, separation

__all__ = [
    "MEMORIES",
    "CapacityCurve",
    "ClassicalHopfield",
    "DenseAssociativeMemory",
    "HopfieldConfig",
    "HopfieldLayer",
    "HopfieldPooling",
    "ModernHopfield",
    "Retrieval",
    "async_relax",
    "async_sweep",
    "bit_errors",
    "capacity_curve",
    "classical_energy",
    "corrupt",
    "dense_async_sweep",
    "dense_energy",
    "hebbian_weights",
    "hopfield_association",
    "lse",
    "modern_energy",
    "modern_update",
    "random_patterns",
    "retrieval_errors",
    "retrieved_fraction",
    "separation",
    "sync_step",
]
