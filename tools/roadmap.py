"""The book's roadmap page, made from the chapters' own "In this chapter" boxes.

Each chapter names its prerequisites in the box under its title (``{doc}`name```
links). This script reads them, keeps the edges a reader must follow (the transitive
reduction: an edge implied by a longer path is left out of the drawing, not of the
table), draws the dependency graph with matplotlib and writes

* ``book/roadmap.md``, the page (TOC after the preface), and
* ``book/images/roadmap.svg``, its figure,

so that the roadmap cannot drift from the chapters: ``tests/test_book.py`` fails when
the committed page is not what this script makes of the chapters now.

    python tools/roadmap.py          # after editing a chapter's prerequisites or MARKS
    python tools/roadmap.py --measure  # after `make book`: the minutes again

Each chapter's minutes are those of its main thread in the built book, kept in
``book/reading_minutes.json`` (``--measure``; a check of the built pages fails when
they drift): prose at 200 words a minute, half a minute per figure and per display
equation, two seconds per visible line of code; folded content (dropdowns, hidden
cells, solutions) and the "Going further", "Evidence", "Departures" and "Notes on the
sources" sections are left out.
"""

from __future__ import annotations

import re
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOK = ROOT / "book"
PAGE = BOOK / "roadmap.md"
FIGURE = BOOK / "images" / "roadmap.svg"
MINUTES = BOOK / "reading_minutes.json"
HTML = ROOT / "_build" / "html" / "book"

# What a reader needs: the core path teaches the book's ideas in order; optional
# chapters deepen one of them; research chapters reproduce a recent paper's results.
MARKS = {
    "sequences": "core", "rnn": "core", "vanishing_gradients": "core", "lstm": "core",
    "gru": "core", "deep_rnn": "core", "attention": "core", "seq2seq": "core",
    "decoding_bleu": "core", "transformer": "core", "language_model": "core",
    "architecture_costs": "core", "hopfield": "core", "attractor": "research",
    "energy_transformer": "research", "linear_attention": "core", "ssm": "core",
    "xlstm": "optional", "recall_and_cost": "optional",
}
MARK_TEXT = {"core": "core", "optional": "optional", "research": "research reproduction"}
COLOURS = {"core": "#1f5fa6", "optional": "#7fa7d6", "research": "#e0a030"}

# A ten-week course along the core path, about one sitting of reading a week.
COURSE = [
    ("sequences",),
    ("rnn",),
    ("vanishing_gradients", "lstm"),
    ("lstm", "gru"),
    ("attention",),
    ("deep_rnn", "seq2seq"),
    ("decoding_bleu", "transformer"),
    ("transformer", "language_model"),
    ("architecture_costs", "hopfield"),
    ("linear_attention", "ssm", "xlstm", "recall_and_cost"),
]

BOX = re.compile(r":::\{admonition\} In this chapter\n(.*?)\n:::\n", re.S)
PREREQUISITES = re.compile(r"\*\*Prerequisites:\*\*(.*?)(?:\n\n|\Z)", re.S)


def main_thread_minutes(page: Path) -> float:
    """The reading time of a built chapter's main thread (the rule above)."""
    from bs4 import BeautifulSoup

    article = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser").select_one(
        "article.bd-article")
    folded = "details, .dropdown, .toggle-hidden, .solution, script, style, .headerlink"
    for element in article.select(folded):
        element.decompose()
    for section in article.find_all("section"):
        heading = section.find(re.compile(r"h[1-6]"))
        if heading and re.match(r"(\d+(\.\d+)*\.?\s*)?(going further|evidence|"
                                r"departures|notes on)", heading.get_text(" ", strip=True),
                                re.I):
            section.decompose()
    figures, equations = len(article.find_all("img")), len(article.select("div.math"))
    code = sum(pre.get_text().count("\n") for pre in article.select(
        "div.highlight-ipython3 pre, div.highlight-python pre"))
    for element in article.select("pre, div.math"):  # inline math reads as words
        element.decompose()
    words = len(re.findall(r"[A-Za-z][A-Za-z'-]*", article.get_text(" ")))
    return words / 200 + 0.5 * (figures + equations) + 2 * code / 60


def minutes() -> dict[str, float]:
    """The committed minutes of each chapter (``--measure`` writes them)."""
    import json

    return json.loads(MINUTES.read_text(encoding="utf-8")) if MINUTES.exists() else {}


def toc() -> list[tuple[str, list[str]]]:
    """The numbered parts of _toc.yml: (caption, chapter names), in order."""
    import yaml

    parts = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))["parts"]
    return [(part["caption"], [c["file"].removeprefix("book/") for c in part["chapters"]])
            for part in parts if part.get("numbered")]


