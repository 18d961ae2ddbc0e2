r"""Deep and bidirectional recurrent networks: layers of one recurrence, read both ways.

Shape letters: ``B`` batch, ``T`` time, ``D`` input features, ``H`` hidden units per
direction (or ``P``, an LSTM's ``proj_size``), ``K = num_layers * num_directions``.

A **stacked** (deep) recurrent network feeds the outputs of each layer to the next
as its inputs; layer :math:`l` has its own weights and its own state,

.. math:: h^{(l)}_t = f^{(l)}\big(h^{(l-1)}_t,\, h^{(l)}_{t-1}\big),
    \qquad h^{(0)}_t = x_t,

with :math:`f^{(l)}` the step of an Elman RNN, an LSTM or a GRU. A **bidirectional**
layer runs two independent recurrences over the same inputs, one from the first step
to the last and one from the last real step of each sequence back to the first, and
concatenates their states, :math:`h_t = [\overrightarrow{h}_t; \overleftarrow{h}_t]`.
This is what ``torch.nn.RNN``, ``nn.LSTM`` and ``nn.GRU`` compute with
``num_layers`` and ``bidirectional``; :class:`RecurrentStack` does it for the
one-layer recurrences of :class:`~seqbook.recurrent.RNN`,
:class:`~seqbook.recurrent.LSTM` and :class:`~seqbook.recurrent.GRU`, with torch's
argument names, defaults (except ``batch_first``), state shapes and order of layers
and directions.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from typing import Annotated, Any

import torch
import torch.nn.functional as F
from torch import nn
from torch.nn.utils.rnn import PackedSequence, pad_packed_sequence

from seqbook._checks import _describe
from seqbook._contracts import (
    Check,
    Dims,
    Flag,
    FloatDtype,
    PositiveInt,
    Probability,
    Shaped,
)
from seqbook.recurrent._sequence import State, padding_mask

__all__ = ["RecurrentStack"]


def check_no_projection(name: str, value: Any, *, module: str) -> int:
    """``proj_size`` is torch's LSTM-only argument; anything but 0 is an error."""
    if isinstance(value, bool) or value != 0:
        raise ValueError(f"{name} is only supported by LSTM (as in torch), not {module}; got "
                         f"{name}={value!r}")
    return value


# (B,) integer lengths of padded sequences, >= 0 (and <= T, checked against x)
Lengths = Shaped("B", floating=False, min_value=0)
# x is batch-first or time-first (the module's batch_first), or a PackedSequence: no
# contract of the signature can name its sizes, so the body checks it with the
# contract of its layout, then lengths (one per sequence, at most T) against it
_INPUTS = {layout: Dims(f"{layout} input_size", floating=True, dtype_of="module",
                        device_of="module", min_size={"T": 1}) for layout in ("B T", "T B")}
_LENGTHS_IN_X = Dims("B", min_value=0, max_value="T")


def NoProjection(module: str) -> Any:
    """``proj_size`` of a module other than an LSTM (``module`` names it): 0."""
    return Annotated[int, Check(check_no_projection, module=module)]


def _suffix(layer: int, direction: int) -> str:
    """Our parameter-name suffix: ``""`` (first layer, forward), ``"_l1"``, ``"_reverse"``..."""
    return (f"_l{layer}" if layer else "") + ("_reverse" if direction else "")


def _torch_suffix(layer: int, direction: int) -> str:
    """torch's: ``"_l0"``, ``"_l1"``, ``"_l0_reverse"``..."""
    return f"_l{layer}" + ("_reverse" if direction else "")


