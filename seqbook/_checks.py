"""Argument validation shared by the whole package.

Every public function checks its input with these helpers so that bad input fails at
the call site with a message naming the argument, what was expected and what was given,
instead of a silent broadcast or a shape error deep inside torch.
"""

from __future__ import annotations

import inspect
import numbers
from collections.abc import Collection, Iterable, Sequence, Sized
from typing import Any

import torch


def _describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"a tensor of shape {tuple(value.shape)} and dtype {value.dtype}"
    return f"{value!r} ({type(value).__name__})"


def check_int(
    name: str, value: Any, *, min_value: int | None = None, max_value: int | None = None
) -> int:
    """Return ``value`` if it is an int (not a bool) in ``[min_value, max_value]``."""
    if (value.__class__ is int and (min_value is None or value >= min_value)
            and (max_value is None or value <= max_value)):
        return value  # the common case, without the abstract base class's check
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise TypeError(f"{name} must be an int, got {_describe(value)}")
    value = int(value)
    if min_value is not None and value < min_value:
        raise ValueError(f"{name} must be >= {min_value}, got {value}")
    if max_value is not None and value > max_value:
        raise ValueError(f"{name} must be <= {max_value}, got {value}")
    return int(value)


def check_positive_int(name: str, value: Any) -> int:
    return check_int(name, value, min_value=1)


def check_real(
    name: str,
    value: Any,
    *,
    min_value: float | None = None,
    max_value: float | None = None,
    strict_min: bool = False,
    strict_max: bool = False,
    finite: bool = False,
) -> float:
    """Return ``value`` as a float if it is a real number in the given range (and
    finite, with ``finite=True``)."""
    if value.__class__ is float or value.__class__ is int:  # the common case, without
        value = float(value)  # the abstract base class's check; the ranges follow
    elif isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a real number, got {_describe(value)}")
    else:
        value = float(value)
    if value != value:  # NaN compares unequal to itself
        raise ValueError(f"{name} must not be NaN")
    if finite and value in (float("inf"), float("-inf")):
        raise ValueError(f"{name} must be finite, got {value}")
    if min_value is not None:
        if strict_min and value <= min_value:
            raise ValueError(f"{name} must be > {min_value}, got {value}")
        if not strict_min and value < min_value:
            raise ValueError(f"{name} must be >= {min_value}, got {value}")
    if max_value is not None:
        if strict_max and value >= max_value:
            raise ValueError(f"{name} must be < {max_value}, got {value}")
        if not strict_max and value > max_value:
            raise ValueError(f"{name} must be <= {max_value}, got {value}")
    return value


def check_choice(name: str, value: Any, choices: Collection[Any]) -> Any:
    options = ", ".join(repr(c) for c in choices)
    # True == 1: a bool is one of the choices only if it is one of them itself
    if isinstance(value, bool) and all(c is not value for c in choices):
        raise TypeError(f"{name} must be one of {options}, not a bool; got {value!r}")
    if value not in choices:
        raise ValueError(f"{name} must be one of {options}; got {value!r}")
    return value


