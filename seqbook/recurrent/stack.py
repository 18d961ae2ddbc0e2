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
from collections.abc import Callable, Sequence
from types import SimpleNamespace
from typing import Any, TypeAlias

import torch
import torch.nn.functional as F
from jaxtyping import Float, Int, Shaped
from torch import Tensor, nn
from torch.nn.utils.rnn import PackedSequence, pad_packed_sequence

from seqbook._checks import (
    _describe,
    check_bool,
    check_device,
    check_float_dtype,
    check_int,
    check_positive_int,
    check_probability,
    check_same_dtype,
    check_tensor,
)
from seqbook.recurrent._sequence import State, Step, padding_mask, run_masked

__all__ = ["RecurrentStack"]

# (B,) integer lengths of padded sequences, in [0, T] (checked against x in the body)
Lengths: TypeAlias = Int[Tensor, "B"]  # noqa: F821 (a jaxtyping dimension, not a name)
# x of forward: batch-first (B, T, D) or time-first (T, B, D) as the module's
# batch_first says, or a PackedSequence; no type can say which of the first two sizes
# is B, so the body checks the sizes that depend on the layout (T >= 1, B of the state
# and of lengths)
Inputs: TypeAlias = Float[Tensor, "_ _ {self.input_size}"] | PackedSequence
# what forward returns as outputs: (B, T, num_directions * H) or (T, B, .), or packed
Outputs: TypeAlias = Float[Tensor, "_ _ _"] | PackedSequence
# the input of one layer, batch-first: the layer below's outputs (x for the first)
Sequences: TypeAlias = Float[Tensor, "B T D"]
# the per-layer, per-direction states of run_layers: a tuple of (B, H) tensors each
LayerStates: TypeAlias = Sequence[tuple[Float[Tensor, "B _"], ...]]


