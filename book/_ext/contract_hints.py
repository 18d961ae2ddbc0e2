"""Show a contract's plain type in the API reference.

The package writes argument checks as contracts in the signature
(``d_model: PositiveInt``, ``x: Shaped("B T D")``; see ``seqbook/_contracts.py``),
which are ``typing.Annotated`` types. Autodoc would print them whole
(``Annotated[int, Check(check_positive_int)]``); this extension records the type
underneath instead (``int``, ``Tensor``), as the docstrings' Args and Shapes say the
rest. It runs after autodoc's own ``record_typehints`` and rewrites what that recorded.
"""

from __future__ import annotations

import functools
import operator
import sys
import types
import typing
from typing import Annotated, Any

from sphinx.application import Sphinx
from sphinx.util import inspect
from sphinx.util.typing import stringify_annotation


def plain_type(hint: Any) -> Any:
    """``hint`` without the contracts of its ``Annotated`` parts (None if unchanged)."""
    if typing.get_origin(hint) is Annotated:
        return typing.get_args(hint)[0]
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        members = typing.get_args(hint)
        plain = [plain_type(m) for m in members]
        if all(p is None for p in plain):
            return None
        return functools.reduce(operator.or_, [m if p is None else p
                                               for m, p in zip(members, plain)])
    return None


def record_plain_types(app: Sphinx, objtype: str, name: str, obj: Any, options: Any,
                       args: str, retann: str) -> None:
    if not callable(obj):
        return
    mode = "smart" if app.config.autodoc_typehints_format == "short" else "fully-qualified"
    recorded = app.env.temp_data.setdefault("annotations", {}).setdefault(name, {})
    try:
        signature = inspect.signature(obj, type_aliases=app.config.autodoc_type_aliases)
    except (TypeError, ValueError):
        return
    # a class's signature is its __init__'s, whose hints are still strings here
    namespace = vars(sys.modules[obj.__module__]) if obj.__module__ in sys.modules else {}
    for parameter in signature.parameters.values():
        hint = parameter.annotation
        if isinstance(hint, str):
            try:
                hint = eval(hint, namespace)  # noqa: S307 (the package's own hints)
            except Exception:  # not ours to resolve: leave autodoc's record
                continue
        plain = plain_type(hint)
        if plain is not None:
            recorded[parameter.name] = stringify_annotation(plain, mode)


def setup(app: Sphinx) -> dict[str, Any]:
    # after autodoc's record_typehints (priority 500), whose record this rewrites
    app.connect("autodoc-process-signature", record_plain_types, priority=600)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
