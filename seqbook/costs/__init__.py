"""What each architecture costs: self-attention, recurrent and convolutional layers measured.

The chapter "What each architecture costs" (``book/architecture_costs.md``) puts the
measurements next to Table 1 of Vaswani et al. (2017).
"""

from seqbook.costs.layers import (
    CausalConvolution,
    SelfAttentionLayer,
    attention_stack,
    convolution_stack,
)
from seqbook.costs.measure import (
    count_flops,
    count_operations,
    cpu_seconds,
    path_length,
    power_law_exponent,
)

__all__ = [
    "CausalConvolution",
    "SelfAttentionLayer",
    "attention_stack",
    "convolution_stack",
    "count_flops",
    "count_operations",
    "cpu_seconds",
    "path_length",
    "power_law_exponent",
]
