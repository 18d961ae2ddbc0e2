"""The "Main results" page (book/results.md): one line per chapter, numbers glued from it.

The page is plain MyST Markdown, not executed: every number on it is pasted from the
chapter of its line with myst-nb's cross-document form {glue:text}`<chapter>.md::key:fmt`.
In myst-nb 1.4 the document is a path relative to the page, with its suffix (without it
the reference is "not found"), and the format spec cannot be left out: the role splits
the spec off at the last colon, so `lstm.md::key` would read as key `lstm.md:`.
"""

from __future__ import annotations

import re

import yaml

from book_files import BOOK, ROOT, code_cells

PAGE = BOOK / "results.md"
ITEM = re.compile(r"^(\d+)\. (.*)$", re.M)
LINK = re.compile(r"\{(doc|ref)\}`(?:[^`<]*<([^`>]+)>|([^`]+))`")
GLUE = re.compile(r"\{glue(?::(\w+))?\}`([^`]*)`")
LABEL = re.compile(r"^\(([\w-]+)\)=$", re.M)


def numbered_chapters() -> list[str]:
    """The chapters of _toc.yml's numbered parts, in the book's order."""
    parts = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))["parts"]
    return [entry["file"].removeprefix("book/") for part in parts if part.get("numbered")
            for entry in part["chapters"]]


CHAPTERS = numbered_chapters()


def chapter_text(chapter: str) -> str:
    return (BOOK / f"{chapter}.md").read_text(encoding="utf-8")


def labels() -> dict[str, str]:
    """Each label that a chapter defines, with that chapter."""
    return {label: chapter for chapter in CHAPTERS
            for label in LABEL.findall(chapter_text(chapter))}


def linked_chapters(text: str) -> list[str]:
    """The chapters that ``text`` links, in order: {doc} by name, {ref} by label."""
    found, owner = [], labels()
    for role, explicit, plain in LINK.findall(text):
        target = explicit or plain
        chapter = target if role == "doc" else owner.get(target)
        if chapter in CHAPTERS:
            found.append(chapter)
    return found


def pasted(text: str) -> list[tuple[str, str, str, str]]:
    """Every glue role of ``text`` as (role, document, key, format spec), split the way
    myst-nb's {glue:text} splits it."""
    found = []
    for role, content in GLUE.findall(text):
        rest, _, spec = content.rpartition(":")
        document, _, key = rest.partition("::")
        found.append((role or "any", document, key, spec))
    return found


def items() -> list[tuple[int, str]]:
    return [(int(number), line) for number, line in ITEM.findall(PAGE.read_text("utf-8"))]


def test_the_results_page_is_a_plain_page_listed_after_the_roadmap_and_notation():
    text = PAGE.read_text(encoding="utf-8")
    assert text.startswith("(results)=\n# Main results\n"), "a label, then the title"
    assert "kernelspec:" not in text, "the page is not executed: it pastes, not glues"
    parts = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))["parts"]
    start = [entry["file"] for entry in parts[0]["chapters"]]
    assert start[:3] == ["book/roadmap", "book/notation", "book/results"], start


def test_the_results_page_has_one_line_per_chapter_in_the_books_order():
    lines = items()
    assert [n for n, _ in lines] == list(range(1, len(CHAPTERS) + 1)), \
        "one numbered line per chapter, numbered as the book numbers its chapters"
    for (number, line), chapter in zip(lines, CHAPTERS):
        assert linked_chapters(line) == [chapter], \
            f"line {number} must link {chapter} (and only it), once"
        assert "Evidence:" in line, f"line {number} names the section of its evidence"
    # and no chapter is linked anywhere else on the page
    assert linked_chapters(PAGE.read_text(encoding="utf-8")) == CHAPTERS


def test_every_number_on_the_results_page_is_glued_by_its_own_chapter():
    for number, line in items():
        chapter = CHAPTERS[number - 1]
        code = "\n".join(code_cells(BOOK / f"{chapter}.md"))
        prose = chapter_text(chapter)
        roles = pasted(line)
        assert roles, f"line {number} ({chapter}) glues no number from its chapter"
        for role, document, key, spec in roles:
            assert role == "text", f"{chapter}: paste numbers with {{glue:text}}"
            assert document == f"{chapter}.md", \
                f"line {number} pastes from {document!r}, not from {chapter}.md"
            assert re.search(rf"""glue\(\s*["']{key}["']""", code), \
                f"{key} is not glued in the code of book/{chapter}.md"
            # the chapter's own format; a key it pastes without one shows as 's'
            used = {found or "s" for found in re.findall(
                rf"\{{glue:text\}}`{key}(?::([^`]*))?`", prose)}
            assert spec in used, \
                f"{chapter}::{key} is pasted with '{spec}', the chapter with {sorted(used)}"


def sections(chapter: str) -> dict[str, set[str]]:
    """The chapter's sections (## and ### headings, and the labels set on them), each
    with the glue keys its prose pastes; a ## section holds its ### sections' keys."""
    found: dict[str, set[str]] = {}
    part: list[str] = []  # the names of the ## section, then of the ### one in it
    open_sections: list[str] = []
    label, fences = None, []  # open fences: (marker, whether it holds code)
    for line in chapter_text(chapter).splitlines():
        fence = re.match(r"^(`{3,}|~{3,})\s*(.*)$", line)
        if fence:
            marker, info = fence.groups()
            if fences and not info and marker.startswith(fences[-1][0]):
                fences.pop()
            elif not (fences and fences[-1][1]):
                # a code cell or a code block holds code; a directive ({figure},
                # {exercise}, ...) holds prose
                fences.append((marker, not info.startswith("{") or "code-cell" in info))
            continue
        if any(code for _, code in fences):
            continue
        heading = re.match(r"^(##|###) (.+)$", line)
        if heading:
            names = [heading[2]] + ([label] if label else [])
            if heading[1] == "##":
                part = names
            open_sections = part + names if heading[1] == "###" else names
            for name in names:
                found.setdefault(name, set())
        label = LABEL.match(line)[1] if LABEL.match(line) else None
        for key in re.findall(r"\{glue(?::\w+)?\}`([\w-]+)", line):
            for name in open_sections:
                found[name].add(key)
    return found


def test_each_results_line_names_the_sections_that_show_its_numbers():
    for number, line in items():
        chapter = CHAPTERS[number - 1]
        evidence = line.rpartition("Evidence:")[2]
        named = re.findall(r"\*([^*]+)\*", evidence) + re.findall(r"\{ref\}`([\w-]+)`",
                                                                  evidence)
        assert named, f"line {number} names no section of {chapter}"
        shown = sections(chapter)
        missing = [name for name in named if name not in shown]
        assert not missing, f"{chapter} has no section {missing}"
        keys = {key for _, _, key, _ in pasted(line)}
        elsewhere = keys - set().union(*(shown[name] for name in named))
        assert not elsewhere, f"{chapter} shows {sorted(elsewhere)} outside {named}"


def test_the_results_page_pastes_only_from_chapters():
    text = PAGE.read_text(encoding="utf-8")
    preamble = text.split("\n1. ", 1)[0]
    assert not GLUE.search(preamble), "numbers belong to the chapters' lines"
    assert len(pasted(text)) == sum(len(pasted(line)) for _, line in items())


def test_the_roadmap_links_the_results_page():
    assert "{doc}`results`" in (BOOK / "roadmap.md").read_text(encoding="utf-8")
