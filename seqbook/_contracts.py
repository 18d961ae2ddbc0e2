"""Argument contracts written in the signature, checked once at the public boundary.

A public function says what each argument must be in its type hints::

    def beam_search(..., beam_size: PositiveInt, length_penalty: NonNegativeReal = 0.0,
                    generator: Generator = None) -> ...:

and that is all: when a module of the package has been imported, :func:`check_signatures`
(installed for the whole package by ``seqbook/__init__.py``, see
:mod:`seqbook._checked_imports`) wraps every function of the module's ``__all__`` whose
hints carry a contract, and the ``__init__``, ``forward`` and other public methods of
every class of ``__all__``, so that each call
first validates its arguments, defaults included, with the helpers of
:mod:`seqbook._checks` (same messages, same ``TypeError``/``ValueError``), then runs the
body with the values the helpers return (``check_real`` turns ``1`` into ``1.0``). The
body reads like the math; the kernels it calls trust their arguments; internal calls of
private functions are never re-checked.

A contract is ``Annotated[type, Check(helper, **options)]``: the helper is called as
``helper(name, value, **options)``. ``X | None`` lets ``None`` through unchecked.
Tensors name their dimensions, ``query: Shaped("B T_q d_model", floating=True)``, and a
name means one size throughout a call: an int argument, the module's attribute of that
name, or the size the first tensor that has it brings (see :class:`Dims`). Scalars are
checked first, then tensors in the order of the signature, then ints bounded by sizes
(``beam_size: IntIn(1, "vocab_size")``, ``d_model: MultipleOf("num_heads")``, see
:class:`Bounded`). What a signature cannot say
(a number that must divide another, ids below a size computed in the body) stays in the
body, after the signature's checks.
"""

from __future__ import annotations

import functools
import inspect
import types
import typing
from collections.abc import Callable
from typing import Annotated, Any

import torch

from seqbook._checks import (
    _describe,
    check_bool,
    check_callable,
    check_choice,
    check_device,
    check_float_dtype,
    check_generator,
    check_int,
    check_positive_int,
    check_probability,
    check_real,
    check_same_dtype,
    check_sequence,
    check_spins,
    check_tensor,
    check_token_ids,
    parameter_dtype,
)

__all__ = [
    "Check", "check_signatures", "Int", "PositiveInt", "NonNegativeInt", "IntAtLeast",
    "Real", "RealIn", "PositiveReal", "NonNegativeReal", "Probability", "Flag", "OneOf",
    "RandomGenerator", "Device", "CallableAs", "TensorOf", "Shaped", "Dims", "InstanceOf",
    "IntIn", "FiniteReal", "FloatDtype", "SequenceOf", "IndexInto", "MultipleOf", "Bounded",
    "OtherThan", "Items",
]


class Check:
    """The metadata of a contract: ``helper(name, value, **options)`` validates a value."""

    __slots__ = ("helper", "options")

    def __init__(self, helper: Callable[..., Any], /, **options: Any) -> None:
        self.helper, self.options = helper, options

    def __call__(self, name: str, value: Any) -> Any:
        return self.helper(name, value, **self.options)

    def __repr__(self) -> str:
        options = "".join(f", {k}={v!r}" for k, v in self.options.items())
        return f"Check({self.helper.__name__}{options})"


# the contracts the package uses; each is its type with the check that enforces it
Int = Annotated[int, Check(check_int)]
PositiveInt = Annotated[int, Check(check_positive_int)]
NonNegativeInt = Annotated[int, Check(check_int, min_value=0)]
Real = Annotated[float, Check(check_real)]
PositiveReal = Annotated[float, Check(check_real, min_value=0.0, strict_min=True)]
NonNegativeReal = Annotated[float, Check(check_real, min_value=0.0)]
Probability = Annotated[float, Check(check_probability)]  # a dropout rate, in [0, 1)
FiniteReal = Annotated[float, Check(check_real, finite=True)]
Flag = Annotated[bool, Check(check_bool)]
FloatDtype = Annotated[torch.dtype, Check(check_float_dtype)]
RandomGenerator = Annotated[typing.Optional[torch.Generator], Check(check_generator)]
Device = Annotated[typing.Union[torch.device, str, None], Check(check_device)]