def prerequisites(chapter: str) -> list[str]:
    """The chapters that ``chapter``'s box names as prerequisites, in its order."""
    text = (BOOK / f"{chapter}.md").read_text(encoding="utf-8")
    box = BOX.search(text)
    if box is None:
        raise SystemExit(f"book/{chapter}.md has no 'In this chapter' box under its title")
    found = PREREQUISITES.search(box.group(1))
    names = re.findall(r"\{doc\}`([\w-]+)`", found.group(1) if found else "")
    return list(dict.fromkeys(names))


def reduced(edges: dict[str, list[str]]) -> dict[str, list[str]]:
    """Each chapter's prerequisites without those reached through another one."""
    def reachable(start: str) -> set[str]:
        seen, todo = set(), list(edges[start])
        while todo:
            node = todo.pop()
            if node not in seen:
                seen.add(node)
                todo += edges[node]
        return seen

    return {c: [p for p in ps if not any(p in reachable(q) for q in ps if q != p)]
            for c, ps in edges.items()}


def draw(parts, numbers, kept, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import FancyArrowPatch, FancyBboxPatch, Patch

    plt.rcParams["svg.hashsalt"] = "seqbook-roadmap"  # the same file for the same graph
    width, height = 2.4, 0.85
    where = {}
    for column, (_, chapters) in enumerate(parts):
        for row, chapter in enumerate(chapters):
            where[chapter] = (column * 2.9, -row * 1.2 - 0.55 * (column % 2))
    fig, ax = plt.subplots(figsize=(10, 7))
    for chapter, requires in kept.items():
        for before in requires:
            (x0, y0), (x1, y1) = where[before], where[chapter]
            same = x0 == x1
            start = (x0, y0 - height / 2) if same else (x0 + width / 2, y0)
            end = (x1, y1 + height / 2) if same else (x1 - width / 2, y1)
            ax.add_patch(FancyArrowPatch(
                start, end, arrowstyle="-|>", mutation_scale=11, color="#555555",
                linewidth=0.9, connectionstyle="arc3,rad=0.0" if same else "arc3,rad=0.12",
                shrinkA=2, shrinkB=2, zorder=1))
    for chapter, (x, y) in where.items():
        mark = MARKS[chapter]
        ax.add_patch(FancyBboxPatch(
            (x - width / 2, y - height / 2), width, height, boxstyle="round,pad=0.04",
            facecolor=COLOURS[mark], edgecolor="black", linewidth=0.6, zorder=2))
        label = textwrap.fill(f"{numbers[chapter]}. {SHORT[chapter]}", 15)
        ax.text(x, y, label, ha="center", va="center", fontsize=10.5, zorder=3,
                linespacing=1.1,
                color="white" if mark == "core" else "black")
    for column, (caption, _) in enumerate(parts):
        ax.text(column * 2.9, 0.75, textwrap.fill(caption, 14), ha="center", va="bottom",
                fontsize=10.5, fontweight="bold")
    ax.legend(handles=[Patch(facecolor=COLOURS[m], edgecolor="black", label=MARK_TEXT[m])
                       for m in COLOURS], loc="lower right", fontsize=10.5, frameon=False)
    ax.set_xlim(-1.4, 2.9 * (len(parts) - 1) + 1.4)
    lowest = min(y for _, y in where.values())
    ax.set_ylim(lowest - 0.8, 1.6)
    ax.set_axis_off()
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, format="svg", metadata={"Date": None})
    plt.close(fig)


# Titles too long for a box of the figure (the page's table gives the full ones).
SHORT = {
    "sequences": "Sequences", "vanishing_gradients": "Vanishing gradients",
    "deep_rnn": "Deep and bidirectional", "attention": "Attention",
    "seq2seq": "Seq2seq with attention", "transformer": "Transformers",
    "language_model": "Decoder-only LM", "architecture_costs": "Architecture costs",
    "hopfield": "Hopfield networks", "attractor": "Attractor network",
    "energy_transformer": "Energy Transformer", "linear_attention": "Linear attention",
    "ssm": "State-space models", "recall_and_cost": "Recall and cost",
    "rnn": "Recurrent networks", "lstm": "LSTM", "gru": "GRU",
    "decoding_bleu": "Decoding and BLEU", "xlstm": "xLSTM",
}