def check_tensor(
    name: str,
    value: Any,
    *,
    ndim: int | tuple[int, ...] | None = None,
    floating: bool | None = None,
    shape: tuple[int | str | None, ...] | None = None,
) -> torch.Tensor:
    """Return ``value`` if it is a tensor of the given rank(s), shape and kind of dtype.

    ``floating=True`` asks for a floating-point dtype, ``False`` for an integer one
    (not bool). ``shape`` gives the expected size of every dimension, a name (or
    ``None``) for any size: ``("B", 196, 8)`` is a batch of 196 tokens of 8 numbers, and
    the message says so. It fixes the rank too.
    """
    if not isinstance(value, torch.Tensor):
        raise TypeError(f"{name} must be a torch.Tensor, got {_describe(value)}")
    if ndim is not None:
        ranks = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if value.dim() not in ranks:
            expected = " or ".join(str(r) for r in ranks)
            raise ValueError(
                f"{name} must have {expected} dimensions, got shape {tuple(value.shape)}"
            )
    if floating is True and not value.is_floating_point():
        raise TypeError(f"{name} must have a floating-point dtype, got {value.dtype}")
    if floating is False and (
        value.is_floating_point() or value.is_complex() or value.dtype == torch.bool
    ):
        raise TypeError(f"{name} must have an integer dtype, got {value.dtype}")
    if shape is not None:
        expected = "(" + ", ".join("*" if s is None else str(s) for s in shape) + ")"
        if value.dim() != len(shape):
            raise ValueError(f"{name} must have {len(shape)} dimensions {expected}, "
                             f"got shape {tuple(value.shape)}")
        if any(isinstance(s, int) and s != n for s, n in zip(shape, value.shape)):
            raise ValueError(f"{name} must have shape {expected}, got {tuple(value.shape)}")
    return value


def check_sequence(
    name: str, value: Any, *, what: str, non_empty: bool = False, iterable: bool = False,
    of: type | tuple[type, ...] | None = None, tensor: bool = False,
) -> Any:
    """Return ``value`` if it is a sequence (``iterable``: any iterable), not a str,
    bytes or tensor (``tensor``: a tensor is one), of items of type ``of`` if given;
    ``what`` describes it."""
    kind = Iterable if iterable else Sequence
    not_one = (str, bytes) if tensor else (str, bytes, torch.Tensor)
    if isinstance(value, not_one) or not isinstance(value, kind):
        raise TypeError(f"{name} must be {what}, got {_describe(value)}")
    if non_empty and isinstance(value, Sized) and len(value) == 0:
        raise ValueError(f"{name} must hold at least one item ({what}), got an empty one")
    if of is not None and isinstance(value, Sequence):  # an iterator is not consumed here
        for item in value:
            if not isinstance(item, of):
                raise TypeError(f"{name} must be {what}, got an item {_describe(item)}")
    return value


def check_steps(name: str, x: torch.Tensor, dims: str, dim: int = 1) -> None:
    """Raise unless ``x`` has at least one position along ``dim`` (a loop, a maximum, an
    FFT or a convolution over none has no result); ``dims`` names its dimensions."""
    if x.shape[dim] == 0:
        letters = dims.split()
        raise ValueError(f"{name} must have shape ({', '.join(letters)}) with "
                         f"{letters[dim]} >= 1, got {tuple(x.shape)}")


def check_float_dtype(name: str, value: Any) -> torch.dtype:
    """Return ``value`` if it is a floating-point ``torch.dtype``."""
    if not isinstance(value, torch.dtype) or not value.is_floating_point:
        raise TypeError(f"{name} must be a floating-point torch.dtype such as torch.float32, "
                        f"got {value!r}")
    return value


def check_probability(name: str, value: Any) -> float:
    """Return ``value`` if it is a real number in ``[0, 1)`` (a dropout rate).

    1 is excluded: dropping every unit leaves nothing to rescale.
    """
    value = check_real(name, value, min_value=0.0, max_value=1.0)
    if value == 1.0:
        raise ValueError(f"{name} must be in [0, 1) (a dropout probability), got 1.0")
    return value


def check_same_dtype(
    name: str, value: torch.Tensor, dtype: torch.dtype, *, of: str
) -> torch.Tensor:
    """Return ``value`` if its dtype is ``dtype``; otherwise a ``TypeError`` naming both.

    ``of`` says whose dtype ``value`` must match, e.g. ``"the module's parameters"``
    or ``"query"``. Mixing float16, float32 and float64 would otherwise end in torch's
    "expected m1 and m2 to have the same dtype" deep inside a matrix product.
    """
    if value.dtype != dtype:
        hint = (
            f"(e.g. {name}.to({dtype}) or module.to({value.dtype}))"
            if "module" in of else f"(e.g. {name}.to({dtype}))"
        )
        # "Q has", "cache.dtype has", "the parameters have"
        verb = "has" if of.replace(".", "_").isidentifier() else "have"
        raise TypeError(
            f"{name} has dtype {value.dtype} but {of} {verb} dtype {dtype}; convert one to "
            f"the other {hint}"
        )
    return value


