"""Book-level checks that need no build: structure, twins, labels, citations, glue."""

from __future__ import annotations

import ast
import functools
import json
import re

import pytest

import claims_ledger  # tools/, on pytest's pythonpath (pyproject.toml)
from book_files import (
    BOOK,
    ROOT,
    chapters,
    code_cells,
    config,
    notebook,
    repository_url,
    toc_files,
)

CHAPTERS = chapters()
CHAPTER_IDS = [c.stem for c in CHAPTERS]


def test_there_are_chapters():
    # Guards every parametrized test below (and `pytest --nbval-lax notebooks/`) from
    # passing vacuously on an empty book.
    assert CHAPTERS, "book/ has no executable chapters"


def test_toc_and_book_agree():
    listed = set(toc_files())
    on_disk = {f"book/{p.stem}" for p in BOOK.glob("*.md")}
    assert listed <= on_disk, f"_toc.yml names missing files: {sorted(listed - on_disk)}"
    assert on_disk <= listed, f"book/ files missing from _toc.yml: {sorted(on_disk - listed)}"


def test_repository_url_is_a_github_repository():
    assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+", repository_url())
    assert config()["only_build_toc_files"] is True


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_first_code_cell_installs_seqbook_only_where_missing(chapter):
    first = code_cells(chapter)[0]
    assert re.search(r"^try:\n\s+import seqbook\n", first, re.M), first
    assert "except ImportError:" in first
    # the install spec defaults to the repository of _config.yml and can be overridden
    assert f'"seqbook @ git+{repository_url()}"' in first
    assert 'os.environ.get("SEQBOOK_PIP_SPEC"' in first
    for line in first.splitlines():
        if "%pip install" in line:  # every version specifier / spec is quoted
            assert re.search(r'%pip install -q "[^"]+"\s*$', line), line


OPENING = re.compile(
    r"^# [^\n]+\n\n:::\{admonition\} In this chapter\n:class: objectives\n\n"
    r"After this chapter you can\n\n((?:- [^\n]+\n(?:  [^\n]+\n)*)+)\n"
    r"\*\*Prerequisites:\*\* (.+?)\n\n(?:\*\*Practical rule:\*\* .+?\n)?:::\n", re.M | re.S)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_opens_with_its_objectives_and_prerequisites(chapter):
    """Under its title, 3-5 objectives, the prerequisites (earlier chapters only) and,
    where it has one, its practical rule; and no number, since none is glued there."""
    opening = OPENING.search(chapter.read_text(encoding="utf-8"))
    assert opening, "the title is not followed by the 'In this chapter' box"
    objectives = re.findall(r"^- ", opening.group(1), re.M)
    assert 3 <= len(objectives) <= 5, f"{len(objectives)} objectives"
    order = [f.removeprefix("book/") for f in toc_files()]
    earlier = order[:order.index(chapter.stem)]
    cited = re.findall(r"\{doc\}`([\w-]+)`", opening.group(2))
    assert set(cited) <= set(earlier), f"prerequisites that come later: {set(cited) - set(earlier)}"
    assert not re.search(r"\{glue", opening.group(0))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_code_fits_the_page(chapter):
    # The book's text column shows about 80 characters of code; longer lines are cut
    # off behind a scroll bar in the HTML.
    too_long = [
        line for cell in code_cells(chapter) for line in cell.splitlines() if len(line) > 80
    ]
    assert not too_long, "code lines over 80 characters:\n" + "\n".join(too_long)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_checks_its_claims_through_the_claim_helper(chapter):
    # One way to state a claim (seqbook.claims.claim): a bare assert would stop a
    # reader's run instead of showing a note, and the ledger would not see it.
    asserts = [f"cell {n}: {ast.unparse(node)[:70]}" for n, tree in enumerate(_cell_trees(chapter))
               for node in ast.walk(tree) if isinstance(node, ast.Assert)]
    assert not asserts, "check with claim(...), not assert:\n" + "\n".join(asserts)
    hidden = [c for c in notebook(chapter).cells if c.cell_type == "code"
              and "remove-cell" in c.metadata.get("tags", [])]
    assert sum("claim(" in cell.source for cell in hidden) >= 3, "too few hidden claims"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_every_claim_quotes_words_of_its_page(chapter):
    # The ledger page links each claim to the words it backs with a text fragment
    # (page.html#:~:text=...): plain words, verbatim in the chapter's prose (Sphinx
    # turns quotes, dashes and "..." into typographic ones, which would not match).
    prose = " ".join(" ".join(c.source.split()) for c in notebook(chapter).cells
                     if c.cell_type == "markdown")
    for call in _claim_calls(chapter):
        quote = next((k.value for k in call.keywords if k.arg == "quote"), None)
        assert isinstance(quote, ast.Constant), f"{ast.unparse(call)[:80]}: no quote='...'"
        words = quote.value
        assert re.fullmatch(r"[A-Za-z0-9 ,;:()?%=+/-]+", words) and "--" not in words, (
            f"quote {words!r}: plain words only")
        assert " ".join(words.split()) in prose, f"quote {words!r} is not in the prose"


