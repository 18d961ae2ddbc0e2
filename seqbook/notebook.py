"""Helpers for the chapters' notebooks: glued numbers and the package's own code.

The book is built with myst-nb, whose ``glue`` stores a value under a name that the
Markdown then shows with ``{glue:text}`` roles, so prose cannot drift from code. In
Colab myst-nb is usually absent; there ``glue`` only shows the value (with
``display=True``), so the chapter runs the same.

``show_source`` puts the package's own code on the page, under the equations it
implements: what the reader sees is what runs and what the tests check. It reads past
the wrapper that checks a public function's annotations (:mod:`seqbook._typecheck`,
jaxtyping and beartype) to the function's own source.
"""

from __future__ import annotations

import html
import inspect
import re
import sys
import textwrap
from dataclasses import dataclass
from typing import Any

from seqbook.claims import claim

__all__ = ["SourceSnippet", "claim", "glue", "show_source", "value_range"]


def glue(name: str, value: Any, display: bool = False) -> None:
    """Store ``value`` under ``name`` for the prose's ``{glue:text}`name``` roles.

    NumPy scalars and one-element tensors are stored as Python numbers, so the prose
    can format them (``{glue:text}`name:.2f```). Nothing is returned, so a ``glue`` on
    a cell's last line does not print the value.

    Args:
        name: the key the prose refers to (letters, digits, ``_`` and ``-``).
        value: a number, a string or a matplotlib figure.
        display: also show the value in the cell's output.

    Example:
        >>> glue("answer", 42)
    """
    if not (isinstance(name, str) and name.replace("_", "").replace("-", "").isalnum()):
        raise ValueError(f"name must be a non-empty identifier-like str, got {name!r}")
    value = _plain(value)
    try:
        from myst_nb import glue as myst_glue
    except ImportError:  # Colab: nothing to glue into, but the chapter still runs
        if display:
            from IPython.display import display as show

            show(value)
        return
    if _in_ipython():
        myst_glue(name, value, display=display)


def value_range(low: Any, high: Any, spec: str = "", sep: str = "-") -> str:
    """The range from ``low`` to ``high``, each formatted with ``spec``, for the prose.

    One number when both ends print alike: a spread smaller than the printed precision
    reads "0.99", not "0.99-0.99". Glue the result (``glue(name, value_range(...))``)
    and cite it as ``{glue:text}`name```.

    Args:
        low, high: the ends (numbers, NumPy scalars or one-element tensors).
        spec: a format specification, as after the colon of an f-string (``".2f"``).
        sep: what stands between the two ends (``"-"``, ``" to "``).

    Example:
        >>> value_range(0.912, 0.987, ".2f"), value_range(0.991, 0.994, ".2f")
        ('0.91-0.99', '0.99')
        >>> value_range(3, 12, sep=" to ")
        '3 to 12'
    """
    first, last = format(_plain(low), spec), format(_plain(high), spec)
    return first if first == last else f"{first}{sep}{last}"


def _plain(value: Any) -> Any:
    """NumPy scalars and one-element tensors as Python numbers.

    ``{glue:text}`x:.2f``` formats the value's text representation, and since NumPy 2
    that is ``np.float64(0.5)``, which cannot be formatted as a number.
    """
    if hasattr(value, "item") and getattr(value, "ndim", None) == 0:
        return value.item()
    if hasattr(value, "numel") and callable(value.numel) and value.numel() == 1:
        return value.item()
    return value


def _in_ipython() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:
        return False
    return get_ipython() is not None


# --------------------------------------------------------------------------------------
# Showing the package's own code on the page
# --------------------------------------------------------------------------------------

_EQ_LABEL = re.compile(r"\((eq-[A-Za-z0-9_-]+)\)")
SNIPPET_CLASS = "seqbook-source"  # the HTML class of a shown snippet (tests find it)


@dataclass(frozen=True)
class SourceSnippet:
    """A piece of seqbook's source, ready to be shown in a notebook.

    Produced by :func:`show_source`; shown by Jupyter through its rich representations:
    ``_repr_markdown_`` (MyST Markdown, chosen by the book's build, where the link and
    the equation references resolve), ``_repr_html_`` (highlighted HTML, chosen by
    Jupyter and Colab) and ``__repr__`` (plain text).

    Attributes:
        qualname: the object's dotted name, e.g. ``"seqbook.recurrent.GRU.cell"``.
        code: the lines shown, dedented.
        path: the source file, relative to the ``seqbook`` package's parent.
        first_line, last_line: the lines of ``path`` shown (1-based, inclusive).
        labels: the equation labels ``(eq-...)`` that the shown lines cite, in order.
        api_target: the documented object the snippet links to.
    """

    qualname: str
    code: str
    path: str
    first_line: int
    last_line: int
    labels: tuple[str, ...]
    api_target: str

    def _caption(self) -> str:
        return f"{self.path}, lines {self.first_line}-{self.last_line}"

    def _repr_markdown_(self) -> str:
        # MyST: the book's build renders this with its own (light/dark) highlighting,
        # and the roles link to the API entry and to the equations on the same page.
        fence = "`" * max(3, _longest_backtick_run(self.code) + 1)
        box = fence + "`"  # the container's fence must be longer than the code's
        note = f"Source: {{py:obj}}`{self.qualname} <{self.api_target}>` ({self._caption()})."
        if self.labels:
            note += " Implements " + ", ".join(f"{{eq}}`{label}`" for label in self.labels) + "."
        return "\n".join(
            [f"{box}{{container}} {SNIPPET_CLASS}", f"{fence}python", self.code, fence,
             "", f"<small>{note}</small>", box]
        )

    def _repr_html_(self) -> str:
        try:
            from pygments import highlight
            from pygments.formatters import HtmlFormatter
            from pygments.lexers import PythonLexer

            body = highlight(self.code, PythonLexer(), HtmlFormatter(noclasses=True))
        except ImportError:  # pragma: no cover - IPython always brings pygments
            body = f"<pre>{html.escape(self.code)}</pre>"
        note = f"<code>{html.escape(self.qualname)}</code> ({html.escape(self._caption())})"
        if self.labels:
            note += "; implements " + ", ".join(html.escape(f"({label})") for label in self.labels)
        return f'<div class="{SNIPPET_CLASS}">{body}<p><small>Source: {note}</small></p></div>'

    def __repr__(self) -> str:
        return f"# {self.qualname} ({self._caption()})\n{self.code}"