class RecurrentStack(nn.Module):
    r"""``num_layers`` layers of a one-layer recurrence, each in one or two directions.

    .. math::
        h^{(l)}_t = f^{(l)}\big(h^{(l-1)}_t, h^{(l)}_{t-1}\big), \qquad
        h^{(0)}_t = x_t, \qquad
        h^{(l)}_t = \big[\overrightarrow{h}^{(l)}_t; \overleftarrow{h}^{(l)}_t\big]
        \text{ if bidirectional},

    where the backward direction :math:`\overleftarrow{h}` reads each sequence from its
    last real step to its first. In training mode, dropout with probability
    ``dropout`` is applied to the outputs of every layer but the last (as torch does).

    The base class of :class:`~seqbook.recurrent.RNN`,
    :class:`~seqbook.recurrent.LSTM` and :class:`~seqbook.recurrent.GRU`, which
    define one layer in one direction (its parameters and its step); this class runs
    them layer by layer and direction by direction, checks the input once, and copies
    weights from and to torch's modules. The parameters of layer ``l`` and direction
    ``d`` carry torch's suffixes, except that the first layer's forward direction has
    none (the one-layer chapters' names): ``W_hh``, ``W_hh_l1``, ``W_hh_reverse``,
    ``W_hh_l1_reverse``.

    Shapes (``K = num_layers * num_directions``):
        ``x``: ``(B, T, D)`` (``(T, B, D)`` if ``batch_first=False``), or a
        ``PackedSequence``;
        initial and final states: ``(K, B, H)`` each, in torch's order (index
        ``layer * num_directions + direction``);
        outputs: ``(B, T, num_directions * H)``, the last layer's states.
    """

    _torch_class: type[nn.RNNBase] = nn.RNNBase
    _state_names: tuple[str, ...] = ("h0",)

    def __init__(
        self,
        input_size: PositiveInt,
        hidden_size: PositiveInt,
        num_layers: PositiveInt,
        bias: Flag,
        batch_first: Flag,
        dropout: Probability,
        bidirectional: Flag,
        device: torch.device | str | None = None,
        dtype: FloatDtype | None = None,
    ) -> None:
        super().__init__()
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = dropout
        self.bidirectional = bidirectional
        self._factory = {"device": device, "dtype": dtype}  # for the parameters, as in torch
        if self.dropout > 0 and self.num_layers == 1:
            warnings.warn(  # as torch warns: there is no layer to drop out between
                f"dropout={self.dropout} has no effect with num_layers=1: dropout acts "
                "between layers, not after the last one",
                UserWarning,
                stacklevel=3,
            )

    # --- what a subclass defines: one layer in one direction ---------------------------

    def _make_parameters(self, suffix: str, input_size: int) -> None:
        """Register the parameters of one layer and direction (names end in ``suffix``)."""
        raise NotImplementedError

    def _one_direction(
        self, x: torch.Tensor, state: State, mask: torch.Tensor | None, suffix: str, record: bool
    ) -> tuple[torch.Tensor, State, Any]:
        """Run one layer left to right over ``x`` ``(B, T, D_l)``: outputs, final state
        and, if ``record``, a trace of the gates."""
        raise NotImplementedError

    def _copy_from_torch(self, module: nn.RNNBase, suffix: str, torch_suffix: str) -> None:
        raise NotImplementedError

    def _copy_to_torch(self, module: nn.RNNBase, suffix: str, torch_suffix: str) -> None:
        raise NotImplementedError

    def _torch_settings(self) -> dict[str, Any]:
        """Keyword arguments of torch's constructor beyond the common ones."""
        return {}

    @property
    def _output_size(self) -> int:
        """Features of one direction's output (``H``, or an LSTM's ``proj_size``)."""
        return self.hidden_size

    def _state_sizes(self) -> tuple[int, ...]:
        """The last dimension of each state tensor."""
        return (self.hidden_size,)

    # --- the stack ---------------------------------------------------------------------

    @property
    def num_directions(self) -> int:
        """2 if bidirectional, else 1."""
        return 2 if self.bidirectional else 1

    def _build(self) -> None:
        """Make every layer's parameters, in torch's order, and initialise them."""
        for layer in range(self.num_layers):
            layer_input = self.input_size if layer == 0 else self.num_directions * self._output_size
            for direction in range(self.num_directions):
                self._make_parameters(_suffix(layer, direction), layer_input)
        del self._factory  # only for making the parameters
        self.reset_parameters()

    def _new_parameter(self, name: str, *shape: int, is_bias: bool = False) -> None:
        if is_bias and not self.bias:  # bias=False: no parameter at all, as in torch
            self.register_parameter(name, None)
        else:
            self.register_parameter(name, nn.Parameter(torch.empty(*shape, **self._factory)))

    def _parameter(self, name: str) -> torch.Tensor:
        """A parameter by name; a missing bias (``bias=False``) is the constant 0."""
        value = getattr(self, name)
        if value is None:
            return self._like.new_zeros(())
        return value

    @property
    def _like(self) -> torch.Tensor:
        """A parameter, for the module's dtype and device."""
        return next(self.parameters())

    def reset_parameters(self) -> None:
        r"""Uniform in :math:`\pm 1/\sqrt{H}`, the initialisation of torch's layers."""
        bound = 1.0 / math.sqrt(self.hidden_size)
        for parameter in self.parameters():
            nn.init.uniform_(parameter, -bound, bound)

    def extra_repr(self) -> str:
        settings = [f"{self.input_size}, {self.hidden_size}"]
        defaults = dict(num_layers=1, bias=True, batch_first=True, dropout=0.0,
                        bidirectional=False)
        for name, default in defaults.items():
            if getattr(self, name) != default:
                settings.append(f"{name}={getattr(self, name)}")
        return ", ".join(settings)

    def _layers(
        self,
        x: torch.Tensor,
        states: list[State],
        lengths: torch.Tensor | None,
        mask: torch.Tensor | None,
        record: int | None = None,
    ) -> tuple[torch.Tensor, list[State], list[Any]]:
        """All layers, bottom to top; ``states[layer * num_directions + direction]``."""
        h, finals, traces = x, [], []  # h^(0)_t = x_t
        for layer in range(self.num_layers):
            if layer > 0:  # between layers, not after the last; only in training
                h = F.dropout(h, p=self.dropout, training=self.training)
            first = layer * self.num_directions  # states of this layer: first, +1
            runs = [  # layer l reads the outputs of layer l - 1  (eq-deep-layer)
                self._direction(h, states[first + d], lengths, mask, layer, d,
                                record == layer)
                for d in range(self.num_directions)
            ]
            outputs = [out for out, _, _ in runs]
            h = torch.cat(outputs, dim=-1)  # (B, T, dirs H)  (eq-birnn-concat)
            finals += [final for _, final, _ in runs]
            traces += [trace for _, _, trace in runs]
        return h, finals, traces

    def _direction(
        self,
        h_below: torch.Tensor,
        state: State,
        lengths: torch.Tensor | None,
        mask: torch.Tensor | None,
        layer: int,
        direction: int,
        record: bool = False,
    ) -> tuple[torch.Tensor, State, Any]:
        """One layer in one direction over the outputs of the layer below."""
        suffix = _suffix(layer, direction)
        if direction == 0:  # t = 1, ..., T  (eq-birnn-forward)
            return self._one_direction(h_below, state, mask, suffix, record)
        # t = T_b, ..., 1 from each sequence's last real step  (eq-birnn-backward)
        reversed_below = self._reverse(h_below, lengths)  # (B, T, D_l)
        out, final, trace = self._one_direction(reversed_below, state, mask, suffix,
                                                record)
        if trace is not None:  # back in the order of the inputs
            trace = _map_fields(trace, lambda v: self._reverse(v, lengths))
        return self._reverse(out, lengths), final, trace

    @staticmethod
    def _reverse(x: torch.Tensor, lengths: torch.Tensor | None) -> torch.Tensor:
        """Each sequence of ``x`` ``(B, T, .)`` reversed within its length.

        Step ``t < T_b`` of sequence ``b`` goes to ``T_b - 1 - t``; padding stays where
        it is. Applied twice, it is the identity.
        """
        if lengths is None:
            return x.flip(1)  # (B, T, .)
        B, T = x.shape[:2]
        t = torch.arange(T, device=x.device)  # (T,)
        T_b = lengths.to(x.device).unsqueeze(1)  # (B, 1)
        source = torch.where(t < T_b, T_b - 1 - t, t)  # (B, T)
        return x[torch.arange(B, device=x.device).unsqueeze(1), source]  # (B, T, .)

    # --- the public entry points: checks once, then the math --------------------------

    def _initial_states(self, state: Any, bound: dict[str, Any]) -> list[State]:
        """The initial state as one tuple of ``(B, H)`` tensors per layer and direction
        (``bound``: the sizes of x)."""
        like, K, B = self._like, self.num_layers * self.num_directions, bound["B"][0]
        if state is None:
            parts = [like.new_zeros(K, B, size) for size in self._state_sizes()]  # (K, B, H)
        else:
            bound = {**bound, "K": (K, "num_layers * num_directions")}
            parts = self._check_state_parts(state, self._state_names, "K B", bound)
        return [tuple(part[k] for part in parts) for k in range(K)]

    def _check_state_parts(
        self, state: Any, names: tuple[str, ...], leading: str, bound: dict[str, Any]
    ) -> list[torch.Tensor]:
        """The tensors of ``state`` (one, or an LSTM's pair of parts ``names``), each of
        shape ``(*leading, H)`` (the sizes ``bound``), in the parameters' dtype and device."""
        sizes = self._state_sizes()
        if len(sizes) == 1:
            parts = [state]
        elif isinstance(state, (tuple, list)) and len(state) == len(sizes):
            parts = list(state)
        else:
            raise TypeError(f"state must be a pair ({', '.join(names)}) of tensors, got "
                            f"{_describe(state)}")
        labels = names if len(sizes) == 1 else [f"state[{i}] ({n})" for i, n in enumerate(names)]
        for label, part, size in zip(labels, parts, sizes):
            H = "hidden_size" if size == self.hidden_size else "proj_size"
            contract = Dims(f"{leading} {H}", floating=True, dtype_of="module", device_of="module")
            contract.check_in(label, part, {"self": self}, dict(bound))
        return parts

    def _final_state(self, finals: list[State]) -> Any:
        """Per-layer final states stacked as torch returns them, ``(K, B, H)`` each."""
        parts = tuple(torch.stack([f[i] for f in finals]) for i in range(len(finals[0])))
        return parts[0] if len(parts) == 1 else parts  # (K, B, H)

    def _run(self, x: Any, state: Any, lengths: Any, record: int | None = None):
        """Check the input, run the layers, give the outputs torch's layout."""
        packed = x if isinstance(x, PackedSequence) else None
        if packed is not None:
            if lengths is not None:
                raise ValueError("lengths must be None when x is a PackedSequence (it has them)")
            x, lengths = pad_packed_sequence(packed, batch_first=True)  # (B, T, D)
        batch_first, bound = self.batch_first or packed is not None, {}  # bound: B, T of x
        _INPUTS["B T" if batch_first else "T B"].check_in("x", x, {"self": self}, bound)
        if lengths is not None:
            _LENGTHS_IN_X.check_in("lengths", lengths, {}, bound)
        x = x if batch_first else x.transpose(0, 1)  # (B, T, D)
        B, T, _ = x.shape
        states = self._initial_states(state, bound)
        mask = padding_mask(lengths, T, x.device)  # (B, T, 1) or None
        out, finals, traces = self._layers(x, states, lengths, mask, record)
        if packed is not None:
            out = _repack(out, packed)
        elif not self.batch_first:
            out = out.transpose(0, 1)  # (T, B, num_directions * H)
        return out, self._final_state(finals), traces

    def _trace_of_layer(self, x: Any, state: Any, lengths: Any, layer: int) -> Any:
        """The trace of one layer, its directions side by side like its outputs."""
        layer = _check_layer(layer, self.num_layers)
        if isinstance(x, PackedSequence):
            raise TypeError("trace takes a padded x with lengths, not a PackedSequence")
        traces = self._run(x, state, lengths, record=layer)[2]
        traces = traces[layer * self.num_directions : (layer + 1) * self.num_directions]
        fields = [f.name for f in dataclasses.fields(traces[0])]
        joined = {}
        for name in fields:
            values = [getattr(t, name) for t in traces]
            joined[name] = None if values[0] is None else torch.cat(values, dim=-1)
        return type(traces[0])(**joined)

    def _check_one_layer(self, method: str) -> None:
        if self.num_layers != 1 or self.bidirectional:
            raise ValueError(
                f"{method} is one step of a one-layer, one-direction module; this one has "
                f"num_layers={self.num_layers}, bidirectional={self.bidirectional} (step a "
                "stack with forward(x[:, t:t+1], state); a backward direction cannot step)"
            )

    # --- torch's modules ---------------------------------------------------------------

    def _copy_all_from_torch(self, module: nn.RNNBase) -> "RecurrentStack":
        """Copy every layer and direction of ``module``; same device, dtype, mode."""
        weight = module.weight_ih_l0
        self.to(device=weight.device, dtype=weight.dtype)
        with torch.no_grad():
            for layer in range(self.num_layers):
                for direction in range(self.num_directions):
                    self._copy_from_torch(module, _suffix(layer, direction),
                                          _torch_suffix(layer, direction))
        self.train(module.training)
        return self

    def _torch_twin(self) -> nn.RNNBase:
        """A torch module of the same configuration holding these weights."""
        like = self._like
        module = self._torch_class(
            self.input_size, self.hidden_size, num_layers=self.num_layers, bias=self.bias,
            batch_first=self.batch_first, dropout=self.dropout,
            bidirectional=self.bidirectional, **self._torch_settings(),
        )
        module.to(device=like.device, dtype=like.dtype)
        with torch.no_grad():
            for layer in range(self.num_layers):
                for direction in range(self.num_directions):
                    self._copy_to_torch(module, _suffix(layer, direction),
                                        _torch_suffix(layer, direction))
        module.train(self.training)
        return module


def _check_layer(layer: int, num_layers: int) -> int:
    if not -num_layers <= layer < num_layers:
        raise ValueError(
            f"layer must be in [-{num_layers}, {num_layers}) (num_layers={num_layers}), "
            f"got {layer}"
        )
    return layer % num_layers


def _map_fields(trace: Any, fn) -> Any:
    """A trace dataclass with ``fn`` applied to each of its tensors (None stays None)."""
    return dataclasses.replace(trace, **{
        f.name: None if getattr(trace, f.name) is None else fn(getattr(trace, f.name))
        for f in dataclasses.fields(trace)
    })


def _repack(out: torch.Tensor, like: PackedSequence) -> PackedSequence:
    """Padded batch-first outputs ``(B, T, .)`` packed like the input ``like``."""
    if like.sorted_indices is not None:
        out = out[like.sorted_indices.to(out.device)]  # (B, T, .) longest first
    data = torch.cat([out[:n, t] for t, n in enumerate(like.batch_sizes.tolist())])  # (N, .)
    return PackedSequence(data, like.batch_sizes, like.sorted_indices, like.unsorted_indices)
