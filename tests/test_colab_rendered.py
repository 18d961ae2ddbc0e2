"""The Colab edition as a reader meets it: every twin rendered as Jupyter shows it
(nbconvert's lab template, collapsed cells' code hidden), opened in headless Chromium
with the book's own MathJax. Needs the built book (`make test` runs this after it)."""

from __future__ import annotations

import functools
import re
import socketserver
import threading

import nbformat
import pytest
from markdown_it import MarkdownIt

from book_files import NOTEBOOKS, ROOT, chapters
from colab_edition import book_url, numbers, printed_glue
from test_browser import DEVICES, HTML, PageVisit, _QuietHandler

pytestmark = pytest.mark.built_html

BUILD = ROOT / "_build"
RENDERED = BUILD / "colab-html"
CHAPTERS = chapters()
IDS = [c.stem for c in CHAPTERS]
# MathJax 3 from the built book, configured as Jupyter does ($...$ inline, AMS tags),
# instead of nbconvert's MathJax 2 from a CDN; widgets' require.js is not needed. The
# test parses every equation (below) instead of laying it out: the layout is the
# book's, checked on its pages, and cost two thirds of the browser's time here.
MATHJAX = """<script>window.MathJax = {tex: {inlineMath: [['$', '$'], ['\\\\(', '\\\\)']],
  displayMath: [['$$', '$$'], ['\\\\[', '\\\\]']], processEscapes: true, tags: 'ams'},
  startup: {typeset: false}};</script>
<script src="../html/_static/mathjax/tex-chtml.js"></script>"""
# Every equation MathJax finds in the page, parsed with its public tex2mmlPromise (TeX to
# MathML, loading the TeX extensions it needs), with those that are TeX errors; and the
# text a reader sees (outside code and closed solutions) with the equations' sources
# taken out.
READ_TWIN = """async () => {
    await MathJax.startup.promise;
    const items = Array.from(MathJax.startup.document.findMath().math);
    const errors = [];
    for (const item of items) {
        try {  // a TeX error is an <merror>; a stray control character throws
            const mml = await MathJax.tex2mmlPromise(item.math, {display: item.display});
            // an unknown macro is set as its name in red (MathJax's noundefined)
            if (/<merror|<mtext mathcolor="red">\\\\/.test(mml))
                errors.push(item.math.slice(0, 80));
        } catch (error) {
            errors.push(`${item.math.slice(0, 80)} (${error.message})`);
        }
    }
    const walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
    const found = [];
    while (walker.nextNode()) {
        const node = walker.currentNode;
        if (node.parentElement.closest('pre, code, script, style')) continue;
        if (node.parentElement.closest('details:not([open]) > :not(summary)')) continue;
        found.push(node.textContent);
    }
    let text = found.join(' ');
    for (const item of items)
        text = text.replace(item.start.delim + item.math + item.end.delim, ' ');
    return {equations: items.length, text: text, errors: errors};
}"""


def twin(chapter) -> nbformat.NotebookNode:
    return nbformat.read(NOTEBOOKS / f"{chapter.stem}.ipynb", as_version=4)


def render(chapter) -> str:
    """The twin as a Jupyter reader first sees it, as HTML under _build/colab-html/."""
    from nbconvert import HTMLExporter

    notebook = twin(chapter)
    for cell in notebook.cells:  # Jupyter shows a collapsed cell's code as a thin bar
        if cell.metadata.get("jupyter", {}).get("source_hidden"):
            cell.metadata.setdefault("transient", {})["remove_source"] = True
    body, _ = HTMLExporter(template_name="lab").from_notebook_node(notebook)
    body = re.sub(r"<!-- Load mathjax -->.*?<!-- End of mathjax configuration -->",
                  lambda _: MATHJAX, body, flags=re.S)
    body = re.sub(r'<script src="https://[^"]*require\.js[^"]*"></script>', "", body)
    # the twin shows the book's diagrams from the published book: here, from this build
    body = body.replace(f'src="{book_url()}_images/', 'src="../html/_images/')
    RENDERED.mkdir(parents=True, exist_ok=True)
    (RENDERED / f"{chapter.stem}.html").write_text(body, encoding="utf-8")
    return f"colab-html/{chapter.stem}.html"


@pytest.fixture(scope="module")
def build_url():
    server = socketserver.ThreadingTCPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(BUILD)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def jupyter_reader(browser):
    """One browser context for the twins, each opened in a new tab (as the book's pages
    are, see test_browser.reader): MathJax and its fonts load and compile once."""
    context = browser.new_context(color_scheme="light", **DEVICES["desktop"])
    yield context
    context.close()


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_a_twin_reads_as_a_page(chapter, jupyter_reader, build_url):
    visit = PageVisit(None, build_url + render(chapter), context=jupyter_reader)
    page = visit.page
    try:
        read = page.evaluate(READ_TWIN)
        solutions = page.locator("details")
        closed = [not solutions.nth(i).evaluate("d => d.open") for i in range(solutions.count())]
        hidden_shown = page.evaluate(
            "() => [...document.querySelectorAll('pre')].filter("
            "p => p.textContent.startsWith('#@title')).length")
    finally:
        visit.close()
    assert not visit.problems, "\n".join(visit.problems)
    assert read["equations"] > 0, "no equation found"
    assert not read["errors"], f"equations MathJax cannot parse: {read['errors'][:3]}"
    leftovers = [m for m in ("$$", "$", "\\tag", "{glue", "{eq}", "{doc}", "{cite", ":::",
                             "```", ":label:", "(eq-") if m in read["text"]]
    assert not leftovers, f"markup left in the text a reader sees: {leftovers}"
    assert closed and all(closed), "every solution starts closed"
    assert hidden_shown == 0, "a collapsed cell's code is shown"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_a_twin_prints_the_books_numbers(chapter):
    # the printed values the twin shows are glued under the same names by the build,
    # and its equation and exercise numbers are the page's
    notebook = twin(chapter)
    assert set(notebook.metadata["seqbook"]["glue"]) == set(printed_glue(chapter) or {})
    page = (HTML / "book" / f"{chapter.stem}.html").read_text(encoding="utf-8")
    for label, (doc, number) in numbers().items():
        if doc != chapter.stem:
            continue
        if f'id="equation-{label}"' in page:
            after = page[page.index(f'id="equation-{label}"'):][:300]
            assert f'<span class="eqno">({number})' in after, (label, number)
        else:
            after = page[page.index(f'id="{label}"'):][:400]
            assert f"Exercise {number} " in after, (label, number)


def test_every_link_of_the_twins_into_the_book_resolves():
    from test_browser import page_ids

    broken, checked = [], 0
    for chapter in CHAPTERS:
        for cell in twin(chapter).cells:
            if cell.cell_type != "markdown":
                continue
            for token in MarkdownIt("commonmark").parseInline(cell.source):
                for child in token.children or []:
                    href = child.attrGet("href") if child.type == "link_open" else None
                    if not href or not href.startswith(book_url()):
                        continue
                    path, _, anchor = href[len(book_url()):].partition("#")
                    target, checked = HTML / path, checked + 1
                    if not target.exists() or (anchor and anchor not in page_ids(target)):
                        broken.append(f"{chapter.stem}: {href}")
    assert checked > 1000
    assert not broken, "\n".join(broken[:20])
