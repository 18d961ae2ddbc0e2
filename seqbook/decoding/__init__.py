"""Search for the most probable output sequence: greedy, exhaustive and beam search.

All three are driven by a step function (prefixes -> log-probabilities of the next
token, see :mod:`seqbook.decoding.common`), so they decode any model and any fixed
probability table alike, many sentences at once. The chapter "Decoding and BLEU"
(``book/decoding_bleu.md``) explains them.
"""

from seqbook.decoding.beam import beam_search
from seqbook.decoding.common import Hypotheses, length_normalized, reorder_state
from seqbook.decoding.exhaustive import exhaustive_search
from seqbook.decoding.greedy import greedy_search

__all__ = [
    "Hypotheses",
    "beam_search",
    "exhaustive_search",
    "greedy_search",
    "length_normalized",
    "reorder_state",
]
