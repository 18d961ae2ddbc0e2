"""Claims: the one way a chapter checks a sentence of its page against its own run.

A chapter states results ("attention pooling beats the mean", "the two forms agree to
1e-15") and checks each in a hidden cell with :func:`claim`, which knows the sentence,
the measured value and the bound. What happens when a claim does not hold depends on
who runs the chapter, chosen by the environment variable ``SEQBOOK_CLAIMS``:

* ``strict`` (``make book``, ``make test``, CI): a failed claim raises
  :class:`ClaimError`, naming the claim, the value and the bound, and the build fails.
* ``reader`` (the default: Colab, Jupyter): a failed claim shows a note (what the
  page says, what this run measured, how often the claim held in the book's ledger of
  many runs) and the notebook goes on. A reader's CPU or GPU adds numbers in another
  order, so their run is another draw; the note tells them where it fell.

With ``SEQBOOK_CLAIMS_LOG=<file>`` every claim also appends its measurement to that
file, one JSON object a line: ``tools/claims_ledger.py`` (``make claims``) runs every
chapter under many seed shifts and another CPU kernel path and tabulates them into the
ledger, ``seqbook/claims.json``, which the book renders as a page.
"""

from __future__ import annotations

import json
import os
import sys
from functools import cache
from importlib import resources
from typing import Any

import numpy as np

__all__ = ["MODE_VARIABLE", "LOG_VARIABLE", "ClaimError", "claim", "claims_mode"]

MODE_VARIABLE = "SEQBOOK_CLAIMS"
LOG_VARIABLE = "SEQBOOK_CLAIMS_LOG"
MODES = ("strict", "reader")
LEDGER_PAGE = "https://seqbook.github.io/seqbook/book/claims.html"  # the rendered ledger

# The comparisons a claim can make, each as the slack it leaves: positive when the
# claim holds with room to spare, zero at the bound, negative when it fails.
_SLACK = {
    "below": lambda value, bound: bound - value,  # value < bound
    "at_most": lambda value, bound: bound - value,  # value <= bound
    "above": lambda value, bound: value - bound,  # value > bound
    "at_least": lambda value, bound: value - bound,  # value >= bound
    "equals": lambda value, bound: -np.abs(value - bound),  # value == bound
}
_SYMBOL = {"below": "<", "at_most": "<=", "above": ">", "at_least": ">=", "equals": "=="}
_STRICT = {"below", "above"}  # zero slack fails these


class ClaimError(AssertionError):
    """A claim of the page does not hold in this run (strict mode)."""


def claims_mode() -> str:
    """``"strict"`` or ``"reader"``: how this run treats a failed claim.

    Read from ``$SEQBOOK_CLAIMS`` at every claim, so a notebook can switch; unset means
    ``"reader"``.

    Example:
        >>> claims_mode() in ("strict", "reader")
        True
    """
    mode = os.environ.get(MODE_VARIABLE, "").strip() or "reader"
    if mode not in MODES:
        raise ValueError(f"{MODE_VARIABLE} must be one of {MODES}, got {mode!r}")
    return mode