def IntAtLeast(min_value: int | str) -> Any:
    """An int (not a bool) of at least ``min_value`` (a number, or a size's name, see
    :class:`Bounded`)."""
    if isinstance(min_value, str):
        return Annotated[int, Bounded(min_value=min_value)]
    return Annotated[int, Check(check_int, min_value=min_value)]


def IntIn(min_value: int | str, max_value: int | str) -> Any:
    """An int (not a bool) in ``[min_value, max_value]`` (numbers, or sizes' names, see
    :class:`Bounded`)."""
    if isinstance(min_value, str) or isinstance(max_value, str):
        return Annotated[int, Bounded(min_value=min_value, max_value=max_value)]
    return Annotated[int, Check(check_int, min_value=min_value, max_value=max_value)]


def IndexInto(*sizes: str, min_value: int = 0) -> Any:
    """An int in ``[min_value, size)``: an index into the size each of ``sizes`` names (a
    token id below ``vocab_size``, a neuron below ``dim``, a padding id below both
    vocabularies' sizes)."""
    return Annotated[int, Bounded(min_value=min_value, below=sizes)]


def OtherThan(other: str) -> Any:
    """An int different from the int argument ``other`` (an end token that is not the
    start token)."""
    return Annotated[int, Bounded(other_than=other)]


def MultipleOf(factor: int | str) -> Any:
    """A positive int that ``factor`` (a number, or a size's name) divides: ``d_model``
    of ``num_heads`` heads."""
    return Annotated[int, Bounded(min_value=1, multiple_of=factor)]


class Bounded(Check):
    """An int bounded by sizes of the call: a name stands for what it does in a shape
    (an int argument, the module's attribute, ``model.num_tokens``, or a size a tensor
    of the call brings), so these are checked after the call's tensors. A bound whose
    name stands for nothing in the call (an optional argument left out) is not checked.
    """

    __slots__ = ("bounds",)
    TESTS = {  # bound -> (fails, words)
        "min_value": (lambda v, b: v < b, ">="), "max_value": (lambda v, b: v > b, "<="),
        "below": (lambda v, b: v >= b, "<"), "multiple_of": (lambda v, b: v % b, "a multiple of"),
        "other_than": (lambda v, b: v == b, "different from"),
    }

    def __init__(self, **bounds: int | str | tuple[int | str, ...] | None) -> None:
        super().__init__(check_int)
        # [(kind, limit)]: a tuple of limits is several bounds of one kind (below two sizes)
        self.bounds = [(kind, limit) for kind, limits in bounds.items() if limits is not None
                       for limit in (limits if isinstance(limits, tuple) else (limits,))]

    def __repr__(self) -> str:
        return f"Bounded({', '.join(f'{k}={v!r}' for k, v in self.bounds)})"

    def check_in(self, name: str, value: Any, call: dict[str, Any], bound: dict[str, Any]) -> Any:
        value = check_int(name, value)
        for kind, limit in self.bounds:
            size = (limit, "") if isinstance(limit, int) else _size_of(limit, call, bound)
            if size is None:
                continue
            fails, words = self.TESTS[kind]
            if fails(value, size[0]):
                spelled = f"{limit} = {size[0]} ({size[1]})" if isinstance(limit, str) else limit
                raise ValueError(f"{name} must be {words} {spelled}, got {value}")
        return value


def RealIn(
    min_value: float | None = None, max_value: float | None = None, *, strict_min: bool = False,
    strict_max: bool = False,
) -> Any:
    """A real number (not NaN, not a bool) in the given range (``strict_*``: the bound
    excluded); returned as a float."""
    return Annotated[float, Check(check_real, min_value=min_value, max_value=max_value,
                                  strict_min=strict_min, strict_max=strict_max)]