def show_source(
    obj: Any,
    start: str | None = None,
    stop: str | None = None,
    *,
    docstring: bool = False,
) -> SourceSnippet:
    """The source of a seqbook function, method or class, to show on a chapter's page.

    The page shows exactly the code that runs: the snippet is read from the installed
    package when the notebook executes (in the book's build, this checkout; in Colab,
    the installed seqbook). Put the call on a cell's last line (the book hides the
    cell's input with the ``remove-input`` tag).

    Args:
        obj: a function, method, property or class defined in ``seqbook``.
        start: show from the first line containing this text (default: the first
            line, decorators included).
        stop: show up to and including the first line after ``start``'s line
            containing this text (default: the last line). A stop that the start
            line itself contains would otherwise cut the snippet to one line.
        docstring: keep the docstring; by default it is left out (the equations
            above the code say the same, and the API entry has it in full).

    Returns:
        A :class:`SourceSnippet`, which notebooks display as highlighted code with a
        link to the object's API entry and to the equations its lines cite.

    Example:
        >>> from seqbook.utils import seed_everything
        >>> snippet = show_source(seed_everything)
        >>> snippet.code.splitlines()[0]
        'def seed_everything(seed: int) -> None:'
    """
    if isinstance(obj, property):
        obj = obj.fget
    target = inspect.unwrap(obj)
    module = inspect.getmodule(target)
    if module is None or not (
        module.__name__ == "seqbook" or module.__name__.startswith("seqbook.")
    ):
        raise ValueError(f"obj must be defined in the seqbook package, got {obj!r}")
    if not (inspect.isfunction(target) or inspect.isclass(target) or inspect.ismethod(target)):
        raise TypeError(
            f"obj must be a function, method, property or class, got {type(obj).__name__}"
        )

    lines, first = inspect.getsourcelines(target)
    lines = [line.rstrip("\n") for line in lines]
    keep = list(range(len(lines)))
    if not docstring:
        keep = [i for i in keep if i not in _docstring_lines(lines)]
    begin, end = 0, len(keep) - 1
    if start is not None:
        begin = _find(lines, keep, start, 0, "start", obj)
    if stop is not None:
        end = _find(lines, keep, stop, begin + (start is not None), "stop", obj)
    shown = [lines[i] for i in keep[begin : end + 1]]
    code = textwrap.dedent("\n".join(shown)).strip("\n")

    path = module.__name__.replace(".", "/") + ".py"
    if getattr(module, "__file__", "").endswith("__init__.py"):
        path = module.__name__.replace(".", "/") + "/__init__.py"
    public = _public_name(obj, target, module.__name__)
    return SourceSnippet(
        qualname=public,
        code=code,
        path=path,
        first_line=first + keep[begin],
        last_line=first + keep[end],
        labels=tuple(dict.fromkeys(_EQ_LABEL.findall(code))),
        api_target=_api_target(public),
    )


def _public_name(obj: Any, target: Any, module_name: str) -> str:
    """The name a reader imports the object by: ``seqbook.recurrent.GRU.cell``.

    Objects are documented under their subpackage (``seqbook.recurrent.GRU``), not the
    module that defines them (``seqbook.recurrent.gru.GRU``), when the subpackage
    re-exports them.
    """
    top, *rest = target.__qualname__.split(".")
    parts = module_name.split(".")
    for end in range(2, len(parts) + 1):
        package = sys.modules.get(".".join(parts[:end]))
        if package is not None and getattr(package, top, None) is getattr(
            sys.modules[module_name], top, object()
        ):
            return ".".join([*parts[:end], top, *rest])
    return f"{module_name}.{target.__qualname__}"


def _api_target(name: str) -> str:
    """The nearest public object of ``name``: private helpers link to their owner."""
    parts = name.split(".")
    while len(parts) > 2 and any(p.startswith("_") for p in parts[1:]):
        parts = parts[:-1]
    return ".".join(parts)


def _docstring_lines(lines: list[str]) -> set[int]:
    """Indices of the lines of the first docstring of a def or class (if any)."""
    import ast

    source = textwrap.dedent("\n".join(lines))
    try:
        tree = ast.parse(source)
    except SyntaxError:  # a part of a larger statement: nothing to strip
        return set()
    node = tree.body[0] if tree.body else None
    body = getattr(node, "body", None)
    if not body or not isinstance(body[0], ast.Expr):
        return set()
    value = body[0].value
    if not (isinstance(value, ast.Constant) and isinstance(value.value, str)):
        return set()
    return set(range(body[0].lineno - 1, body[0].end_lineno or body[0].lineno))


def _find(lines: list[str], keep: list[int], text: str, begin: int, name: str, obj: Any) -> int:
    for position in range(begin, len(keep)):
        if text in lines[keep[position]]:
            return position
    raise ValueError(
        f"{name}={text!r} is not in the source of {getattr(obj, '__qualname__', obj)!r}"
    )


def _longest_backtick_run(text: str) -> int:
    runs = re.findall(r"`+", text)
    return max((len(r) for r in runs), default=0)