def _check_no_projection(name: str, value: int, *, module: str) -> int:
    """``proj_size`` is torch's LSTM-only argument; anything but 0 is an error."""
    if isinstance(value, bool) or value != 0:
        raise ValueError(f"{name} is only supported by LSTM (as in torch), not {module}; got "
                         f"{name}={value!r}")
    return value


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
    define one layer in one direction (its parameters, its ``step`` and its
    ``recurrence``); this class runs them layer by layer and direction by direction
    (:meth:`run_layers`, :meth:`run_direction`), checks the input once, and copies
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

    _torch_class: type[nn.RNN] | type[nn.LSTM] | type[nn.GRU]
    _state_names: tuple[str, ...] = ("h0",)
    # the parameters of one layer and direction, without their suffix
    _parameter_names: tuple[str, ...] = ()

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        num_layers: int,
        bias: bool,
        batch_first: bool,
        dropout: float,
        bidirectional: bool,
        device: torch.device | str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        super().__init__()
        for name, size in (("input_size", input_size), ("hidden_size", hidden_size),
                           ("num_layers", num_layers)):
            check_positive_int(name, size)
        for name, flag in (("bias", bias), ("batch_first", batch_first),
                           ("bidirectional", bidirectional)):
            check_bool(name, flag)
        check_probability("dropout", dropout)
        if dtype is not None:
            check_float_dtype("dtype", dtype)
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        # where and in which dtype to make the parameters, as in torch
        self._factory: dict[str, Any] = {"device": check_device("device", device),
                                         "dtype": dtype}
        if self.dropout > 0 and self.num_layers == 1:
            warnings.warn(  # as torch warns: there is no layer to drop out between
                f"dropout={self.dropout} has no effect with num_layers=1: dropout acts "
                "between layers, not after the last one",
                UserWarning,
                stacklevel=3,
            )

    # --- what a subclass defines: one layer in one direction ---------------------------

    def recurrence(
        self, x: Float[Tensor, "*batch D"], layer: int = 0, direction: int = 0
    ) -> tuple[Float[Tensor, "*batch _"], Step]:
        """The input parts of ``x`` (every step at once) and the step of one layer and
        direction, ``step(x_part, state) -> (state, gates)``: defined by a subclass."""
        raise NotImplementedError

    def _trace(self, outputs: Tensor, history: list[tuple[State, Any]]) -> Any:
        """A trace dataclass of one direction from its outputs ``(B, T, .)`` and the
        per-step states and gates of :func:`run_masked` (None: no trace)."""
        return None

    def _copy_from_torch(self, module: Any, suffix: str, torch_suffix: str) -> None:
        """Copy the parameters of one layer and direction of torch's ``module``."""
        raise NotImplementedError

    def _copy_to_torch(self, module: Any, suffix: str, torch_suffix: str) -> None:
        """Copy the parameters of one layer and direction into torch's ``module``."""
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

    # --- the parameters ----------------------------------------------------------------

    @property
    def num_directions(self) -> int:
        """2 if bidirectional, else 1."""
        return 2 if self.bidirectional else 1

    def _layer_inputs(self) -> list[tuple[str, int]]:
        """``(suffix, input size)`` of every layer and direction, in torch's order."""
        return [
            (_suffix(layer, direction),
             self.input_size if layer == 0 else self.num_directions * self._output_size)
            for layer in range(self.num_layers) for direction in range(self.num_directions)
        ]

    def _new_parameter(self, name: str, *shape: int, is_bias: bool = False) -> None:
        if is_bias and not self.bias:  # bias=False: no parameter at all, as in torch
            self.register_parameter(name, None)
        else:
            self.register_parameter(name, nn.Parameter(torch.empty(*shape, **self._factory)))

    def _parameter(self, name: str) -> Tensor:
        """A parameter by name; a missing bias (``bias=False``) is the constant 0."""
        value = getattr(self, name)
        if value is None:
            return self._like.new_zeros(())
        return value

    def _layer_parameters(self, layer: int, direction: int) -> SimpleNamespace:
        """The parameters of one layer and direction under their names without suffix
        (``w.W_hh`` is ``W_hh_l1_reverse`` of layer 1, backward); a missing bias is 0."""
        check_int("layer", layer, min_value=0, max_value=self.num_layers - 1)
        check_int("direction", direction, min_value=0, max_value=self.num_directions - 1)
        suffix = _suffix(layer, direction)
        return SimpleNamespace(**{name: self._parameter(name + suffix)
                                  for name in self._parameter_names})

    @property
    def _like(self) -> Tensor:
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

    # --- the stack ---------------------------------------------------------------------

    def run_layers(
        self,
        x: Sequences,
        states: LayerStates,
        lengths: Lengths | None = None,
        record: int | None = None,
    ) -> tuple[Float[Tensor, "B T _"], list[State], list[Any]]:
        """All layers, bottom to top, over a batch-first ``x`` ``(B, T, D)``.

        ``states[layer * num_directions + direction]`` is the initial state (a tuple of
        ``(B, H)`` tensors) of a layer and direction; returns the top layer's outputs
        ``(B, T, num_directions * H)``, the final states in the same order and the
        traces of the layer ``record`` (None elsewhere).

        Example:
            >>> from seqbook.recurrent import GRU
            >>> gru = GRU(3, 4, num_layers=2, bidirectional=True)
            >>> zeros = [(torch.zeros(2, 4),)] * 4
            >>> out, finals, _ = gru.run_layers(torch.randn(2, 5, 3), zeros)
            >>> tuple(out.shape), len(finals)
            ((2, 5, 8), 4)
        """
        h, finals, traces = x, [], []  # h^(0)_t = x_t
        for layer in range(self.num_layers):
            if layer > 0:  # between layers, not after the last; only in training
                h = F.dropout(h, p=self.dropout, training=self.training)
            first = layer * self.num_directions  # states of this layer: first, +1
            runs = [  # layer l reads the outputs of layer l - 1  (eq-deep-layer)
                self.run_direction(h, states[first + d], lengths, layer, d,
                                   record == layer)
                for d in range(self.num_directions)
            ]
            h = torch.cat([out for out, _, _ in runs], dim=-1)  # (eq-birnn-concat)
            finals += [final for _, final, _ in runs]
            traces += [trace for _, _, trace in runs]
        return h, finals, traces  # h: (B, T, num_directions H)

    def run_direction(
        self,
        h_below: Sequences,
        state: tuple[Float[Tensor, "B _"], ...],
        lengths: Lengths | None = None,
        layer: int = 0,
        direction: int = 0,
        record: bool = False,
    ) -> tuple[Float[Tensor, "B T _"], State, Any]:
        """One layer in one direction over the outputs ``(B, T, D_l)`` of the layer
        below: its outputs ``(B, T, H)``, its final state and, if ``record``, its trace.

        Example:
            >>> from seqbook.recurrent import RNN
            >>> rnn = RNN(3, 4, bidirectional=True)
            >>> x = torch.randn(2, 5, 3)
            >>> out, (h,), _ = rnn.run_direction(x, (torch.zeros(2, 4),), direction=1)
            >>> torch.equal(out, rnn(x)[0][..., 4:])
            True
        """
        if direction == 0:  # t = 1, ..., T  (eq-birnn-forward)
            return self._one_direction(h_below, state, lengths, layer, 0, record)
        # t = T_b, ..., 1 from each sequence's last real step  (eq-birnn-backward)
        backwards = self.reverse(h_below, lengths)  # (B, T, D_l)
        out, final, trace = self._one_direction(backwards, state, lengths, layer, 1,
                                                record)
        if trace is not None:  # back in the order of the inputs
            trace = _map_fields(trace, lambda v: self.reverse(v, lengths))
        return self.reverse(out, lengths), final, trace

    @staticmethod
    def reverse(
        x: Shaped[Tensor, "B T *rest"], lengths: Lengths | None = None
    ) -> Shaped[Tensor, "B T *rest"]:
        """Each sequence of ``x`` ``(B, T, .)`` reversed within its length.

        Step ``t < T_b`` of sequence ``b`` goes to ``T_b - 1 - t``; padding stays where
        it is. Applied twice, it is the identity.

        Example:
            >>> x = torch.arange(6.0).reshape(2, 3, 1)
            >>> RecurrentStack.reverse(x, torch.tensor([3, 2]))[..., 0]
            tensor([[2., 1., 0.],
                    [4., 3., 5.]])
        """
        if lengths is None:
            return x.flip(1)  # (B, T, .)
        B, T = x.shape[:2]
        t = torch.arange(T, device=x.device)  # (T,)
        T_b = lengths.to(x.device).unsqueeze(1)  # (B, 1)
        source = torch.where(t < T_b, T_b - 1 - t, t)  # (B, T)
        return x[torch.arange(B, device=x.device).unsqueeze(1), source]  # (B, T, .)

    def _one_direction(
        self, x: Tensor, state: State, lengths: Tensor | None, layer: int, direction: int,
        record: bool,
    ) -> tuple[Tensor, State, Any]:
        """The subclass's recurrence of one layer and direction, run over time."""
        x_parts, step = self.recurrence(x, layer, direction)  # (B, T, .): all t at once
        mask = padding_mask(lengths, x.shape[1], x.device)  # (B, T, 1) or None
        out, final, history = run_masked(step, x_parts, state, mask, record)
        return out, final, None if history is None else self._trace(out, history)

    # --- the checks of forward and trace, then the stack in torch's layout -------------

    def _check_x(self, x: Any, layout: str) -> None:
        """A (padded) input in the layout ``"B, T"`` or ``"T, B"``: the checks its type
        cannot make (T >= 1), and, for a PackedSequence, those it could not see."""
        check_tensor("x", x, floating=True)
        dims = f"({layout}, input_size)"
        if x.dim() != 3:
            raise ValueError(f"x must have 3 dimensions {dims}, got shape {tuple(x.shape)}")
        if x.shape[-1] != self.input_size:
            raise ValueError(f"x must have shape {dims} with input_size = {self.input_size} "
                             f"(the module's input_size), got {tuple(x.shape)}")
        if x.shape[1 if layout == "B, T" else 0] < 1:
            raise ValueError(f"x must have shape {dims} with T >= 1, got {tuple(x.shape)}")
        self._check_dtype_and_device("x", x)

    def _check_dtype_and_device(self, name: str, value: Tensor) -> None:
        like = self._like
        check_same_dtype(name, value, like.dtype, of="the module's parameters")
        if value.device != like.device:
            raise ValueError(f"{name} is on {value.device} but the module's parameters are on "
                             f"{like.device}")

    def _initial_states(self, state: Any, B: int) -> list[State]:
        """The initial state as one tuple of ``(B, H)`` tensors per layer and direction."""
        K = self.num_layers * self.num_directions
        if state is None:
            like = self._like
            parts = [like.new_zeros(K, B, size) for size in self._state_sizes()]  # (K, B, H)
        else:
            parts = self._state_parts(state, self._state_names, [
                ("K", K, "num_layers * num_directions"), ("B", B, "as in x")])
        return [tuple(part[k] for part in parts) for k in range(K)]

    def _state_parts(
        self, state: Any, names: tuple[str, ...], leading: list[tuple[str, int, str]]
    ) -> list[Tensor]:
        """The tensors of ``state`` (one, or an LSTM's pair of parts ``names``), each of
        shape ``(*leading, H)`` with the sizes ``leading`` gives (letter, size, why), in
        the parameters' dtype and on their device."""
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
            expected = [*leading, (H, size, f"the module's {H}")]
            check_tensor(label, part, floating=True)
            dims = "(" + ", ".join(letter for letter, _, _ in expected) + ")"
            if part.dim() != len(expected):
                raise ValueError(f"{label} must have {len(expected)} dimensions {dims}, got "
                                 f"shape {tuple(part.shape)}")
            for (letter, want, why), got in zip(expected, part.shape):
                if got != want:
                    raise ValueError(f"{label} must have shape {dims} with {letter} = {want} "
                                     f"({why}), got {tuple(part.shape)}")
            self._check_dtype_and_device(label, part)
        return parts

    def _final_state(self, finals: list[State]) -> Any:
        """Per-layer final states stacked as torch returns them, ``(K, B, H)`` each."""
        parts = tuple(torch.stack([f[i] for f in finals]) for i in range(len(finals[0])))
        return parts[0] if len(parts) == 1 else parts  # (K, B, H)

    def _run(self, x: Any, state: Any, lengths: Any, record: int | None = None) -> Any:
        """Check what the types cannot, run the layers, give the outputs torch's layout:
        the shared body of ``forward`` and ``trace``."""
        packed = x if isinstance(x, PackedSequence) else None
        if packed is not None:
            if lengths is not None:
                raise ValueError("lengths must be None when x is a PackedSequence (it has them)")
            x, lengths = pad_packed_sequence(packed, batch_first=True)  # (B, T, D)
        batch_first = self.batch_first or packed is not None
        self._check_x(x, "B, T" if batch_first else "T, B")
        x = x if batch_first else x.transpose(0, 1)  # (B, T, D)
        B, T, _ = x.shape
        if lengths is not None:
            _check_lengths(lengths, B, T)
        states = self._initial_states(state, B)
        out, finals, traces = self.run_layers(x, states, lengths, record)
        if packed is not None:
            return _repack(out, packed), self._final_state(finals), traces
        if not self.batch_first:
            out = out.transpose(0, 1)  # (T, B, num_directions * H)
        return out, self._final_state(finals), traces

    def _trace_of_layer(self, x: Any, state: Any, lengths: Any, layer: int) -> Any:
        """The trace of one layer, its directions side by side like its outputs."""
        check_int("layer", layer)
        if not -self.num_layers <= layer < self.num_layers:
            raise ValueError(f"layer must be in [-{self.num_layers}, {self.num_layers}) "
                             f"(num_layers={self.num_layers}), got {layer}")
        layer %= self.num_layers
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

    def _copy_all_from_torch(self, module: nn.RNNBase) -> RecurrentStack:
        """Copy every layer and direction of ``module``; same device, dtype, mode."""
        weight = next(module.parameters())  # weight_ih_l0
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


