"""The Colab edition: ``notebooks/<chapter>.ipynb``, readable wherever Jupyter Markdown is.

Colab and Jupyter render CommonMark, LaTeX math and plain HTML; they render none of
MyST. Each chapter (``book/<chapter>.md``) becomes a notebook whose Markdown is plain:

* glued numbers are the printed run's values (read from the executed book, and kept in
  the notebook's metadata so that the twin can be regenerated and checked without it);
* roles become text and links into the HTML book (citations "Author et al. (year)",
  equations "(4.3)", chapters and sections by title, API names as code, glossary terms);
  label lines disappear;
* directives become Markdown or HTML: admonitions as quotes (or ``<details>`` when the
  page folds them), labelled equations with their number as ``\\tag``, exercises as
  headings "Exercise 4.2", solutions inside ``<details>``, with the solution's code in a
  collapsed cell right after;
* cells the page hides or folds are collapsed (Colab's form view with a title, Jupyter's
  ``source_hidden``), so a reader sees no more code than the page shows;
* the first cell installs the commit of seqbook the page was built from.

The MyST parser's own token stream (markdown-it-py with the MyST plugins) finds the
roles and directives; nothing is found by regular expressions.

    python tools/colab_edition.py --write   # regenerate notebooks/ (make notebooks)
    python tools/colab_edition.py --check   # exit 1 if a twin is stale or missing
"""

from __future__ import annotations

import argparse
import copy
import functools
import json
import subprocess
import sys
from pathlib import Path

import jupytext
import nbformat
import yaml
from docutils.nodes import make_id
from markdown_it.renderer import RendererHTML
from myst_parser.config.main import MdParserConfig
from myst_parser.parsers.mdit import create_md_parser

ROOT = Path(__file__).resolve().parents[1]
BOOK, NOTEBOOKS = ROOT / "book", ROOT / "notebooks"
EXECUTED = ROOT / "_build" / "jupyter_execute" / "book"  # myst-nb's executed chapters
PACKAGE_PATHS = ("seqbook", "pyproject.toml")  # what the install cell installs


# --------------------------------------------------------------------------------------
# What the whole book knows: its settings, chapter numbers, titles, labels, references
# --------------------------------------------------------------------------------------

@functools.cache
def config() -> dict:
    return yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))


def book_url() -> str:
    """The published HTML book, e.g. https://org.github.io/repo/ (``html.baseurl``)."""
    return config()["html"]["baseurl"].rstrip("/") + "/"


def repository_url() -> str:
    return config()["repository"]["url"].rstrip("/")


@functools.cache
def parser():
    extensions = set(config()["parse"]["myst_enable_extensions"])
    return create_md_parser(MdParserConfig(enable_extensions=extensions), RendererHTML)


def chapters() -> list[Path]:
    """The book's executable pages: MyST Markdown files with a Jupyter kernelspec."""
    return sorted(p for p in BOOK.glob("*.md")
                  if "kernelspec:" in p.read_text(encoding="utf-8")[:1000])