def claim(
    statement: str,
    value: Any,
    *,
    below: Any = None,
    at_most: Any = None,
    above: Any = None,
    at_least: Any = None,
    equals: Any = None,
    identity: bool = False,
    quote: str | None = None,
) -> None:
    """Check that ``value`` keeps to its bounds; what the page says depends on it.

    ``value`` may be a number, a bool, or an array or tensor of them: the claim holds
    when every element does, and what is reported is the element nearest to failing
    (a bound may be an array too, compared element by element). A NaN never holds.

    Args:
        statement: the claim in words, as a reader would check it ("attention pooling
            beats the mean"); unique in the book (the ledger is keyed by it).
        value: the measured quantity.
        below, at_most, above, at_least: strict and inclusive upper and lower bounds;
            an interval gives one of each.
        equals: the value it must equal exactly (a count, an exact identity).
        identity: the claim is an identity (equal to a trusted twin, to autograd, to
            a closed form, up to rounding) rather than a statistic of a random run.
        quote: words of the page that this claim backs, verbatim, so that the ledger
            can link to them.

    Raises:
        ClaimError: in strict mode, when the claim does not hold.

    Example:
        >>> claim("two plus two is four", 2 + 2, equals=4, identity=True)
    """
    if not isinstance(statement, str) or not statement.strip():
        raise ValueError(f"statement must be a non-empty str, got {statement!r}")
    bounds = {name: bound for name, bound in (("below", below), ("at_most", at_most),
              ("above", above), ("at_least", at_least), ("equals", equals))
              if bound is not None}
    if not bounds:
        raise ValueError("claim needs a bound: below, at_most, above, at_least or equals")
    if "equals" in bounds and len(bounds) > 1:
        raise ValueError("equals cannot be combined with another bound")
    if quote is not None and not (isinstance(quote, str) and quote.strip()):
        raise ValueError(f"quote must be a non-empty str or None, got {quote!r}")
    measured = _as_array(value, "value")
    worst = None  # (slack, value, bound name, bound) of the element nearest to failing
    for name, bound in bounds.items():
        limit = _as_array(bound, name)
        try:
            values, limits = np.broadcast_arrays(measured, limit)
        except ValueError:
            raise ValueError(f"{name} must be a number or broadcast against value's shape "
                             f"{measured.shape}, got shape {limit.shape}") from None
        if values.size == 0:
            raise ValueError("value must have at least one element, got an empty array")
        with np.errstate(invalid="ignore"):
            slack = np.where(np.isnan(values), -np.inf, _SLACK[name](values, limits))
        index = int(np.argmin(slack))
        candidate = (float(slack.flat[index]), float(values.flat[index]), name,
                     float(limits.flat[index]))
        if worst is None or candidate[0] < worst[0]:
            worst = candidate
    assert worst is not None  # bounds is not empty, and every element has a slack
    margin, worst_value, bound_name, bound_value = worst
    held = margin > 0 if bound_name in _STRICT else margin >= 0
    record = {
        "statement": statement, "value": worst_value, "bound": _bound_text(bounds),
        "binding": f"{_SYMBOL[bound_name]} {bound_value:.6g}", "slack": margin,
        "held": bool(held), "identity": bool(identity), "quote": quote,
    }
    _log(record)
    if held:
        return
    if claims_mode() == "strict":
        raise ClaimError(
            f"claim '{statement}' does not hold here: {worst_value:.6g}, "
            f"expected {_SYMBOL[bound_name]} {bound_value:.6g}")
    _show_note(record)


def _as_array(value: Any, name: str) -> np.ndarray:
    """A float64 NumPy array of a number, bool, sequence, array or tensor."""
    if hasattr(value, "detach"):  # a torch tensor, on any device
        value = value.detach().cpu().double().numpy()
    try:
        array = np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError(f"{name} must be a number, a bool, or an array or tensor of "
                        f"them, got {type(value).__name__}") from None
    return array


def _bound_text(bounds: dict[str, Any]) -> str:
    """The bounds as a reader reads them: '< 0.5', '> 0.1 and < 0.9', '== 0'."""
    parts = []
    for name, bound in bounds.items():
        array = _as_array(bound, name)
        shown = f"{float(array):.6g}" if array.size == 1 else "the bound of each element"
        parts.append(f"{_SYMBOL[name]} {shown}")
    return " and ".join(parts)


def _log(record: dict) -> None:
    path = os.environ.get(LOG_VARIABLE, "").strip()
    if path:
        with open(path, "a", encoding="utf-8") as log:
            log.write(json.dumps(record) + "\n")


@cache
def _ledger() -> dict[str, dict]:
    """The committed ledger's rows by statement (empty where it cannot be read)."""
    try:
        text = resources.files("seqbook").joinpath("claims.json").read_text("utf-8")
        return {row["statement"]: row for row in json.loads(text)["claims"]}
    except (OSError, ValueError, KeyError):
        return {}


def _note_text(record: dict) -> str:
    """The reader's note on a claim this run does not confirm (Markdown)."""
    lines = [
        f"**This run does not confirm a claim of the page.** The page says: "
        f"*{record['statement']}*. This run measured **{record['value']:.4g}**, and the "
        f"claim needs a value {record['binding']}."
    ]
    row = _ledger().get(record["statement"])
    if row:
        lines.append(
            f"In the book's ledger the claim held in {row['held']} of {row['runs']} runs "
            f"(other seeds and CPU kernels; values {row['min']:.4g} to {row['max']:.4g}, "
            f"printed run {row['printed']:.4g}).")
    if record["identity"]:
        lines.append("This is an identity up to rounding: another device (a GPU, TF32 "
                     "matrix products) rounds differently, and its error can be larger.")
    else:
        lines.append("Your machine draws other numbers than the printed run (another CPU "
                     "or GPU adds in another order, so training takes another path): "
                     "this run is one more draw.")
    lines.append(f"The notebook goes on. [How sure is each claim]({LEDGER_PAGE})")
    return " ".join(lines)


def _show_note(record: dict) -> None:
    text = _note_text(record)
    try:
        from IPython import get_ipython
        from IPython.display import Markdown, display
    except ImportError:  # pragma: no cover - a script outside IPython
        get_ipython = None
    if get_ipython is not None and get_ipython() is not None:
        display(Markdown("> " + text))
    else:
        print(f"note: {text}", file=sys.stderr)