def _check_lengths(lengths: Tensor, B: int, T: int) -> None:
    """Lengths of padded sequences: one per sequence of x, each in [0, T]."""
    check_tensor("lengths", lengths, floating=False)
    if lengths.dim() != 1 or lengths.shape[0] != B:
        raise ValueError(f"lengths must have shape (B) with B = {B} (as in x), got "
                         f"{tuple(lengths.shape)}")
    if lengths.numel() and not torch.compiler.is_compiling():
        low, high = int(lengths.min()), int(lengths.max())
        if low < 0 or high > T:
            bound = "inf" if low < 0 else f"T = {T} (as in x)"
            raise ValueError(f"lengths must hold values in [0, {bound}], got values from "
                             f"{low} to {high}")


def _map_fields(trace: Any, fn: Callable[[Tensor], Tensor]) -> Any:
    """A trace dataclass with ``fn`` applied to each of its tensors (None stays None)."""
    return dataclasses.replace(trace, **{
        f.name: None if getattr(trace, f.name) is None else fn(getattr(trace, f.name))
        for f in dataclasses.fields(trace)
    })


def _repack(out: Tensor, like: PackedSequence) -> PackedSequence:
    """Padded batch-first outputs ``(B, T, .)`` packed like the input ``like``."""
    if like.sorted_indices is not None:
        out = out[like.sorted_indices.to(out.device)]  # (B, T, .) longest first
    data = torch.cat([out[:n, t] for t, n in enumerate(like.batch_sizes.tolist())])  # (N, .)
    return PackedSequence(data, like.batch_sizes, like.sorted_indices, like.unsorted_indices)