def OneOf(*choices: Any) -> Any:
    """One of ``choices``."""
    return Annotated[Any, Check(check_choice, choices=choices)]


def SequenceOf(
    what: str, *, non_empty: bool = False, iterable: bool = False,
    of: type | tuple[type, ...] | None = None, size: str | None = None, tensor: bool = False,
) -> Any:
    """A sequence (a list, a tuple; ``iterable=True``: any iterable) that is not a str,
    bytes or tensor; ``what`` describes it in the message ("a list of token lists").
    ``of``: the type(s) of every item; ``size``: its length, a named size of the call
    (``"B"``, bound by the call's tensors or another sequence, see :class:`Dims`);
    ``tensor``: a tensor counts as a sequence (of its rows)."""
    if size is not None:
        return Annotated[Any, Items(what, non_empty=non_empty, iterable=iterable, of=of,
                                    size=size, tensor=tensor)]
    return Annotated[Any, Check(check_sequence, what=what, non_empty=non_empty,
                                iterable=iterable, of=of, tensor=tensor)]


class Items(Check):
    """A sequence whose length is a named size of the call (see :func:`SequenceOf`)."""

    __slots__ = ("size",)

    def __init__(self, what: str, *, size: str, **options: Any) -> None:
        super().__init__(check_sequence, what=what, **options)
        self.size = size

    def check_in(self, name: str, value: Any, call: dict[str, Any], bound: dict[str, Any]) -> Any:
        value = check_sequence(name, value, **self.options)
        expected = _size_of(self.size, call, bound)
        if expected is None:
            bound[self.size] = (len(value), f"as in {name}")
        elif expected[0] != len(value):
            raise ValueError(f"{name} must hold {self.size} = {expected[0]} items "
                             f"({expected[1]}), got {len(value)}")
        return value


def CallableAs(signature: str = "", nargs: int | None = None) -> Any:
    """A callable, used as ``signature`` with ``nargs`` positional arguments."""
    return Annotated[Callable[..., Any], Check(check_callable, signature=signature,
                                               nargs=nargs)]


def TensorOf(
    ndim: int | tuple[int, ...] | None = None, *, floating: bool | None = None,
    shape: tuple[int | str | None, ...] | None = None,
) -> Any:
    """A tensor of the given rank(s), shape and kind of dtype (see ``check_tensor``)."""
    return Annotated[torch.Tensor, Check(check_tensor, ndim=ndim, floating=floating,
                                         shape=shape)]


