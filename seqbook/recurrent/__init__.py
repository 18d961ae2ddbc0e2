"""Recurrent networks: the Elman RNN, LSTM and GRU, deep and bidirectional, training
through time, gradient diagnostics.

:class:`RNN`, :class:`LSTM` and :class:`GRU` take torch's arguments (``num_layers``,
``bias``, ``dropout``, ``bidirectional``, the LSTM's ``proj_size``) and return torch's
shapes: ``module(x, state) -> (outputs, final_state)`` with batch-first ``x`` of shape
``(B, T, D)`` (the book's default; torch's is time-first), ``outputs`` of shape
``(B, T, num_directions * H)`` and states of shape ``(num_layers * num_directions, B, H)``.
A one-layer, one-direction module follows the small protocol of
:mod:`seqbook.recurrent.diagnostics` (runnable piece by piece), on which the training
helpers and the diagnostics rely.
"""

from seqbook.recurrent.bptt import TruncatedBPTTResult, activation_bytes, truncated_bptt
from seqbook.recurrent.diagnostics import (
    jacobian_norms,
    state_gradient_norms,
    state_jacobians,
    unroll_with_probes,
)
from seqbook.recurrent.gru import GRU, GRUTrace
from seqbook.recurrent.lstm import LSTM, LSTMTrace, chrono_init, lstm_backward, lstm_step_backward
from seqbook.recurrent.reservoir import echo_state_network, ridge_readout
from seqbook.recurrent.rnn import RNN
from seqbook.recurrent.rtrl import RTRLResult, rtrl, rtrl_sensitivity
from seqbook.recurrent.stack import RecurrentStack

__all__ = [
    "GRU",
    "GRUTrace",
    "LSTM",
    "LSTMTrace",
    "RNN",
    "RTRLResult",
    "RecurrentStack",
    "TruncatedBPTTResult",
    "activation_bytes",
    "chrono_init",
    "echo_state_network",
    "jacobian_norms",
    "lstm_backward",
    "lstm_step_backward",
    "ridge_readout",
    "rtrl",
    "rtrl_sensitivity",
    "state_gradient_norms",
    "state_jacobians",
    "truncated_bptt",
    "unroll_with_probes",
]
