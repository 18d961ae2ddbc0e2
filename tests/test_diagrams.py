"""The mechanism diagrams (tools/diagrams): committed as drawn, legible, shown and cited."""

from __future__ import annotations

import functools
import re

import matplotlib.pyplot as plt
import pytest
from matplotlib.text import Text

import diagrams  # tools/
from book_files import BOOK

NAMES = sorted(diagrams.load())
FIGURE = re.compile(
    r"^(?P<fence>`{3,}|:{3,})\{figure\} images/diagrams/(?P<file>[\w-]+)\.svg\n"
    r"(?P<body>.*?)^(?P=fence)$", re.S | re.M)


@functools.cache
def figures() -> dict[str, list[tuple[str, str]]]:
    """Diagram name -> [(chapter, the figure directive's body)] over the book's pages."""
    found: dict[str, list[tuple[str, str]]] = {}
    for path in sorted(BOOK.glob("*.md")):
        for match in FIGURE.finditer(path.read_text(encoding="utf-8")):
            found.setdefault(match["file"], []).append((path.stem, match["body"]))
    return found


@pytest.mark.parametrize("name", NAMES)
def test_the_committed_svg_is_what_the_code_draws(name):
    path = diagrams.OUT / f"{name}.svg"
    assert path.exists(), f"run `python tools/diagrams {name}`"
    svg = path.read_bytes()
    assert svg == diagrams.render(name), f"run `python tools/diagrams {name}`"
    # an opaque white card under the drawing: dark ink stays readable in the dark theme
    assert re.search(rb'<g id="patch_1">\s*<path d="M 0 [^"]*" style="fill: #ffffff"', svg)


def test_every_committed_svg_has_its_code():
    committed = {path.stem for path in diagrams.OUT.glob("*.svg")}
    assert committed <= set(NAMES), f"SVGs with no code: {sorted(committed - set(NAMES))}"


@pytest.mark.parametrize("name", NAMES)
def test_text_is_legible_on_a_phone(name):
    fig = diagrams.figure(name)
    scale = diagrams.PHONE_PX / (fig.get_figwidth() * 72)  # pixels per point
    texts = [t for t in fig.findobj(Text) if t.get_text().strip() and t.get_visible()]
    sizes = {t.get_text(): t.get_fontsize() * scale for t in texts}
    renderer = fig.canvas.get_renderer()
    page = fig.bbox
    cut = [t.get_text() for t in texts
           if not page.contains(*t.get_window_extent(renderer).p0)
           or not page.contains(*t.get_window_extent(renderer).p1)]
    plt.close(fig)
    assert not cut, f"text cut off at the edge of the figure: {cut}"
    assert sizes, "a diagram with no label"
    small = {text: round(px, 1) for text, px in sizes.items() if px < diagrams.MIN_FONT_PX}
    assert not small, f"text below {diagrams.MIN_FONT_PX} px at 360 px wide: {small}"


@pytest.mark.parametrize("name", NAMES)
def test_each_diagram_is_a_numbered_captioned_figure_cited_by_its_chapter(name):
    shown = figures().get(name, [])
    assert len(shown) == 1, f"{name} is shown {len(shown)} times (expected once)"
    chapter, body = shown[0]
    options = dict(re.findall(r"^:(\w+):\s*(.*)$", body, re.M))
    caption = "\n".join(line for line in body.splitlines() if not line.startswith(":")).strip()
    assert options.get("name"), f"{chapter}: the figure of {name} has no :name:"
    alt = options.get("alt", "")
    assert len(alt) >= 60 and name not in alt, f"{chapter}: {name}'s alt text is not a description"
    assert len(caption) >= 30, f"{chapter}: {name}'s caption does not say what to see"
    text = (BOOK / f"{chapter}.md").read_text(encoding="utf-8")
    assert f"{{numref}}`{options['name']}`" in text or re.search(
        rf"{{numref}}`[^`]*<{re.escape(options['name'])}>`", text), \
        f"{chapter} never cites {options['name']} with {{numref}}"