class Dims(Check):
    """A tensor contract with named dimensions, checked against the other arguments.

    ``dims`` spells the shape, e.g. ``"B T input_size"`` or ``"... T_q d_k"``: an
    integer is a fixed size, ``*`` any size, a leading ``...`` any leading dimensions,
    and a name stands for one size throughout the call. A name is, in this order, an int
    argument of the call (``input_size``), an int attribute of the module the method
    belongs to (``self.d_model``), or bound by the first tensor that has it, which every
    later tensor of the call must then match (``T_k`` of ``key`` and ``value``).
    """

    __slots__ = ("dims", "fixed", "leading", "spec", "floating", "dtype", "dtype_of",
                 "device_of", "ids", "finite", "value_range", "sizes", "spins", "trailing")

    def __init__(
        self, dims: str, *, floating: bool | None = None, dtype: torch.dtype | None = None,
        dtype_of: str | None = None, device_of: str | None = None, ids: str | None = None,
        finite: bool = False, min_value: float | str | None = None,
        max_value: float | str | None = None, below: int | str | None = None,
        min_size: dict[str, int | str] | None = None, max_size: dict[str, int | str] | None = None,
        multiple_of: dict[str, int | str] | None = None, spins: bool = False,
    ) -> None:
        super().__init__(check_tensor, floating=floating)
        self.dims, self.spec = dims.split(), ", ".join(dims.split())
        # any leading dimensions: "..." (unnamed) or "*batch" (the same in every tensor)
        self.leading = self.dims[0] if self.dims and self.dims[0][0] in ".*" else None
        self.fixed = self.dims[1:] if self.leading else self.dims
        self.trailing = self.fixed[-1:] == ["..."]  # "B T ...": any trailing dimensions
        self.fixed = self.fixed[:-1] if self.trailing else self.fixed
        self.floating, self.dtype, self.ids = floating, dtype, ids
        self.dtype_of, self.device_of = dtype_of, device_of
        self.finite, self.value_range, self.spins = finite, (min_value, max_value, below), spins
        # [(position, symbol, ">=" or "<=", limit)]: a dimension's least or greatest size
        self.sizes = [(self.fixed.index(d), d, op, k) for op, limits in
                      ((">=", min_size), ("<=", max_size), ("a multiple of", multiple_of))
                      for d, k in (limits or {}).items()]

    def __repr__(self) -> str:
        return f"Dims({' '.join(self.dims)!r})"

    def check_in(self, name: str, value: Any, call: dict[str, Any], bound: dict[str, Any]) -> Any:
        """Check ``value`` within a call (its ``arguments``) whose named sizes so far are
        ``bound`` (``{name: (size, where it comes from)}``); bind the new ones."""
        if not isinstance(value, torch.Tensor) or self.floating is False or (
            self.floating and not value.is_floating_point()
        ):
            check_tensor(name, value, floating=self.floating)  # raises, or integer ids
        shape, fixed = tuple(value.shape), self.fixed
        if len(shape) != len(fixed) and not (
                (self.leading or self.trailing) and len(shape) >= len(fixed)):
            at_least = "at least " if self.leading or self.trailing else ""
            raise ValueError(f"{name} must have {at_least}{len(fixed)} dimensions "
                             f"({self.spec}), got shape {shape}")
        lead = () if self.trailing else shape[:len(shape) - len(fixed)]
        symbols = ((self.leading, lead),) if self.leading not in (None, "...") else ()
        for symbol, size in (*symbols, *zip(fixed, shape[len(lead):])):
            expected = _size_of(symbol, call, bound)
            if expected is None:
                if symbol != "*":
                    bound[symbol] = (size, f"as in {name}")
            elif expected[0] != size:
                where = f" with {symbol} = {expected[0]} ({expected[1]})" if expected[1] else ""
                raise ValueError(f"{name} must have shape ({self.spec}){where}, got {shape}")
        for i, symbol, op, limit in self.sizes:
            size = shape[len(lead) + i]
            limit, spelled = _limit(limit, call, bound)
            fails = {">=": size < (limit or 0), "<=": size > (limit or 0),
                     "a multiple of": limit and size % limit}[op]
            if limit is not None and fails:
                raise ValueError(f"{name} must have shape ({self.spec}) with {symbol} {op} "
                                 f"{spelled}, got {shape}")
        if self.dtype is not None and value.dtype != self.dtype:
            raise TypeError(f"{name} must have dtype {self.dtype}, got {value.dtype}")
        if self.dtype_of is not None:
            _check_dtype_like(name, value, self.dtype_of, call)
        if self.device_of is not None:
            _check_device_like(name, value, self.device_of, call)
        vocab = None if self.ids is None else _size_of(self.ids, call, bound)
        if vocab is not None:  # None: the owner of the size is not what it should be
            check_token_ids(name, value, vocab[0], of=vocab[1] or self.ids)
        if self.finite and not torch.isfinite(value).all():
            raise ValueError(f"{name} must be finite (no NaN or inf)")
        (low, low_spelled), (high, high_spelled), (end, end_spelled) = (
            _limit(v, call, bound) for v in self.value_range)
        if value.numel() and (low is not None and value.min() < low
                              or high is not None and value.max() > high
                              or end is not None and value.max() >= end):
            interval = f"[{'-inf' if low is None else low_spelled}, " + (
                f"{end_spelled})" if end is not None else
                f"{'inf' if high is None else high_spelled}]")
            raise ValueError(f"{name} must hold values in {interval}, got values from "
                             f"{value.min().item():g} to {value.max().item():g}")
        if self.spins:
            check_spins(name, value)
        return value


