"""Shapes as types: the package's public calls are checked by jaxtyping and beartype.

Public functions and methods annotate their tensors with jaxtyping
(``x: Float[Tensor, "B T {self.d_model}"]``: names bind sizes across the arguments of
one call, ``{...}`` reads a size from an argument such as ``self``); beartype checks the
annotations and raises a ``TypeError`` that names the parameter, the value's dtype and
shape, and the type expected. The package's ``__init__`` installs one import hook, so
that every ``seqbook.*`` module, once run, has the functions of its ``__all__`` and the
public methods of its public classes wrapped by :func:`typechecked`
(:func:`typecheck_namespace`). A ``check_*`` function or method is left as it is: it
checks, as part of its caller's check, what a type cannot say (ids below a vocabulary
size, spins in {-1, +1}), as PyTorch's ``RNNBase.check_forward_args`` does.

Two measures keep the check within a few microseconds of a call (a full jaxtyping and
beartype check costs 10-100 us, more than a small model's forward):

* only the outermost checked call is checked: a model's submodules and helpers, called
  from a checked call, run as they are (their inputs are the model's own work);
* a call whose arguments match one that passed before (same tensor shapes and dtypes,
  same scalar types, and values where a check reads them, on the same instance) is not
  checked again.

Under ``torch.compile`` nothing is checked, so no check breaks a graph (value checks
that read a tensor's contents skip themselves there too: :mod:`seqbook._checks`).
:func:`unchecked` turns the checks off, to measure what they cost.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import weakref
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import torch
from torch import Tensor, nn

__all__ = ["typechecked", "typecheck_namespace", "unchecked"]

F = TypeVar("F", bound=Callable[..., Any])

# A checked call is running. One flag for the process, not one per thread: a thread-local
# costs a tenth of a microsecond more per call. With threads, a call made while another
# thread is inside a checked call runs unchecked, and inner calls may be checked after
# the other thread's call returns: checks lost or repeated, never a wrong one.
_inside = False
# Scalars whose value, with their type, decides a check (bool is not int here). An int
# does where an annotation reads an argument's value as a size ("{num_heads}"), a str
# where a parameter is a device (checked by name), either where an annotation is a
# Literal; otherwise an int, a float or a str is checked by its type alone, and a call's
# key keeps only that (a loop over thousands of words or numbers is then checked once).
_VALUE_TYPES = frozenset({type(None), bool, torch.dtype, torch.device})
_SCALAR_TYPES = frozenset({int, float, str})
_LIST_ITEMS = 64  # a longer list is checked in full (beartype checks each item)
_SEEN_LIMIT = 64  # passed calls remembered per function and instance
# True while dynamo traces (a constant there), False otherwise: a third of the cost of
# torch.compiler.is_compiling, on every call.
_is_compiling = torch.compiler.is_dynamo_compiling


def _add_key(value: Any, add: Callable[[Any], None], by_value: frozenset) -> bool:
    """Add what the check of one argument depends on, two hashable items: a tensor's
    shape and dtype (and its class, if not a plain tensor), a scalar's type and, if its
    type is in ``by_value``, its value, a generator's type, the items of a tuple or a
    short list so (an LSTM's state ``(h, c)``, a batch, a list of tokens). False if the
    argument is anything else (a long list, a module, a function: such a call is checked
    in full). Two items per argument, the first a size, a type or a name, so that two
    different calls never share a key."""
    kind = value.__class__
    if kind is Tensor:
        add(value.shape)
        add(value.dtype)
    elif kind in by_value:
        add(kind)
        add(value)
    elif kind in _SCALAR_TYPES:
        add(kind)
        add(None)
    elif isinstance(value, Tensor):  # a Parameter or another subclass
        add(kind)
        add((value.shape, value.dtype))
    elif kind is torch.Generator:  # checked by its type alone
        add(kind)
        add(None)
    elif isinstance(value, tuple) or (kind is list and len(value) <= _LIST_ITEMS):
        inner: list = []
        if not all(_add_key(item, inner.append, by_value) for item in value):
            return False
        add(kind)
        add(tuple(inner))
    else:
        return False
    return True


def _keywords_key(kwargs: dict, by_value: frozenset) -> list | None:
    """:func:`_add_key` for every keyword argument, its name first; None if one is of a
    kind that is always checked in full."""
    parts: list = []
    for name, value in kwargs.items():
        parts.append(name)
        if not _add_key(value, parts.append, by_value):
            return None
    return parts


def _keyed_by_value(fn: Callable[..., Any]) -> frozenset:
    """The scalar types whose values a call's key keeps for ``fn`` (see _VALUE_TYPES)."""
    annotations = [str(a) for a in getattr(fn, "__annotations__", {}).values()]
    literal = any("Literal" in a or "Annotated" in a for a in annotations)
    kinds = set(_VALUE_TYPES)
    if literal or any("{" in a for a in annotations):
        kinds.add(int)
    code = fn.__code__  # its parameters' names, without the cost of a signature
    if literal or "device" in code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]:
        kinds.add(str)
    if literal:
        kinds.add(float)
    return frozenset(kinds)