def test_claim_statements_are_unique_in_the_book():
    # the ledger and a reader's note find a claim by its statement
    where: dict[str, str] = {}
    for chapter in CHAPTERS:
        for statement in {s for s in map(_statement, _claim_calls(chapter)) if s}:
            assert statement not in where, f"{statement!r}: {where[statement]} and {chapter.stem}"
            where[statement] = chapter.stem


def test_the_ledger_covers_every_claim_and_every_claim_held_with_its_margin():
    ledger = json.loads((ROOT / "seqbook" / "claims.json").read_text(encoding="utf-8"))
    rows = {(r["chapter"], r["statement"]) for r in ledger["claims"]}
    missing = [f"{c.stem}: {s}" for c in CHAPTERS for s in map(_statement, _claim_calls(c))
               if s and (c.stem, s) not in rows]
    assert not missing, "run `make claims` for these:\n" + "\n".join(missing)
    assert not claims_ledger.problems(ledger["claims"], {c: i["errors"] for c, i in
                                                         ledger["chapters"].items()})
    page = (BOOK / "claims.md").read_text(encoding="utf-8")
    assert page == claims_ledger.page(ledger), "run `python tools/claims_ledger.py --page`"
    # the page links each claim to its quote: the chapter's, not the one of the trial
    quotes = {(c.stem, _statement(call)): next(k.value.value for k in call.keywords
                                               if k.arg == "quote")
              for c in CHAPTERS for call in _claim_calls(c) if _statement(call)}
    stale = [f"{r['chapter']}: {r['statement']}: {r['quote']!r}, now {quotes[key]!r}"
             for r in ledger["claims"]
             if (key := (r["chapter"], r["statement"])) in quotes and r["quote"] != quotes[key]]
    assert not stale, "the ledger quotes words the chapter no longer has:\n" + "\n".join(stale)


@functools.cache  # read by several tests, each over every chapter
def _cell_trees(chapter) -> tuple[ast.Module, ...]:
    # IPython's magics (%pip) become the Python that IPython itself runs
    from IPython.core.inputtransformer2 import TransformerManager

    return tuple(ast.parse(TransformerManager().transform_cell(cell))
                 for cell in code_cells(chapter))


def _claim_calls(chapter) -> list[ast.Call]:
    return [node for tree in _cell_trees(chapter) for node in ast.walk(tree)
            if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "claim"]


def _statement(call: ast.Call) -> str | None:
    """The statement of a claim call, where it is a literal (not an f-string)."""
    first = call.args[0] if call.args else None
    return first.value if isinstance(first, ast.Constant) else None


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_chapter_ends_with_exercises_that_all_have_solutions(chapter):
    text = chapter.read_text(encoding="utf-8")
    exercises = re.findall(r"```\{exercise\}[^\n]*\n:label: (\S+)", text)
    solutions = re.findall(r"```\{solution(?:-start)?\} (\S+)", text)
    assert exercises, "no exercises"
    assert sorted(exercises) == sorted(solutions), "every exercise needs exactly one solution"
    assert re.search(r"^## Exercises", text, re.M)
    assert text.count(":class: dropdown") >= len(solutions), "solutions must be hidden in dropdowns"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_every_glued_name_in_the_prose_is_glued_by_the_code(chapter):
    text = chapter.read_text(encoding="utf-8")
    used = set(re.findall(r"\{glue(?::\w+)?\}`([\w-]+)", text))
    defined = set(re.findall(r"""glue\(\s*["']([\w-]+)["']""", text))
    assert used, "a chapter should glue its numbers into the prose"
    assert used <= defined, f"glued in the prose but never computed: {sorted(used - defined)}"