def _limit(limit: float | str | None, call: dict[str, Any],
           bound: dict[str, Any]) -> tuple[float | None, str]:
    """A bound given as a number or as a size's name, and how the message spells it."""
    if not isinstance(limit, str):
        return limit, str(limit)
    size = _size_of(limit, call, bound)
    return (None, "") if size is None else (size[0], f"{limit} = {size[0]} ({size[1]})")


def _size_of(symbol: str, call: dict[str, Any], bound: dict[str, Any]) -> tuple[int, str] | None:
    """The size a dimension's symbol stands for in a call, and where it comes from."""
    if symbol in bound:
        return bound[symbol]
    if symbol.isdigit():
        return int(symbol), ""
    if symbol == "*":
        return None
    if "." in symbol:  # an attribute of another argument: model.num_tokens
        owner, attribute = symbol.split(".", 1)
        value = getattr(call.get(owner), attribute, None)
        return (value, f"{symbol} of the argument {owner}") if isinstance(value, int) else None
    value = call.get(symbol)
    if isinstance(value, int) and not isinstance(value, bool):
        return value, f"the argument {symbol}"
    owner = call.get("self")
    # an instance attribute, or a class attribute or property (not nn.Module.__getattr__'s
    # slow search of parameters and submodules for a name that is not there)
    value = getattr(owner, "__dict__", {}).get(symbol)
    if value is None and hasattr(type(owner), symbol):
        value = getattr(owner, symbol)
    if isinstance(value, int) and not isinstance(value, bool):
        bound[symbol] = (value, f"the module's {symbol}")  # look it up once per call
        return bound[symbol]
    return None


def _check_dtype_like(name: str, value: torch.Tensor, other: str, call: dict[str, Any]) -> None:
    """``value`` has the dtype of the module's parameters (``other="module"``), of the
    argument ``other``, or of its parameters if it is a module."""
    # "module": the method's own module, or a function's argument named module
    owner = call["self"] if other == "module" and "self" in call else call.get(other)
    of = other
    if "." in other:  # an attribute of an argument: "cache.dtype", "self.patterns"
        first, attribute = other.split(".", 1)
        owner = getattr(call.get(first), attribute, None)
        of = f"the module's {attribute}" if first == "self" else other
    if isinstance(owner, torch.dtype):
        check_same_dtype(name, value, owner, of=of)
    elif isinstance(owner, torch.Tensor):
        check_same_dtype(name, value, owner.dtype, of=of)
    elif isinstance(owner, torch.nn.Module):
        dtype = parameter_dtype(owner)
        of = "the module's parameters" if other == "module" else f"the parameters of {other}"
        if dtype is not None:
            check_same_dtype(name, value, dtype, of=of)


def _check_device_like(name: str, value: torch.Tensor, other: str, call: dict[str, Any]) -> None:
    """``value`` is on the device of the module's parameters (``other="module"``) or of
    the argument ``other``."""
    # "module": the method's own module, or a function's argument named module
    owner = call["self"] if other == "module" and "self" in call else call.get(other)
    if isinstance(owner, torch.nn.Module):
        device = next((p.device for p in owner.parameters()), None)
        of = "the module's parameters" if other == "module" else f"the parameters of {other}"
    else:
        device, of = getattr(owner, "device", None), other
    if device is not None and value.device != device:
        raise ValueError(f"{name} is on {value.device} but {of} are on {device}; move one to "
                         f"the other (e.g. {name}.to({str(device)!r}))")


