"""Recurrent networks: the Elman RNN, LSTM and GRU, training through time, gradient diagnostics.

Every recurrent module of this subpackage follows one small protocol (see
:mod:`seqbook.recurrent.diagnostics`): ``module(x, state) -> (outputs, final_state)``
with batch-first ``x`` of shape ``(B, T, D)`` and ``outputs`` of shape ``(B, T, H)``,
runnable piece by piece. The training helpers and the diagnostics rely on nothing else.
"""

from seqbook.recurrent.bptt import TruncatedBPTTResult, activation_bytes, truncated_bptt
from seqbook.recurrent.diagnostics import (
    jacobian_norms,
    state_gradient_norms,
    state_jacobians,
    unroll_with_probes,
)
from seqbook.recurrent.gru import GRU, GRUTrace
from seqbook.recurrent.lstm import LSTM, LSTMTrace
from seqbook.recurrent.rnn import RNN
from seqbook.recurrent.rtrl import RTRLResult, rtrl

__all__ = [
    "GRU",
    "GRUTrace",
    "LSTM",
    "LSTMTrace",
    "RNN",
    "RTRLResult",
    "TruncatedBPTTResult",
    "activation_bytes",
    "jacobian_norms",
    "rtrl",
    "state_gradient_norms",
    "state_jacobians",
    "truncated_bptt",
    "unroll_with_probes",
]
