"""The book's mechanism diagrams: drawn with matplotlib, committed as SVG.

Each diagram is a function that draws on a :class:`Canvas` and is registered with
:func:`diagram`; one module per part of the book (``recurrent``, ``seq2seq``,
``attention``, ``memory``, ``recurrence``). ``python tools/diagrams`` writes every
diagram to ``book/images/diagrams/<name>.svg``, where a chapter shows it with a
``{figure}`` directive (a name, a caption and alt text). ``tests/test_diagrams.py``
fails when a committed file is not what its function draws now, so to change a label,
edit the function and run the script.

Conventions, so that the diagrams read as one set:

* the book's notation (the notation page): the same letters as the chapter's equations;
* one colour per role (:data:`ROLE`): inputs, hidden states, attention, outputs, ...;
* text of at least :data:`MIN_FONT_PX` pixels when the figure is shown 360 px wide
  (a phone), checked by the test; a white card, so that the dark theme shows it too.
"""

from __future__ import annotations

import importlib
import io
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import FancyArrowPatch, FancyBboxPatch  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = ROOT / "book" / "images" / "diagrams"
PARTS = ("recurrent", "seq2seq", "attention", "memory", "recurrence")

MIN_FONT_PX = 9.0  # smallest text, in pixels, with the figure 360 px wide
PHONE_PX = 360
FONT = 11  # points: the default label size
INK = "#333333"  # lines, arrows, text
ROLE = {  # fill colour of a box by what it holds
    "input": "#e8e8e8",  # tokens, x_t, embeddings
    "state": "#cfe3f6",  # hidden states h_t, memories, cell states
    "attention": "#fde0c5",  # scores, weights, attention sublayers
    "gate": "#f6d3d3",  # gates, masks, selections
    "output": "#d8f0d2",  # outputs, predictions, readouts
    "plain": "#ffffff",  # anything else
}


@dataclass
class Canvas:
    """A figure of ``width`` x ``height`` inches whose data units are inches too."""

    fig: plt.Figure
    ax: plt.Axes

    def box(self, x: float, y: float, text: str = "", role: str = "plain", *,
            w: float = 1.0, h: float = 0.45, size: float = FONT, dashed: bool = False,
            edge: str = INK) -> tuple[float, float, float, float]:
        """A rounded box centred at (x, y); returns its (left, bottom, right, top)."""
        self.ax.add_patch(FancyBboxPatch(
            (x - w / 2, y - h / 2), w, h, boxstyle="round,pad=0.02,rounding_size=0.08",
            fc=ROLE[role], ec=edge, lw=1.0, ls="--" if dashed else "-"))
        if text:
            self.text(x, y, text, size=size)
        return x - w / 2, y - h / 2, x + w / 2, y + h / 2

    def frame(self, left: float, bottom: float, right: float, top: float,
              label: str = "", *, size: float = FONT) -> None:
        """A dashed frame around a group of boxes, labelled above its top-left corner."""
        self.ax.add_patch(FancyBboxPatch(
            (left, bottom), right - left, top - bottom,
            boxstyle="round,pad=0.02,rounding_size=0.1", fc="none", ec="#888888",
            lw=1.0, ls="--"))
        if label:
            self.text(left + 0.05, top + 0.05, label, size=size, ha="left", va="bottom")

    def arrow(self, start: tuple[float, float], end: tuple[float, float], *,
              color: str = INK, dashed: bool = False, curve: float = 0.0,
              width: float = 1.2) -> None:
        """An arrow from ``start`` to ``end`` (``curve``: arc radius, 0 is straight)."""
        self.ax.add_patch(FancyArrowPatch(
            start, end, arrowstyle="-|>", mutation_scale=11, color=color, lw=width,
            ls="--" if dashed else "-", connectionstyle=f"arc3,rad={curve}",
            shrinkA=0, shrinkB=0))

    def line(self, xs: list[float], ys: list[float], *, color: str = INK,
             dashed: bool = False, width: float = 1.2) -> None:
        self.ax.plot(xs, ys, color=color, lw=width, ls="--" if dashed else "-",
                     solid_capstyle="round")

    def text(self, x: float, y: float, text: str, *, size: float = FONT,
             ha: str = "center", va: str = "center", color: str = INK,
             weight: str = "normal") -> None:
        self.ax.text(x, y, text, ha=ha, va=va, fontsize=size, color=color,
                     weight=weight)


@dataclass(frozen=True)
class Diagram:
    name: str  # the file's name, book/images/diagrams/<name>.svg
    size: tuple[float, float]  # inches (the SVG's natural size)
    draw: Callable[[Canvas], None]


DIAGRAMS: dict[str, Diagram] = {}


def diagram(name: str, width: float, height: float):
    """Register the decorated function as the diagram ``name`` of that size (inches)."""
    def register(draw: Callable[[Canvas], None]) -> Callable[[Canvas], None]:
        if name in DIAGRAMS:
            raise ValueError(f"two diagrams are called {name!r}")
        DIAGRAMS[name] = Diagram(name, (width, height), draw)
        return draw
    return register


def load() -> dict[str, Diagram]:
    """Every diagram of every part, by name."""
    for part in PARTS:
        importlib.import_module(f"{__name__}.{part}")
    return DIAGRAMS


def figure(name: str) -> plt.Figure:
    """The diagram drawn on a new figure (the caller closes it)."""
    spec = load()[name]
    width, height = spec.size
    fig = plt.figure(figsize=(width, height))
    ax = fig.add_axes((0, 0, 1, 1))
    ax.set_xlim(0, width)
    ax.set_ylim(0, height)
    ax.set_aspect("equal")
    ax.axis("off")
    spec.draw(Canvas(fig, ax))
    return fig


def render(name: str) -> bytes:
    """The diagram's SVG, the same bytes for the same drawing (no date, fixed ids)."""
    with plt.rc_context({"svg.hashsalt": f"seqbook-{name}", "svg.fonttype": "path",
                         "font.family": "DejaVu Sans", "mathtext.fontset": "dejavusans"}):
        fig = figure(name)
        buffer = io.BytesIO()
        fig.savefig(buffer, format="svg", facecolor="white", metadata={"Date": None})
        plt.close(fig)
    return buffer.getvalue()


def write(names: list[str] | None = None) -> list[Path]:
    """Write the diagrams (all of them by default) to book/images/diagrams/."""
    OUT.mkdir(parents=True, exist_ok=True)
    written = []
    for name in names or sorted(load()):
        path = OUT / f"{name}.svg"
        path.write_bytes(render(name))
        written.append(path)
    return written


def preview(name: str, path: Path, width_px: int = PHONE_PX * 2) -> Path:
    """A PNG of the diagram ``width_px`` wide, to look at while drawing (not committed)."""
    fig = figure(name)
    fig.savefig(path, format="png", facecolor="white", dpi=width_px / fig.get_figwidth())
    plt.close(fig)
    return path
