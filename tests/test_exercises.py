"""The exercises: a difficulty mark on every one, a "Build it" in every core chapter.

Marks (CONTRIBUTING.md, "Exercises"): ★☆☆ a few minutes, checks understanding;
★★☆ up to an hour: derive, implement or measure; ★★★ a small project. A "Build it"
exercise asks the reader to write a chapter's kernel from its equations; its solution
writes the function out and compares it with the package or with torch
(``torch.testing.assert_close``) on seeded random inputs, in an executed code cell.
"""

from __future__ import annotations

import ast
import re

import pytest

from book_files import BOOK, chapters, notebook

MARKS = ("★☆☆", "★★☆", "★★★")
CORE = ("sequences", "rnn", "vanishing_gradients", "lstm", "gru", "deep_rnn", "attention",
        "seq2seq", "decoding_bleu", "transformer", "language_model", "architecture_costs",
        "hopfield", "linear_attention", "ssm")
EXERCISE = re.compile(r"^(`{3,})\{exercise\}([^\n]*)\n:label: (\S+)", re.M)
PAGES = sorted(BOOK.glob("*.md"))


def exercises(text: str) -> dict[str, str]:
    """Label -> title (the directive's argument) of every exercise of a page."""
    return {label: title.strip() for _, title, label in EXERCISE.findall(text)}


def solution_code(chapter, label: str) -> list[str]:
    """The executed code cells of the solution of exercise ``label``."""
    cells, inside, found = notebook(chapter).cells, False, []
    for cell in cells:
        if cell.cell_type == "markdown":
            if re.search(r"```\{solution-start\} " + re.escape(label) + r"\s", cell.source):
                inside = True
            if inside and "{solution-end}" in cell.source.split(label)[-1]:
                inside = False
        elif inside:
            found.append(cell.source)
    return found


def _head(node: ast.AST, values: dict[str, ast.AST], seen: tuple = ()) -> str | None:
    """The function whose result an expression is: ``f`` for ``f(x)[0].T``, and for a
    name, the function of the value last assigned to it (None for anything else)."""
    while isinstance(node, (ast.Attribute, ast.Subscript)):
        node = node.value
    if isinstance(node, ast.Call):
        return getattr(node.func, "id", getattr(node.func, "attr", None))
    if isinstance(node, ast.Name) and node.id in values and node.id not in seen:
        return _head(values[node.id], values, seen + (node.id,))
    return None


def compares_own_code_with_a_reference(source: str) -> bool:
    """Whether an ``assert_close`` call compares the result of a function the cell
    defines (the reader's) with the result of one it does not (the reference)."""
    tree = ast.parse(source)
    own = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
    values: dict[str, ast.AST] = {}
    for node in sorted((n for n in ast.walk(tree) if isinstance(n, ast.Assign)),
                       key=lambda n: n.lineno):
        for target in node.targets:
            for name in ast.walk(target):
                if isinstance(name, ast.Name):
                    values[name.id] = node.value
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and len(node.args) >= 2
                and getattr(node.func, "attr", getattr(node.func, "id", "")) == "assert_close"):
            mine, theirs = (_head(arg, values) in own for arg in node.args[:2])
            if mine != theirs:
                return True
    return False


def test_there_are_exercises_and_the_core_chapters_exist():
    stems = {c.stem for c in chapters()}
    assert set(CORE) <= stems, set(CORE) - stems
    assert sum(len(exercises(p.read_text(encoding="utf-8"))) for p in PAGES) > 50


@pytest.mark.parametrize("page", PAGES, ids=[p.stem for p in PAGES])
def test_every_exercise_title_starts_with_its_difficulty(page):
    unmarked = [f"{label}: {title!r}"
                for label, title in exercises(page.read_text(encoding="utf-8")).items()
                if not (title.startswith(MARKS) and len(title) > len(MARKS[0]) + 1)]
    assert not unmarked, ("titles must start with ★☆☆, ★★☆ or ★★★ and a short title:\n"
                          + "\n".join(unmarked))


@pytest.mark.parametrize("stem", CORE)
def test_core_chapter_has_a_build_it_exercise_checked_against_a_reference(stem):
    chapter = BOOK / f"{stem}.md"
    build_its = [label for label, title in exercises(chapter.read_text(encoding="utf-8")).items()
                 if "Build it" in title]
    assert build_its, "no exercise titled '... Build it: ...'"
    checked = [label for label in build_its
               if any(compares_own_code_with_a_reference(code)
                      for code in solution_code(chapter, label))]
    assert checked, (f"{build_its}: no solution code cell compares the reader's function "
                     "with a reference (torch.testing.assert_close)")


def test_the_scale_is_stated_for_authors_and_readers():
    for path in (BOOK.parent / "CONTRIBUTING.md", BOOK / "preface.md"):
        text = path.read_text(encoding="utf-8")
        assert all(mark in text for mark in MARKS), f"{path.name} does not state the scale"