def _calls_of(owner: Any) -> dict | None:
    """The passed calls remembered for an instance (or a class), kept as long as it
    lives: a module keeps them in its ``__dict__``, other objects in a table of weak
    references (its sizes are its own; a new object never inherits another's)."""
    entry = _instance_calls.get(id(owner))
    if entry is not None and entry[0]() is owner:
        return entry[1]
    key = id(owner)

    def forget(_: object) -> None:  # the owner is gone: so is what it passed
        _instance_calls.pop(key, None)

    try:
        ref = weakref.ref(owner, forget)
    except TypeError:  # no weak references (slots, builtins): nothing remembered
        return None
    seen: dict = {}
    _instance_calls[id(owner)] = (ref, seen)
    return seen


_instance_calls: dict[int, tuple[weakref.ref, dict]] = {}


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Run the block with the checks off (to measure what they cost)."""
    global _inside
    before, _inside = _inside, True
    try:
        yield
    finally:
        _inside = before


def typechecked(fn: F, *, method: bool | None = None) -> F:
    """``fn`` with its annotations checked by jaxtyping and beartype, at the outermost
    call only, and once per kind of call (see the module's docstring). ``method``: its
    first argument is an instance or a class (default: guessed from its qualified name;
    a staticmethod must say False)."""
    checker: Callable[..., Any] | None = None
    seen_here: dict = {}
    is_method = (("." in fn.__qualname__ and "<locals>" not in fn.__qualname__)
                 if method is None else method)
    # a constructor runs once per instance (nothing to remember), before its parameters
    is_init = fn.__name__ == "__init__"
    store_name = "_typechecked_" + fn.__qualname__
    by_value = _keyed_by_value(fn)
    parameters: Any = None  # fn's, once it is first checked

    def check_in_full(args: tuple, kwargs: dict, key: tuple | None, seen: dict | None) -> Any:
        nonlocal checker, parameters
        global _inside
        _inside = True
        try:
            if checker is None:
                checker = _jaxtyped(fn)
                parameters = inspect.signature(fn).parameters
            if not is_init:
                _check_dtypes(parameters, args, kwargs, is_method)
            _check_devices(parameters, args, kwargs)
            try:
                result = checker(*args, **kwargs)
            except TypeError as error:
                if type(error).__name__ != "TypeCheckError":
                    raise  # the body's own
                raise type(error)(_summary(error, fn, args, kwargs)) from error.__cause__
            if seen is not None and len(seen) < _SEEN_LIMIT:
                seen[key] = True
            return result
        finally:
            _inside = False

    # The fast path, taken by every call after the first of its kind: the key, one
    # lookup, and the flag that lets inner calls run bare (about a microsecond). It is
    # written out for the common call, tensors and scalars given by position: in a
    # model's call the interpreter meets it cold, and every function call, slice and
    # branch it saves is a tenth of a microsecond or so.
    def remembered(args: tuple) -> dict | None:
        """The passed calls of this method, on this instance."""
        if isinstance(owner := args[0], nn.Module):  # an instance's sizes are its own
            seen = owner.__dict__.get(store_name)
            if seen is None:
                seen = owner.__dict__[store_name] = {}
            return seen
        calls = _calls_of(owner)
        return None if calls is None else calls.setdefault(store_name, {})

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        global _inside
        if _inside or _is_compiling():
            return fn(*args, **kwargs)
        if is_init or (is_method and not args):  # nothing to remember
            return check_in_full(args, kwargs, None, None)
        parts: list = []
        add = parts.append
        for value in args[1:] if is_method else args:  # _add_key's common cases, inline
            kind = value.__class__
            if kind is Tensor:
                add(value.shape)
                add(value.dtype)
            elif kind in by_value:
                add(kind)
                add(value)
            elif kind in _SCALAR_TYPES:
                add(kind)
                add(None)
            elif not _add_key(value, add, by_value):
                return check_in_full(args, kwargs, None, None)
        if kwargs:
            extra = _keywords_key(kwargs, by_value)
            if extra is None:
                return check_in_full(args, kwargs, None, None)
            parts += extra
        key = tuple(parts)
        seen = remembered(args) if is_method else seen_here
        if seen is None or key not in seen:
            return check_in_full(args, kwargs, key, seen)
        _inside = True
        try:
            return fn(*args, **kwargs)
        finally:
            _inside = False

    wrapper.__wrapped_by_typecheck__ = True  # type: ignore[attr-defined]
    wrapper.__passed_calls__ = seen_here  # type: ignore[attr-defined]  # (a method: unused)
    return wrapper  # type: ignore[return-value]


def _check_devices(parameters: Any, args: tuple, kwargs: dict) -> None:
    """An argument named ``device`` given as a str names a device torch knows (a type
    says only "str"; torch would fail later, deep inside, with a RuntimeError).
    ``parameters``: the function's, from its signature."""
    if "device" not in parameters:
        return
    for name, value in [*zip(parameters, args), *kwargs.items()]:
        if name == "device" and isinstance(value, str):
            try:
                torch.device(value)
            except RuntimeError:
                raise ValueError(f"device must name a device such as 'cpu' or 'cuda', got "
                                 f"{value!r}") from None


def _check_dtypes(parameters: Any, args: tuple, kwargs: dict, is_method: bool) -> None:
    """The floating-point tensors of one call share one dtype, and a module's method
    takes that of the module's parameters (torch would fail deep inside, with "expected
    both tensors to have the same dtype", or silently promote). ``parameters``: the
    function's, from its signature."""
    names = list(parameters)
    # the named arguments: what **kwargs gathers is passed on, not this function's own
    given = [(n, v) for n, v in [*zip(names, args), *kwargs.items()]
             if n in parameters and parameters[n].kind not in (inspect.Parameter.VAR_KEYWORD,
                                                               inspect.Parameter.VAR_POSITIONAL)]
    floats = [(name, value.dtype) for name, value in given
              if isinstance(value, Tensor) and value.is_floating_point()]
    module = args[0] if is_method and args and isinstance(args[0], nn.Module) else None
    parameter = None if module is None else next(module.parameters(), None)
    if parameter is not None and parameter.is_floating_point():
        for name, dtype in floats:
            if dtype != parameter.dtype:
                raise TypeError(f"{name} must have the dtype of the module's parameters "
                                f"({parameter.dtype}), got {dtype}")
    for name, dtype in floats[1:]:
        if dtype != floats[0][1]:
            raise TypeError(f"{name} has dtype {dtype} but {floats[0][0]} has dtype "
                            f"{floats[0][1]}: the floating-point tensors of one call must "
                            "share one dtype")


def _summary(error: Exception, fn: Callable[..., Any], args: tuple, kwargs: dict) -> str:
    """jaxtyping's message with one line first that says what was wrong: the argument,
    what it was, what was expected, beartype's reason (a size that disagrees), and the
    sizes the arguments checked before it had bound (a size that disagrees may be the
    earlier argument's fault)."""
    import re

    text = str(error)
    causes: list[str] = []  # jaxtyping's errors chain to beartype's, which gives the reason
    cause, missing = error.__cause__, ""
    while cause is not None and len(causes) < 5:
        causes.append(str(cause))
        if isinstance(cause, AttributeError):  # a size read from a renamed attribute
            missing = f" (a size in the annotation cannot be read: {cause})"
        cause = cause.__cause__ or cause.__context__
    name = re.search(r"typechecking parameter '(\w+)'|(the return value)", text)
    got = re.search(r"Actual value: (.*)", text)
    expected = re.search(r"Expected type: (.*?)\.?$", text, re.M)
    reason = re.search(r"violates type hint .*?, as ([^\n]*?)(?:\.\s|\.?$)", "\n".join(causes),
                       re.M)
    if not (name and got and expected):
        # jaxtyping's second look passed (beartype checks one item of a list, drawn at
        # random): beartype's own first look names the parameter
        named = re.search(r"parameter (\w+)=(.*?) violates type hint (.*?), as (.*?)\.?$",
                          "\n".join(causes), re.S)
        if named is None:
            return text
        argument, value, hint, why = (" ".join(g.split()) for g in named.groups())
        return f"{argument} must be {hint}, got {value[:80]}: {why}\n{text}"
    hint = re.sub(r"<class '(.*)'>", r"\1", expected.group(1)).replace("jaxtyping.", "")
    first = (f"{name.group(1) or name.group(2)} must be {hint}, got {got.group(1)}"
             f"{missing}")
    # beartype's reason, unless it only lists a union's members
    if reason and not reason.group(1).startswith("<protocol"):
        first += f": {' '.join(reason.group(1).split())}"
    sizes = [line.strip() for line in
             text.partition("annotation are as follows.")[2].splitlines() if line.strip()]
    if sizes:
        names = list(inspect.signature(fn).parameters)
        given = dict(zip(names, args)) | kwargs
        failed = name.group(1)
        before = [n for n in names[: names.index(failed)] if isinstance(given.get(n), Tensor)
                  ] if failed in names else []
        bound_by = f", bound by {', '.join(before)}" if before else ""
        first += f" (sizes so far: {', '.join(sizes)}{bound_by})"
    return first + "\n" + text


def _jaxtyped(fn: Callable[..., Any]) -> Callable[..., Any]:
    from beartype import BeartypeConf, BeartypeStrategy, beartype
    from jaxtyping import jaxtyped

    # is_pep484_tower: an int is a float, as Python's numbers go; strategy On: every item
    # of a list is checked (beartype's default checks one drawn at random)
    conf = BeartypeConf(is_pep484_tower=True, strategy=BeartypeStrategy.On)
    return jaxtyped(typechecker=beartype(conf=conf))(fn)


def _public_methods(cls: type) -> dict[str, Any]:
    # a check_* method checks what a type cannot say, as part of its caller's check: it
    # is not itself a call to check (nor an inner call that would skip value checks)
    names = {"__init__", "__call__"} | {n for n in vars(cls)
                                        if not n.startswith("_") and not n.startswith("check")}
    return {n: vars(cls)[n] for n in names if n in vars(cls)}


def _annotated(fn: Any) -> bool:
    """Has hints, and is not already wrapped (here or by another decorator)."""
    return bool(getattr(fn, "__annotations__", None)) and not hasattr(fn, "__wrapped__")


def typecheck_namespace(namespace: dict[str, Any]) -> None:
    """Wrap the public functions and public classes' methods of a module."""
    for name in namespace.get("__all__", ()):
        obj = namespace.get(name)
        if name.startswith("check"):
            continue  # see _public_methods
        if inspect.isfunction(obj) and _annotated(obj) and obj.__module__ == namespace["__name__"]:
            namespace[name] = typechecked(obj, method=False)
        elif inspect.isclass(obj) and obj.__module__ == namespace["__name__"]:
            for attr, member in _public_methods(obj).items():
                if isinstance(member, (classmethod, staticmethod)):
                    inner = member.__func__
                    if _annotated(inner):
                        bound = isinstance(member, classmethod)
                        setattr(obj, attr, type(member)(typechecked(inner, method=bound)))
                elif inspect.isfunction(member) and _annotated(member):
                    setattr(obj, attr, typechecked(member, method=True))
