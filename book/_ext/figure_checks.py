"""Readable plots: an IPython extension that checks every figure a chapter's kernel draws.

The book's kernel profile (``book/_ipython``, selected by the Makefile) loads it. After
each cell, before the inline backend shows and closes the cell's figures, it looks at
every axis of every open figure and reports, on stderr, two faults a reader meets:

* tick labels that overlap (crowded log ticks, long category names);
* a fractional tick ("2.5") on an axis that counts: steps, positions, epochs, layers,
  lags, lengths.

A strict build treats a chapter's stderr as a warning, and ``-W`` makes it an error, so a
figure with such a fault fails ``make test``. Readers' kernels (Colab) do not load it.
"""

from __future__ import annotations

import os
import re
import sys
from typing import Any

# an axis label that names a count: its ticks must be whole numbers
COUNTED = re.compile(
    r"\b(time steps?|steps?|positions?|epochs?|layers?|iterations?|lags?|delays?|"
    r"lengths?|updates?|index)\b(?! size)", re.IGNORECASE)
# or is a count's usual letter, alone (not a ratio such as "t / T" or "load N / d")
COUNT_LETTER = re.compile(r"(?<![\w/'’])\$?[tnk]\$?(?![\w/_^{'])(?!\s*/)")
OVERLAP_PX = 1.0  # labels closer than touching by more than this overlap


def _number(text: str) -> float | None:
    try:
        return float(text.replace("\N{MINUS SIGN}", "-").strip("$"))
    except ValueError:
        return None  # a word, or mathtext such as 10^{2}


def figure_problems(figure: Any) -> list[str]:
    """What is wrong with ``figure``'s ticks, one line per fault (empty: nothing)."""
    renderer = figure.canvas.get_renderer()
    problems = []
    for number, axes in enumerate(figure.axes, start=1):
        if not axes.get_visible() or not axes.axison:
            continue
        for name, axis in (("x", axes.xaxis), ("y", axes.yaxis)):
            labels = [label for label in axis.get_ticklabels()
                      if label.get_visible() and label.get_text()]
            boxes = [(label.get_window_extent(renderer), label.get_text())
                     for label in labels]
            side = 0 if name == "x" else 1
            boxes.sort(key=lambda box: box[0].get_points()[0][side])
            for (a, text_a), (b, text_b) in zip(boxes, boxes[1:]):
                if a.get_points()[1][side] - b.get_points()[0][side] > OVERLAP_PX:
                    problems.append(f"axes {number}: {name} tick labels {text_a!r} and "
                                    f"{text_b!r} overlap")
                    break
            title = axis.get_label_text()
            if axis.get_scale() == "linear" and (COUNTED.search(title)
                                                  or COUNT_LETTER.search(title)):
                values = [_number(label.get_text()) for label in labels]
                fractional = [v for v in values if v is not None and v != round(v)]
                if fractional:
                    problems.append(f"axes {number}: the {name} axis counts ({title!r}) but "
                                    f"is ticked at {fractional[0]:g}")
    return problems


def _check_open_figures() -> None:
    if "matplotlib.pyplot" not in sys.modules:
        return
    import matplotlib._pylab_helpers as helpers

    for manager in helpers.Gcf.get_all_fig_managers():
        figure = manager.canvas.figure
        figure.draw_without_rendering()  # lay out the text, without drawing pixels
        for problem in figure_problems(figure):
            print(f"figure check, figure {manager.num}: {problem}", file=sys.stderr)


def load_ipython_extension(ipython: Any) -> None:
    if os.environ.get("SEQBOOK_FIGURE_CHECKS") == "0":
        return  # a run whose stderr fails nothing (nbval) need not pay for them
    # registered before the inline backend's own post_execute (which shows and closes
    # the figures): this kernel imports matplotlib only later, in a chapter's cell
    ipython.events.register("post_execute", _check_open_figures)