def page() -> tuple[str, dict]:
    """The page's text, and what the figure needs."""
    parts = toc()
    order = [c for _, chapters in parts for c in chapters]
    unknown = set(order) ^ set(MARKS)
    if unknown or set(SHORT) != set(order):
        raise SystemExit(f"MARKS and SHORT must name every chapter: {sorted(unknown)}")
    numbers = {c: i + 1 for i, c in enumerate(order)}
    edges = {c: prerequisites(c) for c in order}
    for chapter, before in edges.items():
        later = [p for p in before if numbers.get(p, 0) >= numbers[chapter]]
        if later:
            raise SystemExit(f"{chapter} names later chapters as prerequisites: {later}")
    for chapter, before in edges.items():  # the core path needs nothing off it
        off_path = [p for p in before if MARKS[p] != "core"]
        if MARKS[chapter] == "core" and off_path:
            raise SystemExit(f"core chapter {chapter} needs chapters off the core path: "
                             f"{off_path}")
    kept = reduced(edges)
    link = {c: f"{{doc}}`{c}`" for c in order}
    read = minutes()
    if set(read) != set(order):
        raise SystemExit("book/reading_minutes.json must time every chapter: make book, "
                         "then python tools/roadmap.py --measure")
    core_minutes = sum(read[c] for c in order if MARKS[c] == "core")
    drawn = "; ".join(f"{numbers[c]} after {', '.join(str(numbers[p]) for p in ps)}"
                      for c, ps in kept.items() if ps)
    lines = [
        "(roadmap)=",
        "# Roadmap",
        "",
        "The chapters build on each other, but not in a single line. The figure shows",
        "which chapters each one needs, as the chapters themselves state it in the",
        "\"In this chapter\" box under their titles, and the table marks every chapter:",
        "",
        "- **core**: the path through the book's ideas, in order; read these first;",
        "- **optional**: a chapter that deepens one idea of the core path (the xLSTM, a",
        "  recall benchmark of the new recurrent memories); skip it on a first reading;",
        "- **research reproduction**: a chapter that reproduces a recent paper's results",
        "  and tests its claims, for seminars and projects once the core is done.",
        "",
        "What each chapter finds, rather than what it needs, is on the {doc}`results`",
        "page: its key result in one line, with the number it measured.",
        "",
        "The minutes are those of a chapter's main thread, the text a reader meets",
        "without opening anything: prose at 200 words a minute, half a minute per",
        "figure and per display equation, two seconds per line of code shown. The",
        "evidence folded beside the sentences, the exercises' solutions and the",
        "\"Going further\" sections come on top, for the reader who wants them. The core",
        f"path reads in about {core_minutes / 60:.0f} hours, running the code aside.",
        "",
        "```{figure} images/roadmap.svg",
        ":name: fig-roadmap",
        ":width: 100%",
        f":alt: The book's chapters as boxes in six columns, one per part; an arrow runs "
        f"from a chapter to each chapter that needs it directly (chapter {drawn}). "
        "Core chapters are dark blue, optional ones light blue, research reproductions "
        "orange.",
        "",
        "Which chapter needs which. An arrow runs from a chapter to one that builds on it;",
        "a prerequisite reached through another one is left out of the drawing (the",
        "table lists them all). Dark blue: the core path; light blue: optional; orange:",
        "research reproductions.",
        "```",
        "",
        "| chapter | | minutes | needs |",
        "| --- | --- | ---: | --- |",
    ]
    for c in order:
        needs = ", ".join(link[p] for p in edges[c]) or "nothing before it"
        lines.append(f"| {numbers[c]}. {link[c]} | {MARK_TEXT[MARKS[c]]} | {read[c]:.0f} "
                     f"| {needs} |")
    week_of = {c: week for week, chapters in enumerate(COURSE, 1) for c in chapters}
    lines += [
        "",
        "## A ten-week course",
        "",
        "One way to teach the core path in ten weeks, a chapter or two a week. The",
        "encoder-decoder is built in {doc}`seq2seq`: a class that meets attention in",
        f"week {week_of['attention']} should first see that chapter's first sections, on",
        "the encoder-decoder with a fixed context.",
        "",
        "| week | chapters | minutes of reading |",
        "| --- | --- | ---: |",
    ]
    for week, chapters in enumerate(COURSE, 1):
        named = ", ".join(f"{link[c]}" + ("" if MARKS[c] == "core" else " (optional)")
                          for c in chapters)
        # a chapter taught over two weeks is read over both
        weeks = {c: sum(c in w for w in COURSE) for c in chapters}
        lines.append(f"| {week} | {named} | "
                     f"{sum(read[c] / weeks[c] for c in chapters):.0f} |")
    research = [c for c in order if MARKS[c] == "research"]
    lines += [
        "",
        f"The research reproductions ({', '.join(link[c] for c in research)}) suit a",
        f"seminar or a project after week {week_of['hopfield']}, once {{doc}}`hopfield`",
        "has been read.",
        "",
    ]
    return "\n".join(lines), {"parts": parts, "numbers": numbers, "kept": kept}


def measure() -> None:
    """book/reading_minutes.json from the built chapters (make book first)."""
    import json

    order = [c for _, chapters in toc() for c in chapters]
    missing = [c for c in order if not (HTML / f"{c}.html").exists()]
    if missing:
        raise SystemExit(f"not built: {missing}; run make book first")
    read = {c: round(main_thread_minutes(HTML / f"{c}.html"), 1) for c in order}
    MINUTES.write_text(json.dumps(read, indent=1) + "\n", encoding="utf-8")


def main() -> int:
    if "--measure" in sys.argv:
        measure()
    text, figure = page()
    PAGE.write_text(text, encoding="utf-8")
    draw(figure["parts"], figure["numbers"], figure["kept"], FIGURE)
    print(f"wrote {PAGE.relative_to(ROOT)} and {FIGURE.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
