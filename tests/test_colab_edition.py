"""The Colab edition (notebooks/*.ipynb) as a reader meets it: plain Markdown, the page's
code and no more, solutions folded, the install pinned. Checks that need the built book
(printed numbers, equation numbers, links) are in test_built_html.py and test_browser.py."""

from __future__ import annotations

import json
import re

import jupytext
import nbformat
import pytest

from book_files import NOTEBOOKS, chapters
from colab_edition import package_commit, parser, stale_twins

CHAPTERS = chapters()
IDS = [c.stem for c in CHAPTERS]
HIDDEN_TAGS = {"remove-cell", "remove-input", "hide-input"}


def twin(chapter) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{chapter.stem}.ipynb", as_version=4)


def test_notebooks_are_the_colab_edition_of_the_chapters():
    problems = stale_twins()
    assert not problems, "run `make notebooks`:\n" + "\n".join(problems)


def myst_left(markdown: str) -> list[str]:
    """MyST syntax in a Markdown cell, found by MyST's own parser (and its fences' text)."""
    found = []
    for token in parser().parse(markdown):
        if token.type in ("myst_target", "math_block_label", "colon_fence", "myst_line_comment"):
            found.append(f"{token.type}: {token.content[:40]!r}")
        if token.type == "fence" and token.info.strip().startswith("{"):
            found.append(f"directive {token.info.strip()}")
        found += [f"role {c.meta['name']}: {c.content!r}" for c in token.children or []
                  if c.type == "myst_role"]
    found += [f"{marker!r} in the text" for marker in (":::", "```{", "{glue") if marker in
              " ".join(t.content for t in parser().parse(markdown) if t.type == "inline")]
    return found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_no_markdown_cell_holds_myst_syntax(chapter):
    left = [f"cell {i}: {item}" for i, cell in enumerate(twin(chapter).cells)
            if cell.cell_type == "markdown" for item in myst_left(cell.source)]
    assert not left, "\n".join(left[:10])


def test_the_check_finds_myst_syntax():  # the test above can fail
    found = myst_left("(sec-x)=\n# T\n\nSee {eq}`eq-a` and {glue:text}`n:.2f`.\n\n"
                      "```{exercise}\n:label: ex\n\nDo it.\n```\n\n$$\nx\n$$ (eq-a)\n")
    assert len(found) >= 5, found


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_solutions_are_folded_and_their_code_collapsed(chapter):
    cells = twin(chapter).cells
    markdown = "\n".join(c.source for c in cells if c.cell_type == "markdown")
    exercises = re.findall(r"^#### Exercise (\d+\.\d+)", markdown, re.M)
    solutions = re.findall(r"<details><summary>Solution to Exercise (\d+\.\d+)</summary>",
                           markdown)
    assert exercises and exercises == solutions, (exercises, solutions)
    for cell in cells:
        if cell.cell_type == "markdown":  # every <details> closes in its own cell
            assert cell.source.count("<details>") == cell.source.count("</details>"), cell.source
        elif cell.source.startswith("#@title Solution code"):
            assert is_collapsed(cell), cell.source[:80]


def is_collapsed(cell) -> bool:
    return (cell.metadata.get("cellView") == "form"
            and cell.metadata.get("jupyter", {}).get("source_hidden") is True
            and cell.source.startswith("#@title "))


def shown_lines(cells, collapsed) -> int:
    return sum(len(c.source.splitlines()) for c in cells if c.cell_type == "code"
               and not collapsed(c))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_a_reader_sees_the_code_the_page_shows_and_no_more(chapter):
    # the chapter's code cells and the twin's, in the same order: hidden, folded and
    # solution cells collapsed, the others open
    page = [c for c in jupytext.read(chapter, fmt="md:myst").cells if c.cell_type == "code"]
    code = [c for c in twin(chapter).cells if c.cell_type == "code"]
    assert len(page) == len(code)
    for source, cell in zip(page, code):
        hidden = bool(HIDDEN_TAGS & set(source.metadata.get("tags", [])))
        in_solution = cell.source.startswith("#@title Solution code")
        assert is_collapsed(cell) == (hidden or in_solution), cell.source[:80]
        if ("claim(" in source.source and "remove-cell" in source.metadata.get("tags", [])
                and not in_solution):
            assert cell.source.startswith("#@title Check the page's claims")
    assert shown_lines(code, is_collapsed) == shown_lines(
        [c for c, t in zip(page, code) if not t.source.startswith("#@title Solution")],
        lambda c: HIDDEN_TAGS & set(c.metadata.get("tags", [])))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_the_install_cell_pins_the_commit_of_the_package(chapter):
    notebook = twin(chapter)
    first = next(c for c in notebook.cells if c.cell_type == "code")
    commit = package_commit()
    assert f'COMMIT = "{commit}"' in first.source and is_collapsed(first)
    assert "seqbook @ git+https://github.com/" in first.source and "@{COMMIT}" in first.source
    assert notebook.metadata["seqbook"]["commit"] == commit
    assert json.loads(json.dumps(notebook.metadata["seqbook"]["glue"]))  # printed values