def parameter_dtype(module: torch.nn.Module) -> torch.dtype | None:
    """The dtype of a module's first floating-point parameter (``None`` if it has none).

    Walks ``_parameters`` and ``_modules`` directly: ``module.parameters()`` builds
    sets of every submodule and parameter, too slow for a check made at every step
    of a decoder."""
    for parameter in module._parameters.values():
        if parameter is not None and parameter.is_floating_point():
            return parameter.dtype
    for child in module._modules.values():
        dtype = parameter_dtype(child) if child is not None else None
        if dtype is not None:
            return dtype
    return None


def check_bool(name: str, value: Any) -> bool:
    """Return ``value`` if it is a bool (not an int, not a tensor)."""
    if not isinstance(value, bool):
        raise TypeError(f"{name} must be a bool, got {_describe(value)}")
    return value


def check_generator(name: str, value: Any) -> torch.Generator | None:
    """Return ``value`` if it is a ``torch.Generator`` or ``None``."""
    if value is not None and not isinstance(value, torch.Generator):
        raise TypeError(
            f"{name} must be a torch.Generator or None (e.g. torch.Generator().manual_seed(0)), "
            f"got {_describe(value)}"
        )
    return value


def check_callable(name: str, value: Any, *, signature: str = "", nargs: int | None = None) -> Any:
    """Return ``value`` if it can be called (``signature`` describes how), with
    ``nargs`` positional arguments where its signature can be read."""
    how = f" as {signature}" if signature else ""
    if not callable(value):
        raise TypeError(f"{name} must be callable{how}, got {_describe(value)}")
    if nargs is not None:
        try:
            inspect.signature(value).bind(*([None] * nargs))
        except TypeError:
            raise TypeError(
                f"{name} must be callable{how} (with {nargs} positional argument"
                f"{'s' if nargs != 1 else ''}), got {getattr(value, '__name__', value)!r} "
                f"with signature {inspect.signature(value)}"
            ) from None
        except ValueError:  # a builtin without a readable signature: trust it
            pass
    return value


def check_device(name: str, value: Any) -> torch.device | None:
    """Return ``value`` as a ``torch.device`` (``None`` stays ``None``)."""
    if value is None:
        return None
    if not isinstance(value, (str, torch.device)):
        raise TypeError(
            f"{name} must be a torch.device, a str such as 'cpu' or None, got {_describe(value)}"
        )
    try:
        return torch.device(value)
    except RuntimeError:
        raise ValueError(
            f"{name} must name a device such as 'cpu' or 'cuda', got {value!r}"
        ) from None


def check_token_ids(
    name: str, value: Any, vocab_size: int, *, ndim: int | tuple[int, ...] | None = None,
    of: str = "the vocabulary size",
) -> torch.Tensor:
    """Return ``value`` if it is an integer tensor of ids in ``[0, vocab_size)``.

    ``of`` says where ``vocab_size`` comes from in the message. Reading the ids costs a
    device synchronisation: under ``torch.compile`` the range is not checked, so that
    the check breaks no graph; nor in an inner call (see :func:`_reads_values`)."""
    value = check_tensor(name, value, ndim=ndim, floating=False)
    if value.numel() and _reads_values(value):
        low, high = int(value.min()), int(value.max())
        if low < 0 or high >= vocab_size:
            outside = value[(value < 0) | (value >= vocab_size)].unique().tolist()
            listed = ", ".join(map(str, outside[:5])) + (", ..." if len(outside) > 5 else "")
            # "from L to H" is what callers match; the ids outside say which to fix
            got = f"got ids from {low} to {high}" + (
                f"; outside it: {listed}" if low != high else "")
            raise ValueError(f"{name} must hold token ids in [0, {vocab_size}) ({of}), {got}")
    return value