def book_equation_labels() -> set[str]:
    labels = set()
    for page in BOOK.glob("*.md"):
        text = page.read_text(encoding="utf-8")
        labels |= set(re.findall(r"\$\$\s*\((eq-[\w-]+)\)", text))
        labels |= set(re.findall(r"^:label: (eq-[\w-]+)", text, re.M))
    return labels


def test_equation_labels_cited_in_the_package_exist_in_the_book():
    labels = book_equation_labels()
    cited = {}
    for path in (ROOT / "seqbook").rglob("*.py"):
        for label in re.findall(r"#.*?\((eq-[\w-]+)\)", path.read_text(encoding="utf-8")):
            cited.setdefault(label, path.relative_to(ROOT).as_posix())
    missing = {label: where for label, where in cited.items() if label not in labels}
    assert not missing, f"equation labels cited in seqbook/ but absent from book/: {missing}"


def test_equation_labels_are_unique_across_the_book():
    seen: dict[str, str] = {}
    for page in sorted(BOOK.glob("*.md")):
        for label in re.findall(r"\$\$\s*\((eq-[\w-]+)\)", page.read_text(encoding="utf-8")):
            assert label not in seen, f"{label} defined in {seen[label]} and {page.name}"
            seen[label] = page.name


def test_every_dollar_of_the_prose_opens_or_closes_an_equation():
    """An inline equation broken over two lines, the second starting with "+ " or "- ",
    is a list item that interrupts the paragraph (CommonMark), in the book and in its
    twin: the reader sees raw LaTeX and text set as math."""
    from colab_edition import parser  # the book's MyST parser, with its dollar math

    broken = [f"{page.name}, lines {token.map[0] + 1}-{token.map[1]}: {child.content[:60]!r}"
              for page in sorted(BOOK.glob("*.md"))
              for token in parser().parse(page.read_text(encoding="utf-8"))
              for child in token.children or []
              if child.type == "text" and "$" in child.content]
    assert not broken, "a $ that is not an equation's:\n" + "\n".join(broken)


def test_every_citation_is_in_the_bibliography():
    bib = (BOOK / "references.bib").read_text(encoding="utf-8")
    keys = set(re.findall(r"^@\w+\{([^,]+),", bib, re.M))
    cited = set()
    for page in BOOK.glob("*.md"):
        for group in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", page.read_text(encoding="utf-8")):
            cited |= {key.strip() for key in group.split(",")}
    assert cited, "the book cites nothing"
    assert cited <= keys, f"cited but not in references.bib: {sorted(cited - keys)}"


def test_environment_contract():
    requirements = (ROOT / "requirements.txt").read_text(encoding="utf-8")
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r"^torch==2\.13\.0$", requirements, re.M)
    assert re.search(r"^jupyter-book==1\.", requirements, re.M)
    assert re.search(r"^-e \.$", requirements, re.M)
    assert '"torch>=2.1"' in pyproject  # loose: Colab keeps its own torch


# --- the page shows the code it runs ---------------------------------------------------

_IMPLEMENTS = re.compile(r"\bimplement(s|ed)?\b", re.I)


def _implements_sentences(markdown: str) -> list[str]:
    """Sentences that say a seqbook object implements something."""
    prose = re.sub(r"```.*?```", "", markdown, flags=re.S)  # admonitions' code fences
    sentences = re.split(r"(?<=[.!?])\s+", prose.replace("\n", " "))
    return [s for s in sentences if _IMPLEMENTS.search(s) and "seqbook." in s]


def _show_source_calls(chapter) -> list[tuple[int, str]]:

    return [
        (i, cell.source) for i, cell in enumerate(notebook(chapter).cells)
        if cell.cell_type == "code" and "show_source(" in cell.source
    ]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_every_implements_sentence_is_followed_by_the_shown_source(chapter):

    cells = notebook(chapter).cells
    missing = []
    for index, cell in enumerate(cells):
        if cell.cell_type != "markdown":
            continue
        for sentence in _implements_sentences(cell.source):
            following = [
                c for c in cells[index + 1 :]
                if c.cell_type == "code" and "remove-cell" not in c.metadata.get("tags", [])
            ]
            if not following or "show_source(" not in following[0].source:
                missing.append(sentence[:120])
    assert not missing, (
        "these sentences are not followed by show_source(...):\n" + "\n".join(missing)
    )


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_shown_source_is_displayed_without_its_calling_code(chapter):
    for index, source in _show_source_calls(chapter):

        tags = notebook(chapter).cells[index].metadata.get("tags", [])
        assert "remove-input" in tags, f"cell {index}: tag show_source cells remove-input"
        last = source.strip().splitlines()[-1]
        assert "show_source(" in last, f"cell {index}: show_source must be the last line"


