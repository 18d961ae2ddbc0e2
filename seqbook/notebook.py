"""Helpers for the chapters' notebooks: gluing computed numbers into the prose.

The book is built with myst-nb, whose ``glue`` stores a value under a name that the
Markdown then shows with ``{glue:text}`` roles, so prose cannot drift from code. In
Colab myst-nb is usually absent; there ``glue`` only shows the value (with
``display=True``), so the chapter runs the same.
"""

from __future__ import annotations

from typing import Any

__all__ = ["glue"]


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
    if not isinstance(name, str) or not name or not name.replace("_", "").replace("-", "").isalnum():
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