def Shaped(dims: str, **options: Any) -> Any:
    """A tensor with named dimensions (see :class:`Dims`; ``model.num_tokens`` names an
    attribute of the argument ``model``). Options:

    - ``floating``: a floating (True) or integer (False) dtype; ``dtype``: exactly that
      dtype (``torch.bool``);
    - ``dtype_of``, ``device_of``: the dtype and device of the module's parameters
      (``"module"``) or of another argument (a tensor, or a module's parameters);
    - ``ids``: token ids below the size that name stands for (``"vocab_size"``);
    - ``finite``: no NaN or inf; ``min_value``, ``max_value``: every entry in that range
      (a number, or a size's name: lengths at most ``"T"``), ``below``: every entry less
      than it (indices below ``"d"``); ``spins``: every entry -1 or +1;
    - ``min_size``, ``max_size``, ``multiple_of``: the least or greatest size of named
      dimensions, or what divides it (a number, or a size's name): ``{"N": 2}``,
      ``{"T": "max_len"}``, ``{"H": "patch_size"}``.
    """
    return Annotated[torch.Tensor, Dims(dims, **options)]


def _instance_of(name: str, value: Any, *, classes: tuple[type, ...], what: str) -> Any:
    if not isinstance(value, classes):
        raise TypeError(f"{name} must be {what}, got {_describe(value)}")
    return value


def InstanceOf(*classes: type, what: str = "") -> Any:
    """An instance of one of ``classes``; ``what`` describes it in the message (default:
    "a " and the class names)."""
    what = what or "a " + " or ".join(c.__name__ for c in classes)
    return Annotated[classes[0], Check(_instance_of, classes=classes, what=what)]


def _contract(hint: Any) -> tuple[Check, bool] | None:
    """The check of a hint and whether ``None`` passes, or None if it carries no check."""
    optional = False
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        optional = type(None) in members
        rest = [m for m in members if m is not type(None)]
        if len(rest) != 1:
            return None
        hint = rest[0]
    if typing.get_origin(hint) is not Annotated:
        return None
    checks = [m for m in hint.__metadata__ if isinstance(m, Check)]
    return (checks[0], optional) if checks else None


def _hints(function: Callable[..., Any]) -> dict[str, Any]:
    """A function's hints, evaluated in its module (a misspelt contract fails here, at
    import, instead of silently checking nothing)."""
    namespace = inspect.unwrap(function).__globals__  # past decorators such as no_grad
    return {name: eval(hint, namespace) if isinstance(hint, str) else hint  # noqa: S307
            for name, hint in function.__annotations__.items()}


def _contracts_of(hints: dict[str, Any]) -> dict[str, tuple[Check, bool]]:
    """``{parameter: (check, None passes)}`` from a function's evaluated hints."""
    contracts = {}
    for name, hint in hints.items():
        contract = None if name == "return" else _contract(hint)
        if contract is not None:
            contracts[name] = contract
    return contracts


# checked within a call, against its other arguments: tensors (which bind sizes), then
# the ints that sizes bound; every other contract is checked first, on its own
IN_CALL = (Dims, Items, Bounded)


def _order(check: Check) -> int:
    return 2 if isinstance(check, Bounded) else 1 if isinstance(check, (Dims, Items)) else 0


