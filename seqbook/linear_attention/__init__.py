"""Linear attention: kernelised causal attention as a recurrent network with a matrix
state, and that state as an associative memory written by Hebb's rule or the delta rule.

The chapter "Linear attention is a recurrent network" (``book/linear_attention.md``)
explains every piece.
"""

from seqbook.linear_attention.gated import (
    gated_linear_attention,
    gated_linear_attention_step,
)
from seqbook.linear_attention.kernelized import (
    elu_feature_map,
    linear_attention,
    linear_attention_chunk,
    linear_attention_chunked,
    linear_attention_recurrent,
    linear_attention_step,
)
from seqbook.linear_attention.memory import (
    associative_memory,
    delta_rule_attention,
    delta_write,
    hebbian_write,
)

__all__ = [
    "associative_memory",
    "delta_rule_attention",
    "delta_write",
    "elu_feature_map",
    "gated_linear_attention",
    "gated_linear_attention_step",
    "hebbian_write",
    "linear_attention",
    "linear_attention_chunk",
    "linear_attention_chunked",
    "linear_attention_recurrent",
    "linear_attention_step",
]
