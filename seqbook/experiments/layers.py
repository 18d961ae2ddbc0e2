r"""The recurrent layers the chapters compare, and how their gates start.

Shape letters: ``D`` input features, ``H`` hidden units or LSTM blocks.

The chapters compare a plain RNN, LSTMs with and without forget gate and GRUs, each
with a few initialisations of its gate biases: a negative input-gate bias (Hochreiter
and Schmidhuber's trick), a positive forget-gate bias (Gers et al. 2000; Jozefowicz et
al. 2015), Tallec and Ollivier's chrono initialisation (2018), a positive update-gate
bias for the GRU. A :class:`LayerSpec` names one such
choice; :func:`recurrent_layer` builds it with the book's own module
(:class:`~seqbook.recurrent.LSTM`, :class:`~seqbook.recurrent.GRU`) and returns the
fused PyTorch layer computing the same function (``to_torch()``), which trains
several times faster on a CPU. The plain RNN is ``nn.RNN`` (the function of
:class:`~seqbook.recurrent.RNN`).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import nn

from seqbook._checks import check_choice, check_positive_int, check_real
from seqbook.recurrent import GRU, LSTM, chrono_init

__all__ = ["LayerSpec", "recurrent_layer"]

KINDS = ("rnn", "gru", "lstm")
#: The gate biases of a spec: finite reals.
_BIASES = ("input_gate_bias", "forget_gate_bias", "update_gate_bias", "chrono_t_max")


@dataclass(frozen=True)
class LayerSpec:
    r"""One recurrent layer and the initial bias of its gates.

    The biases are *added* to the layer's initial ones (uniform in
    :math:`\pm 1/\sqrt{H}`, as PyTorch initialises them): e.g.
    ``forget_gate_bias=1.0`` starts the forget gates near :math:`\sigma(1) \approx
    0.73` instead of 0.5.

    Args:
        kind: ``"rnn"`` (tanh), ``"gru"`` or ``"lstm"``.
        forget_gate: LSTM only; False gives the LSTM of 1997 (:math:`f_t = 1`).
        input_gate_bias: LSTM only, added to :math:`b_i`.
        forget_gate_bias: LSTM with forget gate only, added to :math:`b_f`.
        update_gate_bias: GRU only, added to :math:`b_z` (positive: keep the state).
        chrono_t_max: LSTM with forget gate only; if > 0, the biases :math:`b_f` and
            :math:`b_i` are replaced by :func:`~seqbook.recurrent.chrono_init` with
            this :math:`T_{\max}` (then ``input_gate_bias`` and ``forget_gate_bias``
            must be 0); 0: no chrono initialisation.

    Example:
        >>> LayerSpec("lstm", forget_gate=False, input_gate_bias=-2.0).label
        'LSTM 1997, b_i = -2'
        >>> LayerSpec("gru", update_gate_bias=3.0).label
        'GRU, b_z = +3'
        >>> LayerSpec("lstm", chrono_t_max=100).label
        'LSTM, chrono T_max = 100'
    """

    kind: str  # "rnn", "gru" or "lstm"
    forget_gate: bool = True  # LSTM: False is the 1997 LSTM
    input_gate_bias: float = 0.0  # LSTM: added to b_i
    forget_gate_bias: float = 0.0  # LSTM with forget gate: added to b_f
    update_gate_bias: float = 0.0  # GRU: added to b_z
    chrono_t_max: float = 0.0  # LSTM with forget gate: chrono initialisation if > 0

    def __post_init__(self) -> None:
        check_choice("kind", self.kind, KINDS)
        for name in _BIASES:  # stored as floats (1 -> 1.0), as the fields say
            object.__setattr__(self, name, check_real(name, getattr(self, name), finite=True))
        lstm_only = {
            "input_gate_bias": self.input_gate_bias,
            "forget_gate_bias": self.forget_gate_bias,
        }
        if self.kind != "lstm" and (not self.forget_gate or any(lstm_only.values())):
            raise ValueError(f"forget_gate, input_gate_bias and forget_gate_bias are LSTM options; "
                             f"got kind={self.kind!r} with {self}")
        if self.kind == "lstm" and not self.forget_gate and self.forget_gate_bias:
            raise ValueError("forget_gate_bias needs forget_gate=True (the 1997 LSTM has none)")
        if self.kind != "gru" and self.update_gate_bias:
            raise ValueError(f"update_gate_bias is a GRU option; got kind={self.kind!r}")
        chrono = self.chrono_t_max
        if chrono:
            if chrono < 2:
                raise ValueError(f"chrono_t_max must be 0 (off) or >= 2, got {chrono}")
            if self.kind != "lstm" or not self.forget_gate:
                raise ValueError("chrono_t_max is an option of the LSTM with forget gate; got "
                                 f"kind={self.kind!r}, forget_gate={self.forget_gate}")
            if self.input_gate_bias or self.forget_gate_bias:
                raise ValueError("chrono_t_max replaces b_i and b_f: input_gate_bias and "
                                 f"forget_gate_bias must be 0, got {self.input_gate_bias} and "
                                 f"{self.forget_gate_bias}")

    @property
    def label(self) -> str:
        """A short name for tables, such as ``"LSTM, b_f = +1"`` or ``"LSTM 1997, b_i = -2"``."""

        def signed(name: str, value: float) -> str:
            return f"{name} = {value:+g}" if value > 0 else f"{name} = {value:g}"

        if self.kind == "rnn":
            return "RNN"
        if self.kind == "gru":
            return "GRU" + (
                f", {signed('b_z', self.update_gate_bias)}" if self.update_gate_bias else ""
            )
        parts = ["LSTM" if self.forget_gate else "LSTM 1997"]
        if self.chrono_t_max:
            parts.append(f"chrono T_max = {self.chrono_t_max:g}")
        if self.forget_gate_bias:
            parts.append(signed("b_f", self.forget_gate_bias))
        if self.input_gate_bias or not self.forget_gate:
            parts.append(signed("b_i", self.input_gate_bias))
        return ", ".join(parts)


def recurrent_layer(
    spec: LayerSpec,
    input_size: int,
    hidden_size: int,
) -> nn.RNN | nn.GRU | nn.LSTM:
    r"""The fused, batch-first PyTorch layer that ``spec`` describes.

    LSTMs and GRUs are built as :class:`~seqbook.recurrent.LSTM` /
    :class:`~seqbook.recurrent.GRU` (whose gate biases the spec shifts) and converted
    with ``to_torch()``; an LSTM without forget gate becomes an ``nn.LSTM`` whose
    forget gate is pinned at 1; with ``spec.chrono_t_max`` the LSTM's biases are
    drawn by :func:`~seqbook.recurrent.chrono_init`. The RNN is ``nn.RNN`` with tanh.
    All draw their initial weights from PyTorch's global generator: seed it first.

    Args:
        spec: which layer.
        input_size: ``D`` (>= 1).
        hidden_size: ``H`` (>= 1).

    Returns:
        An ``nn.RNN``, ``nn.GRU`` or ``nn.LSTM`` with ``batch_first=True``.

    Example:
        >>> layer = recurrent_layer(LayerSpec("lstm", forget_gate_bias=1.0), 8, 16)
        >>> b_f = (layer.bias_ih_l0 + layer.bias_hh_l0)[16:32]   # torch's order: i, f, g, o
        >>> bool((b_f > 0.7).all())
        True
    """
    check_positive_int("input_size", input_size)
    check_positive_int("hidden_size", hidden_size)
    D = input_size
    H = hidden_size
    if spec.kind == "rnn":
        return nn.RNN(D, H, batch_first=True)
    if spec.kind == "gru":
        layer = GRU(D, H)
        with torch.no_grad():
            layer.get_parameter("b_z").add_(spec.update_gate_bias)
        return layer.to_torch()
    lstm = LSTM(D, H, forget_gate=spec.forget_gate, input_gate_bias=spec.input_gate_bias)
    if spec.forget_gate:
        with torch.no_grad():
            lstm.get_parameter("b_f").add_(spec.forget_gate_bias)
    if spec.chrono_t_max:
        chrono_init(lstm, spec.chrono_t_max)
    return lstm.to_torch()
