"""State-space models: the linear time-invariant SSM (discretisation, recurrence,
convolution, the diagonal S4D layer) and the selective SSM of Mamba (sequential and
parallel scans, Mamba-2's semiseparable matrix and its chunked algorithm, the Mamba
block).

The chapter "State-space models: from S4D to Mamba" (``book/ssm.md``) explains every
piece.
"""

from seqbook.ssm.linear import S4D, ssm_convolution, ssm_kernel, ssm_recurrence, zoh
from seqbook.ssm.selective import (
    MambaBlock,
    selective_discretize,
    selective_scan,
    selective_scan_sequential,
    semiseparable_matrix,
)
from seqbook.ssm.ssd import ssd_chunk, ssd_chunked

__all__ = [
    "MambaBlock",
    "S4D",
    "selective_discretize",
    "selective_scan",
    "selective_scan_sequential",
    "semiseparable_matrix",
    "ssd_chunk",
    "ssd_chunked",
    "ssm_convolution",
    "ssm_kernel",
    "ssm_recurrence",
    "zoh",
]