def _checked(function: Callable[..., Any]) -> Callable[..., Any]:
    """``function`` with its arguments validated by the contracts of its hints: scalars
    first, then tensors in the order of the signature (which binds their sizes), then
    the ints bounded by sizes.

    The wrapper reads the arguments straight from ``args`` and ``kwargs`` (binding a
    signature per call would cost more than the checks). Defaults are checked once,
    here; a default a check converts (``1`` to ``1.0``) is passed on converted."""
    hints = _hints(function)
    contracts = _contracts_of(hints)
    if not contracts:
        return function
    signature = inspect.signature(function)
    parameters = signature.parameters
    kinds = {p.kind for p in parameters.values()}
    extra_args, extra_kwargs = (inspect.Parameter.VAR_POSITIONAL in kinds,
                                inspect.Parameter.VAR_KEYWORD in kinds)  # passed on unchecked
    positions = {name: i for i, (name, p) in enumerate(parameters.items())
                 if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)}
    defaults = {name: p.default for name, p in parameters.items() if p.default is not p.empty}
    converted = {}  # defaults that a check converts, passed on explicitly
    for name, (check, optional) in contracts.items():
        default = defaults.get(name, None)
        checked_once = not isinstance(check, IN_CALL) and not (optional and default is None)
        if name in defaults and checked_once:
            value = check(name, default)
            if value is not default:
                converted[name] = value
    plan = [(name, positions.get(name, len(parameters)), *contracts[name])
            for name in sorted(contracts, key=lambda n: _order(contracts[n][0]))]
    needs_call = any(isinstance(check, IN_CALL) for _, _, check, _ in plan)

    @functools.wraps(function)
    def checked(*args: Any, **kwargs: Any) -> Any:
        if (len(args) > len(positions) and not extra_args) or (
            not extra_kwargs and not kwargs.keys() <= parameters.keys()
        ):
            signature.bind(*args, **kwargs)  # raises Python's own TypeError
        call = {**defaults, **dict(zip(positions, args)), **kwargs} if needs_call else None
        sizes: dict[str, Any] = {}
        for name, position, check, optional in plan:
            if position < len(args):
                value = args[position]
            elif name in kwargs:
                value = kwargs[name]
            elif name in defaults and not isinstance(check, IN_CALL):
                continue  # checked once, above
            else:
                value = defaults.get(name)  # a tensor's default; missing: Python raises
            if optional and value is None:
                continue
            new = (check.check_in(name, value, call, sizes) if isinstance(check, IN_CALL)
                   else check(name, value))
            if new is not value:  # pass on what the check returns (1 -> 1.0)
                if position < len(args):
                    args = args[:position] + (new,) + args[position + 1:]
                else:
                    kwargs[name] = new
                if call is not None:
                    call[name] = new
        for name, value in converted.items():
            if name not in kwargs and positions.get(name, len(parameters)) >= len(args):
                kwargs[name] = value
        return function(*args, **kwargs)

    # evaluated here, where the module's names are known (typing.get_type_hints and
    # Sphinx would look them up in this module's globals)
    checked.__annotations__ = hints
    checked.__contracts__ = contracts  # type: ignore[attr-defined]
    return checked


def _public_methods(cls: type) -> list[str]:
    return [name for name, member in vars(cls).items()
            if (not name.startswith("_") or name in ("__init__", "__call__"))
            and isinstance(member, (types.FunctionType, staticmethod, classmethod))]


def check_signatures(namespace: dict[str, Any]) -> None:
    """Wrap the public functions and methods of a module (its ``globals()``) so that
    they check their arguments against the contracts in their hints."""
    module = namespace["__name__"]
    for name in namespace.get("__all__", ()):
        obj = namespace.get(name)
        if getattr(obj, "__module__", None) != module:
            continue  # re-exported: wrapped where it is defined
        if isinstance(obj, types.FunctionType):
            namespace[name] = _checked(obj)
        elif isinstance(obj, type):
            for method in _public_methods(obj):
                member = vars(obj)[method]
                if isinstance(member, (staticmethod, classmethod)):
                    setattr(obj, method, type(member)(_checked(member.__func__)))
                else:
                    setattr(obj, method, _checked(member))


def contracts_of(obj: Any) -> dict[str, tuple[Check, bool]]:
    """The contracts a wrapped function checks (empty if it checks none): for tests."""
    return dict(getattr(obj, "__contracts__", {}))
