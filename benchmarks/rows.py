"""The rows of the benchmark table: each returns one Comparison."""

from __future__ import annotations

import random

import torch
from torch.nn.utils.rnn import pad_sequence

from benchmarks.harness import Comparison, compare
from seqbook.data import pad_batch


def padding() -> Comparison:
    """pad_batch (padded ids + lengths + mask) against torch's bare pad_sequence."""
    rng = random.Random(0)
    sequences = [torch.randint(0, 100, (rng.randint(5, 40),)) for _ in range(256)]
    return compare(
        "pad_batch, 256 sequences of 5-40 ids (reference: pad_sequence)",
        lambda: pad_batch(sequences),
        lambda: pad_sequence(sequences, batch_first=True),
        repeats=21,
    )


ROWS = [padding]