# --- the shown code reads like its equation ---------------------------------------------

#: The longest body (non-blank lines below the signature) a shown function may have.
MAX_SHOWN_BODY = 15
#: The most snippets, over the whole book, cut out of a function with start=/stop=.
MAX_CUT_SNIPPETS = 10


def _chapter_namespace(chapter) -> dict:
    """The chapter's own seqbook imports (and show_source), to name objects as it does."""
    from seqbook.notebook import show_source

    namespace: dict = {"show_source": show_source}
    for source in code_cells(chapter):
        try:
            tree = ast.parse(source)
        except SyntaxError:  # IPython magics
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("seqbook"):
                exec(compile(ast.Module([node], []), str(chapter), "exec"), namespace)
            elif isinstance(node, ast.Import) and all(
                a.name.startswith("seqbook") for a in node.names
            ):
                exec(compile(ast.Module([node], []), str(chapter), "exec"), namespace)
    return namespace


def _shown_snippets(chapter) -> list[tuple[str, object, bool]]:
    """``(call, snippet, cut)`` for every show_source call of the chapter.

    The call is evaluated in a namespace holding the chapter's own seqbook imports, so
    that it names the object exactly as the page does.
    """
    namespace = _chapter_namespace(chapter)
    shown = []
    for _, source in _show_source_calls(chapter):
        call = source.strip().splitlines()[-1]
        parsed = ast.parse(call, mode="eval").body
        cut = any(k.arg in ("start", "stop") for k in parsed.keywords)
        shown.append((call, eval(call, namespace), cut))
    return shown


def _body_lines(code: str) -> int:
    """Non-blank lines of a shown function below its signature (all of them if cut)."""
    import ast
    import textwrap

    lines = code.splitlines()
    try:
        tree = ast.parse(textwrap.dedent(code))
    except SyntaxError:  # a cut: every line is body
        return sum(bool(line.strip()) for line in lines)
    node = tree.body[0] if len(tree.body) == 1 else None
    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        first = node.body[0].lineno - 1
        return sum(bool(line.strip()) for line in lines[first:])
    return sum(bool(line.strip()) for line in lines)


def _private(dotted: str) -> bool:
    """A name with a part that starts with one underscore (dunders are public)."""
    return any(part.startswith("_") and not part.startswith("__")
               for part in dotted.split("."))


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_the_page_shows_the_public_code_the_reader_calls(chapter):
    # what a chapter shows under its equations is a function or method the reader can
    # call, not a private kernel behind it
    import inspect

    namespace, private = _chapter_namespace(chapter), []
    for call, _, _ in _shown_snippets(chapter):
        target = ast.unparse(ast.parse(call, mode="eval").body.args[0])
        shown = inspect.unwrap(eval(target, namespace))
        shown = getattr(shown, "fget", shown)  # a property's getter
        name = f"{getattr(shown, '__module__', '')}.{getattr(shown, '__qualname__', '')}"
        if _private(name):
            private.append((call, name))
    assert not private, f"private code shown: {private}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_no_visible_cell_imports_a_private_name(chapter):
    # a reader copies the visible cells: they use the package's public names only
    # (the hidden checks, tagged remove-cell, may reach inside)
    found = []
    for cell in notebook(chapter).cells:
        if cell.cell_type != "code" or "remove-cell" in cell.metadata.get("tags", []):
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:  # IPython magics
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("seqbook"):
                found += [f"{node.module}.{a.name}" for a in node.names
                          if _private(f"{node.module}.{a.name}")]
            elif isinstance(node, ast.Attribute) and node.attr.startswith("_") \
                    and not node.attr.startswith("__"):
                base = node.value
                if isinstance(base, ast.Name) and base.id == "seqbook":
                    found.append(f"seqbook.{node.attr}")
    assert not found, f"private names in visible cells: {sorted(set(found))}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_shown_functions_are_short(chapter):
    long = [(call, _body_lines(snippet.code)) for call, snippet, _ in _shown_snippets(chapter)
            if _body_lines(snippet.code) > MAX_SHOWN_BODY]
    assert not long, f"shown bodies over {MAX_SHOWN_BODY} lines: {long}"