# --------------------------------------------------------------------------------------
# Hopfield networks (seqbook.hopfield): stored patterns, spins and states
# --------------------------------------------------------------------------------------


def check_patterns(
    name: str, value: Any, *, binary: bool, ndim: int | tuple[int, ...] = 2
) -> torch.Tensor:
    """Return ``value`` as a floating tensor of stored patterns, one per row.

    ``binary=True`` asks for entries in {-1, +1} (the spins of the binary models);
    integer tensors are converted to the default float dtype, floating ones are kept.
    """
    value = check_tensor(name, value, ndim=ndim)
    if value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must have a real dtype, got {value.dtype}")
    if value.shape[-2] == 0 or value.shape[-1] == 0:
        raise ValueError(
            f"{name} must hold at least one pattern of at least one component, "
            f"got shape {tuple(value.shape)}"
        )
    original = value
    if not value.is_floating_point():
        value = value.to(torch.get_default_dtype())
    if binary and _reads_values(original):
        _require_spins(name, value)
    elif not binary and not _finite(original):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return value


def check_spins(name: str, value: torch.Tensor) -> None:
    """Raise unless every entry of ``value`` is -1 or +1 (where contents are read: see
    :func:`_reads_values`)."""
    if _reads_values(value):
        _require_spins(name, value)


def _require_spins(name: str, value: torch.Tensor) -> None:
    bad = (value != 1) & (value != -1)
    if bad.any():
        example = value[bad].flatten()[0].item()
        raise ValueError(
            f"{name} must contain only -1 and +1 (spins), got {bad.sum().item()} other "
            f"value(s), e.g. {example!r}; map 0/1 data with 2 * x - 1"
        )


def check_state(
    name: str, value: Any, dim: int, *, binary: bool, dtype: torch.dtype
) -> torch.Tensor:
    """Return a state (or a batch of states) whose last dimension is ``dim``.

    Binary states (spins) of any real dtype are converted to ``dtype`` (exactly: a
    spin is -1 or +1 in every dtype). Continuous states must already have ``dtype``,
    the stored patterns' dtype: a silent cast would compute a float64 query in
    float32, or the reverse.
    """
    value = check_tensor(name, value)
    if value.dim() == 0:
        raise ValueError(f"{name} must have shape (d,) or (..., d) with d = {dim}, got a scalar")
    if value.shape[-1] != dim:
        raise ValueError(
            f"{name} must have last dimension d = {dim} (the patterns' dimension), "
            f"got shape {tuple(value.shape)}"
        )
    if value.is_complex() or value.dtype == torch.bool:
        raise TypeError(f"{name} must have a real dtype, got {value.dtype}")
    if binary:
        read = _reads_values(value)  # judged on the tensor given, before the cast
        value = value.to(dtype)
        if read:
            _require_spins(name, value)
        return value
    check_same_dtype(name, value, dtype, of="the stored patterns")
    if not _finite(value):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return value


def _reads_values(value: object = None) -> bool:
    """Whether a check of a tensor's contents runs: not under torch.compile (reading
    contents synchronises with the device and would break the compiled graph)."""
    return not torch.compiler.is_compiling()


def _finite(value: torch.Tensor) -> bool:
    """``value`` has no NaN or inf, or its contents are not read here (see above)."""
    return not _reads_values(value) or bool(torch.isfinite(value).all())


def check_beta(name: str, value: Any) -> float:
    """Return an inverse temperature: a finite real number > 0."""
    value = check_real(name, value, min_value=0.0, strict_min=True)
    if value == float("inf"):
        raise ValueError(f"{name} must be finite (an inverse temperature > 0), got inf")
    return value
