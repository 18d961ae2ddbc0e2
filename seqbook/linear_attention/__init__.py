"""Linear attention: kernelised causal attention as a recurrent network with a matrix
state, and that state as an associative memory written by Hebb's rule or the delta rule.

The chapter "Linear attention is a recurrent network" (``book/linear_attention.md``)
explains every piece.
"""

from seqbook.linear_attention.kernelized import (
    elu_feature_map,
    linear_attention,
    linear_attention_chunked,
    linear_attention_recurrent,
)
from seqbook.linear_attention.memory import associative_memory, delta_rule_attention

__all__ = [
    "associative_memory",
    "delta_rule_attention",
    "elu_feature_map",
    "linear_attention",
    "linear_attention_chunked",
    "linear_attention_recurrent",
]