def test_few_snippets_are_cut_out_of_a_function():
    cuts = []
    for chapter in CHAPTERS:
        for (call, _, cut), (_, source) in zip(
            _shown_snippets(chapter), _show_source_calls(chapter), strict=True
        ):
            if not cut:
                continue
            cuts.append(f"{chapter.stem}: {call}")
            # a cut says why a whole function could not serve
            assert re.search(r"^\s*#", source, re.M), f"{chapter.stem}: no reason for {call}"
    assert len(cuts) <= MAX_CUT_SNIPPETS, f"{len(cuts)} cut snippets:\n" + "\n".join(cuts)


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_shown_code_fits_the_page(chapter):
    # The text column shows about 80 characters of code (test_code_fits_the_page);
    # longer lines of a snippet hide their end, often the equation's tag, behind a
    # scroll bar.
    long = [f"{snippet.qualname}: {line.strip()}" for _, snippet, _ in _shown_snippets(chapter)
            for line in snippet.code.splitlines() if len(line) > 80]
    assert not long, "shown lines over 80 characters:\n" + "\n".join(long)


def test_the_roadmap_is_made_from_the_chapters_prerequisites():
    import roadmap  # tools/

    text, _ = roadmap.page()
    assert (BOOK / "roadmap.md").read_text(encoding="utf-8") == text, \
        "run `python tools/roadmap.py`"
    assert (BOOK / "images" / "roadmap.svg").exists()
    preface = (BOOK / "preface.md").read_text(encoding="utf-8")
    assert "{doc}`roadmap`" in preface and "{doc}`notation`" in preface


FIGURE_NAME = re.compile(r"fig-[a-z0-9]+(?:-[a-z0-9]+)*")


DRAWS = re.compile(r"plt\.show\(\)|plt\.subplots\(|plt\.figure\(|\bheatmap\(|plot_history\(")


def figure_cells(chapter):
    """The chapter's code cells that draw a figure (each draws one, shown at its end;
    the built-page test checks that every image of a page is a numbered figure)."""
    return [cell for cell in notebook(chapter).cells
            if cell.cell_type == "code" and DRAWS.search(cell.source)]


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_every_figure_is_numbered_captioned_described_and_cited(chapter):
    """A cell that draws a figure names it, captions it (what to see), describes it in
    alt text (not its file name) and draws only that one figure; the text cites it."""
    text = chapter.read_text(encoding="utf-8")
    for cell in figure_cells(chapter):
        first = cell.source.strip().splitlines()[0][:60]
        options = cell.metadata.get("mystnb", {})
        figure, image = options.get("figure", {}), options.get("image", {})
        name = figure.get("name", "")
        assert FIGURE_NAME.fullmatch(name), f"no figure name (fig-...) on: {first}"
        assert len(str(figure.get("caption", "")).strip()) >= 30, f"{name}: no caption"
        assert "{glue" not in str(figure.get("caption")), f"{name}: a caption holds for any run"
        alt = str(image.get("alt", ""))
        assert len(alt) >= 60 and not re.search(r"\.(png|svg)\b", alt), \
            f"{name}: the alt text does not describe the figure"
        assert f"{{numref}}`{name}`" in text or f"<{name}>`" in text, \
            f"{name} is never cited with {{numref}}"


def test_figure_names_are_unique_in_the_book():
    names = [cell.metadata["mystnb"]["figure"]["name"] for chapter in CHAPTERS
             for cell in figure_cells(chapter)
             if "name" in cell.metadata.get("mystnb", {}).get("figure", {})]
    names += re.findall(r"^:name: (fig-[\w-]+)$", "\n".join(
        chapter.read_text(encoding="utf-8") for chapter in CHAPTERS), re.M)
    repeated = sorted({name for name in names if names.count(name) > 1})
    assert not repeated, f"figure names used twice: {repeated}"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=CHAPTER_IDS)
def test_every_heatmap_has_a_colour_bar(chapter):
    """A heatmap's colours are read against a colour bar: its own, or one the figure
    shares between panels of one scale (``fig.colorbar``)."""
    for cell in code_cells(chapter):
        if "colorbar=False" in cell:
            assert re.search(r"\.colorbar\(", cell), (
                f"{chapter.stem}: a heatmap without a colour bar:\n{cell[:200]}")