@functools.cache
def chapter_numbers() -> dict[str, int]:
    """Chapter numbers as the book prints them: numbered parts, counted across parts."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    numbers: dict[str, int] = {}
    for part in toc.get("parts", []):
        for entry in part.get("chapters", []) if part.get("numbered") else []:
            numbers[Path(entry["file"]).name] = len(numbers) + 1
    return numbers


def read_page(path: Path) -> nbformat.NotebookNode:
    """A page of the book as a notebook (jupytext's reading of MyST), a copy the caller
    may change; each version of the file is parsed once (the twins, the figures' and the
    pages' indexes all read every page)."""
    stat = path.stat()
    return copy.deepcopy(_parsed_page(path, stat.st_mtime_ns, stat.st_size))


@functools.cache
def _parsed_page(path: Path, mtime_ns: int, size: int) -> nbformat.NotebookNode:
    return jupytext.read(path, fmt="md:myst")


@functools.cache
def pages() -> dict[str, list]:
    """Every page's Markdown tokens (cells joined), by document name."""
    found = {}
    for path in BOOK.glob("*.md"):
        notebook = read_page(path)
        text = "\n\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
        found[path.stem] = parser().parse(text)
    return found


@functools.cache
def titles() -> dict[str, str]:
    """Each page's title (its first heading) and each labelled section's, by name.

    Keys: a document name (``lstm``) or a label (``chap-ssm``); values: (document,
    anchor, title), the anchor empty for a whole page.
    """
    found: dict[str, tuple[str, str, str]] = {}
    for doc, tokens in pages().items():
        label = None
        for index, token in enumerate(tokens):
            if token.type == "myst_target":
                label = token.content
            elif token.type == "heading_open":
                title = _plain(tokens[index + 1])
                found.setdefault(doc, (doc, "", title))
                if label:
                    found[label] = (doc, label, title)
                label = None
            elif token.type not in ("heading_close", "inline"):
                label = None
    return found


@functools.cache
def glossary_terms() -> dict[str, str]:
    """The glossary's terms as written, by their lower-case form (how {term} finds them)."""
    found = {}
    for token in parser().parse((BOOK / "glossary.md").read_text(encoding="utf-8")):
        if token.type == "fence" and token.info.strip() == "{glossary}":
            for line in token.content.splitlines():
                if line.strip() and not line[0].isspace():
                    found[" ".join(line.lower().split())] = line.strip()
    return found


@functools.cache
def numbers() -> dict[str, tuple[str, str]]:
    """Labelled equations and exercises -> (document, number as printed, e.g. "4.3")."""
    found = {}
    for doc, tokens in pages().items():
        chapter = chapter_numbers().get(doc)
        tokens = list(_nested(tokens))  # equations in folds are numbered in page order too
        equations = [t.info for t in tokens if t.type == "math_block_label"]
        exercises = [_options(t.content)[0].get("label", "") for t in tokens
                     if t.type in ("fence", "colon_fence") and _directive(t)[0] == "exercise"]
        for labels in (equations, exercises):
            for index, label in enumerate(labels):
                found[label] = (doc, f"{chapter}.{index + 1}" if chapter else f"{index + 1}")
    return found


@functools.cache
def figures() -> dict[str, tuple[str, str, str]]:
    """Named figures -> (document, number as printed, e.g. "7.3", caption).

    A figure is a ``{figure}`` directive or a code cell whose output myst-nb wraps in
    one (``mystnb: figure:`` in its metadata); Sphinx numbers both, in page order."""
    found = {}
    for path in sorted(BOOK.glob("*.md")):
        doc, chapter = path.stem, chapter_numbers().get(path.stem)
        named: list[tuple[str, str]] = []
        for cell in read_page(path).cells:
            if cell.cell_type == "code":
                figure = cell.metadata.get("mystnb", {}).get("figure", {})
                if figure.get("name"):
                    named.append((figure["name"], str(figure.get("caption", "")).strip()))
                continue
            for token in _nested(parser().parse(cell.source)):
                if token.type in ("fence", "colon_fence") and _directive(token)[0] == "figure":
                    options, body = _options(token.content)
                    if options.get("name"):
                        named.append((options["name"], body.strip()))
        for index, (name, caption) in enumerate(named):
            number = f"{chapter}.{index + 1}" if chapter else f"{index + 1}"
            found[name] = (doc, number, caption)
    return found


def _nested(tokens):
    """The tokens, each directive followed by the tokens of its body, in page order."""
    for token in tokens:
        yield token
        if token.type in ("fence", "colon_fence") and _directive(token)[0] not in (
                None, "code-cell"):
            yield from _nested(parser().parse(_options(token.content)[1]))


def _plain(inline) -> str:
    """The text of an inline token, roles shown by their content."""
    return "".join(c.content for c in inline.children if c.type != "softbreak")


@functools.cache
def references() -> dict[str, tuple[str, str]]:
    """Citation keys -> (authors as cited, year), from the book's BibTeX file."""
    from pybtex.database import parse_file

    found = {}
    for key, entry in parse_file(BOOK / "references.bib").entries.items():
        people = entry.persons.get("author") or entry.persons.get("editor") or []
        names = [" ".join(p.last_names).replace("{", "").replace("}", "") for p in people]
        if not names:  # a report or a course: its institution or title
            names = [entry.fields.get("institution") or entry.fields.get("title", key)]
        cited = (names[0] if len(names) == 1 else f"{names[0]} and {names[1]}"
                 if len(names) == 2 else f"{names[0]} et al.")
        found[key] = (cited, entry.fields.get("year", "n.d."))
    return found


def package_commit() -> str:
    """The last commit that changed the package: the code a page built now runs."""
    done = subprocess.run(["git", "log", "-1", "--format=%H", "--", *PACKAGE_PATHS],
                          cwd=ROOT, capture_output=True, text=True)
    if done.returncode != 0 or not done.stdout.strip():
        raise SystemExit(f"not a git checkout with history: {done.stderr.strip()}")
    return done.stdout.strip()


# --------------------------------------------------------------------------------------
# One chapter's Markdown, from MyST to CommonMark
# --------------------------------------------------------------------------------------

class Chapter:
    """Converts one chapter's Markdown cells, with the numbers its page prints."""

    def __init__(self, name: str, glue: dict[str, str]):
        self.name, self.glue = name, glue

    def url(self, doc: str, anchor: str = "") -> str:
        return f"{book_url()}book/{doc}.html" + (f"#{anchor}" if anchor else "")

    # --- blocks ------------------------------------------------------------------------

    def markdown(self, source: str) -> str:
        """A Markdown cell's source without MyST: roles, targets and directives replaced."""
        lines = source.split("\n")
        out: list[str] = []
        done = 0  # lines of `source` already copied or replaced
        for token in parser().parse(source):
            if token.map is None or token.map[0] < done:
                continue  # a block inside one already replaced: converted with it
            start, end = token.map
            replacement = self.block(token)
            if replacement is not None:  # nested in a list item: keep its indentation
                indent = lines[start][:len(lines[start]) - len(lines[start].lstrip())]
                out += lines[done:start]
                out += [indent + line if line else line for line in replacement.split("\n")]
                done = end
        out += lines[done:]
        text = "\n".join(out)
        return self.inline_roles(text).strip("\n")

    def block(self, token) -> str | None:
        """The CommonMark of one top-level block, or None to keep it as it is."""
        if token.type == "myst_target":
            return ""
        if token.type == "math_block_label":
            body = "\n".join(line.strip() for line in token.content.strip().split("\n"))
            return f"$$\n{body}\n\\tag{{{numbers()[token.info][1]}}}\n$$"
        if token.type in ("fence", "colon_fence"):
            name, argument = _directive(token)
            if name is None:
                return None
            options, body = _options(token.content)
            return self.directive(name, argument, options, body)
        return None

    def directive(self, name: str, argument: str, options: dict, body: str) -> str:
        inner = self.markdown(body) if body.strip() else ""
        if name == "exercise":
            number = numbers().get(options.get("label", ""), ("", ""))[1]
            title = f"#### Exercise {number}" + (f": {argument}" if argument else "")
            return f"{title}\n\n{inner}"
        if name in ("solution", "solution-start"):
            number = numbers().get(argument.split()[0] if argument else "", ("", ""))[1]
            opened = f"{SOLUTION_OPEN.format(number=number, more='')}\n\n{inner}".rstrip()
            # a {solution} block holds all of its solution; -start opens one over cells
            return f"{opened}\n\n{SOLUTION_CLOSE}" if name == "solution" else opened
        if name == "solution-end":
            return SOLUTION_CLOSE
        if name == "figure":  # the image as the book serves it, and its numbered caption
            doc, number, _ = figures()[options["name"]]
            image = f"{book_url()}_images/{Path(argument).name}"
            alt = options.get("alt", "").replace("<", "&lt;")  # "<eos>" is text, not HTML
            return f"![{alt}]({image})\n\n{self.caption(number, body)}"
        title = argument or {"margin": "Aside"}.get(name, name.capitalize())
        if "dropdown" in options.get("class", ""):
            return f"<details><summary>{title}</summary>\n\n{inner}\n\n</details>"
        quoted = "\n".join(f"> {line}".rstrip() for line in inner.split("\n"))
        return f"> **{title}**\n>\n{quoted}"

    def caption(self, number: str, text: str) -> str:
        """A figure's caption as the page prints it: "Figure 7.3." and the text."""
        return f"**Figure {number}.** {self.markdown(text)}"

    # --- inline roles ----------------------------------------------------------------

    def inline_roles(self, text: str) -> str:
        """Replace every role the parser finds, in order, by its text or link."""
        out, cursor = [], 0
        for token in parser().parse(text):
            for child in token.children or []:
                if child.type == "code_inline":  # skip code spans: roles in them are text
                    raw = f"{child.markup}{child.content}{child.markup}"
                    found = text.find(raw, cursor)
                    if found >= 0:
                        out.append(text[cursor:found + len(raw)])
                        cursor = found + len(raw)
                elif child.type == "myst_role":  # {name}`content`, maybe over two lines
                    opening = f"{{{child.meta['name']}}}`"
                    found = text.find(opening, cursor)
                    closing = text.find("`", found + len(opening))
                    content = " ".join(text[found + len(opening):closing].split())
                    if found < 0 or content != " ".join(child.content.split()):
                        raise ValueError(f"{self.name}: cannot place {opening}{child.content}`")
                    out += [text[cursor:found], self.role(child.meta["name"], content)]
                    cursor = closing + 1
        return "".join(out) + text[cursor:]

    def role(self, name: str, content: str) -> str:
        shown, target = _title_and_target(content)
        if name.startswith("glue"):
            key, _, spec = content.partition(":")
            if key not in self.glue:
                raise KeyError(f"{self.name}: no printed value for the glued name {key!r}; "
                               "build the book (make book) and run make notebooks")
            from myst_nb.core.variables import format_plain_text

            return format_plain_text(self.glue[key], spec or "s")
        if name == "eq":
            doc, number = numbers()[target]
            return f"[({number})]({self.url(doc, 'equation-' + target)})"
        if name in ("cite", "cite:p", "cite:t"):
            cited = [references()[key.strip()] for key in target.split(",")]
            link = self.url("bibliography")
            if name == "cite:t":
                return "; ".join(f"[{who} ({year})]({link})" for who, year in cited)
            return "(" + "; ".join(f"[{who}, {year}]({link})" for who, year in cited) + ")"
        if name == "numref":  # a figure: "Figure 7.3", or the role's text with %s
            doc, number, _ = figures()[target]
            text = shown.replace("%s", number) if shown else f"Figure {number}"
            return f"[{text}]({self.url(doc, target)})"
        if name == "ref" and target in numbers():  # an exercise
            doc, number = numbers()[target]
            return f"[{shown or 'Exercise ' + number}]({self.url(doc, target)})"
        if name in ("doc", "ref"):
            doc, anchor, title = titles()[target]
            # a label's anchor is its HTML id, as docutils makes it ("a_b" -> "a-b")
            return f"[{shown or title}]({self.url(doc, make_id(anchor) if anchor else '')})"
        if name == "term":  # a term is found whatever its case; its anchor keeps it
            term = glossary_terms()[" ".join(target.lower().split())]
            anchor = "term-" + "-".join(term.split())
            return f"[{shown or target}]({self.url('glossary', anchor)})"
        if name.startswith("py:"):
            text = shown or (target.lstrip("~").split(".")[-1] if target.startswith("~")
                             else target)
            if name in ("py:func", "py:meth"):
                text += "()"
            anchor = ("module-" if name == "py:mod" else "") + target.lstrip("~")
            return f"[`{text}`]({self.url('api', anchor)})"
        raise ValueError(f"{self.name}: the role {{{name}}} has no Colab form yet")


SOLUTION_OPEN = "<details><summary>Solution to Exercise {number}{more}</summary>"
SOLUTION_CLOSE = "</details>"


def _directive(token) -> tuple[str | None, str]:
    """(name, argument) of a ```{name} argument fence; (None, '') for plain code."""
    info = token.info.strip()
    if not info.startswith("{") or "}" not in info:
        return None, ""
    name, _, argument = info[1:].partition("}")
    return name.strip(), argument.strip()


def _options(content: str) -> tuple[dict[str, str], str]:
    """A directive's ``:key: value`` option lines and its body."""
    options, lines = {}, content.split("\n")
    while lines and lines[0].startswith(":") and lines[0].count(":") >= 2:
        key, _, value = lines.pop(0)[1:].partition(":")
        options[key.strip()] = value.strip()
    return options, "\n".join(lines).strip("\n")


def _title_and_target(content: str) -> tuple[str, str]:
    """``Title <target>`` -> (Title, target); ``target`` -> ('', target)."""
    if content.endswith(">") and " <" in content:
        title, _, target = content[:-1].rpartition(" <")
        return title.strip(), target.strip()
    return "", content.strip()


# --------------------------------------------------------------------------------------
# The notebook
# --------------------------------------------------------------------------------------

INSTALL = '''\
#@title Install seqbook at commit {short}, the code this page was built from
import importlib.metadata, json, os
COMMIT = "{commit}"
try:  # a seqbook of another commit (another chapter's) is replaced
    _url = importlib.metadata.distribution("seqbook").read_text("direct_url.json")
    _installed = json.loads(_url or "{{}}").get("vcs_info", {{}}).get("commit_id", "local")
except importlib.metadata.PackageNotFoundError:
    _installed = None
if _installed not in (COMMIT, "local"):  # "local": a checkout, as in the book's build
    spec = os.environ.get("SEQBOOK_PIP_SPEC",
                          f"seqbook @ git+{repository}@{{COMMIT}}")
    %pip install -q "{{spec}}"'''

READER_NOTE = """\
> **The Colab edition of [{title}]({url}).** The numbers in the text are those of the
> printed book's run; when you run the cells, your own numbers appear in the outputs, and
> they differ a little, because another machine (or seed) trains another model. Collapsed
> cells hold what the page hides: the figures' code, the glued numbers, and the checks of
> the page's claims. When your run does not confirm a claim, its check shows a note (what
> the page says, what your run measured, and how often the claim held over many runs in
> [How sure is each claim]({ledger})) and the notebook goes on."""


def twin(chapter: Path, glue: dict[str, str], commit: str) -> nbformat.NotebookNode:
    """The Colab edition of one chapter."""
    name = chapter.stem
    convert = Chapter(name, glue)
    notebook = read_page(chapter)
    cells: list = []
    solution = None  # the number of the exercise whose solution is open, across cells
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            text, solution = _solution_cell(convert.markdown(cell.source), solution)
            if text:
                cells.append(nbformat.v4.new_markdown_cell(text))
            continue
        source = cell.source
        if not any(c.cell_type == "code" for c in cells):  # the install cell
            source = INSTALL.format(short=commit[:7], commit=commit,
                                    repository=repository_url())
        title = _collapsed_title(source, cell.metadata.get("tags", []), solution)
        if title is not None and not source.startswith("#@title"):
            source = f"#@title {title}\n{source}"
        code = nbformat.v4.new_code_cell(source)
        if title is not None:
            code.metadata.update({"cellView": "form", "jupyter": {"source_hidden": True}})
        cells.append(code)
        figure = cell.metadata.get("mystnb", {}).get("figure", {})
        if figure.get("name"):  # the caption the page prints under the cell's figure
            _, number, caption = figures()[figure["name"]]
            cells.append(nbformat.v4.new_markdown_cell(convert.caption(number, caption)))
    heading = next((i for i, c in enumerate(cells) if c.cell_type == "markdown"
                    and c.source.startswith("# ")), 0)
    cells.insert(heading + 1, nbformat.v4.new_markdown_cell(READER_NOTE.format(
        title=titles()[name][2], url=convert.url(name), ledger=convert.url("claims"))))
    for position, cell in enumerate(cells):  # stable ids: a regenerated twin is identical
        cell.id = f"{name[:50]}-{position}"
    notebook.cells = cells
    notebook.metadata.pop("jupytext", None)
    notebook.metadata["seqbook"] = {"commit": commit, "glue": dict(sorted(glue.items()))}
    notebook.metadata["colab"] = {"name": f"{name}.ipynb", "provenance": []}
    return notebook


def _solution_cell(text: str, solution: str | None) -> tuple[str, str | None]:
    """A Markdown cell whose solution may open in it, go on from earlier cells, or close.

    A solution spans cells (its prose, its code cells, more prose): each Markdown piece
    gets its own closed ``<details>``, and the code cells between them are collapsed.
    Returns the cell's text and the exercise number of a solution still open after it.
    """
    if solution is not None:
        text = f"{SOLUTION_OPEN.format(number=solution, more=' (continued)')}\n\n{text}"
    opened, closed = text.rfind("<details><summary>Solution to"), text.rfind(SOLUTION_CLOSE)
    if opened > closed:  # still open at the end of the cell: close it here
        solution = text[opened:].split("Exercise ", 1)[1].split("<", 1)[0]
        text += f"\n\n{SOLUTION_CLOSE}"
    else:
        solution = None
    empty = "<details><summary>Solution to Exercise"
    for piece in text.split(SOLUTION_CLOSE)[:-1]:  # a summary with nothing under it
        head, _, body = piece.rpartition("</summary>")
        if empty in head and not body.strip():
            text = text.replace(piece + SOLUTION_CLOSE, "", 1)
    return text.strip(), solution


def _collapsed_title(source: str, tags: list[str], solution: str | None) -> str | None:
    """The form title of a cell the page hides or folds; None for a visible cell."""
    if source.startswith("#@title"):
        return source.split("\n", 1)[0][len("#@title "):]
    if solution is not None:
        return f"Solution code (Exercise {solution})"
    if "remove-input" in tags:
        return "The package's source, shown below"
    if "hide-input" in tags:
        return "Figure code" if "plt." in source or "fig" in source else "Folded code"
    if "remove-cell" in tags:
        return ("Check the page's claims" if "claim(" in source
                else "Numbers for the text (hidden on the page)")
    return None


def printed_glue(chapter: Path) -> dict[str, str] | None:
    """The values the executed book glued (text/plain), or None where it is not built.

    myst-nb keeps a chapter's glued outputs beside its executed notebook, in
    ``<chapter>.glue.json`` (name -> display_data output, MIME prefix removed).
    """
    saved = EXECUTED / f"{chapter.stem}.glue.json"
    if not saved.exists():
        return None
    outputs = json.loads(saved.read_text(encoding="utf-8"))
    return {name: output["data"]["text/plain"] for name, output in outputs.items()
            if "text/plain" in output.get("data", {})}


def twin_text(chapter: Path, glue: dict[str, str], commit: str) -> str:
    return nbformat.writes(twin(chapter, glue, commit)) + "\n"


def committed_glue(chapter: Path) -> dict[str, str]:
    path = NOTEBOOKS / f"{chapter.stem}.ipynb"
    if not path.exists():
        return {}
    return json.loads(path.read_text(encoding="utf-8"))["metadata"].get(
        "seqbook", {}).get("glue", {})


def stale_twins() -> list[str]:
    """Missing, stale or orphaned twins, regenerated from their own printed values."""
    problems, commit = [], package_commit()
    for chapter in chapters():
        path = NOTEBOOKS / f"{chapter.stem}.ipynb"
        if not path.exists():
            problems.append(f"missing twin {path.relative_to(ROOT)}")
            continue
        try:
            expected = twin_text(chapter, committed_glue(chapter), commit)
        except KeyError as error:
            problems.append(str(error))
            continue
        if path.read_text(encoding="utf-8") != expected:
            problems.append(f"{path.relative_to(ROOT)} is out of date with "
                            f"{chapter.relative_to(ROOT)} or with the package's commit")
    names = {c.stem for c in chapters()}
    problems += [f"{p.relative_to(ROOT)} has no chapter" for p in NOTEBOOKS.glob("*.ipynb")
                 if p.stem not in names]
    return problems


def write_twins() -> None:
    NOTEBOOKS.mkdir(exist_ok=True)
    commit = package_commit()
    for chapter in chapters():
        glue = printed_glue(chapter)
        if glue is None:
            glue = committed_glue(chapter)
            print(f"{chapter.stem}: the book is not built; keeping the twin's printed values")
        (NOTEBOOKS / f"{chapter.stem}.ipynb").write_text(
            twin_text(chapter, glue, commit), encoding="utf-8")


if __name__ == "__main__":
    arguments = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    action = arguments.add_mutually_exclusive_group(required=True)
    action.add_argument("--write", action="store_true", help="regenerate notebooks/")
    action.add_argument("--check", action="store_true", help="fail if notebooks/ is stale")
    if arguments.parse_args().write:
        write_twins()
    else:
        found = stale_twins()
        print("\n".join(found) or "notebooks/ is in sync with book/")
        sys.exit(1 if found else 0)
