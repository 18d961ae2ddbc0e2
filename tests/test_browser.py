"""The rendered book as a reader meets it, in a real (headless) Chromium.

Needs the build in _build/html (`make test` runs this after it) and Debian's chromium
(`make test` installs it). The pages are opened from a local HTTP server; the checks
are those a reader would notice: errors in the console, equations left as raw LaTeX,
broken images or links, solutions that are not hidden, a search that finds nothing.
A summary (pages, links, equations) goes to _build/browser-report*.json and
screenshots to _build/screenshots/.
"""

from __future__ import annotations

import functools
import html.parser
import http.server
import io
import json
import os
import re
import socketserver
import threading
from pathlib import Path
from urllib.parse import unquote, urljoin, urlparse

import pytest
import yaml
from PIL import Image

from book_files import ROOT, chapters, toc_files

pytestmark = pytest.mark.built_html

HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
# one summary per pytest-xdist worker (make test runs these checks on every core)
REPORT = ROOT / "_build" / f"browser-report{os.environ.get('PYTEST_XDIST_WORKER', '')}.json"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
# A desktop window, and a phone (an iPhone 12/13/14's CSS size).
DEVICES = {
    "desktop": {"viewport": {"width": 1300, "height": 900}},
    "phone": {"viewport": {"width": 390, "height": 844}, "device_scale_factor": 2,
              "is_mobile": True, "has_touch": True},
}
# The flags that keep Chromium from phoning home on a machine without internet.
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]


def html_pages() -> list[Path]:
    """Every page of the built book (not the copied sources or static assets, and not
    index.html, which only redirects to the preface)."""
    if not HTML.is_dir():
        return []
    return sorted(
        p for p in HTML.rglob("*.html")
        if not {"_static", "_sources", "_images"} & set(p.relative_to(HTML).parts)
        and 'http-equiv="Refresh"' not in p.read_text(encoding="utf-8")[:2000]
    )


def browser_pages(pages: list[Path]) -> list[Path]:
    """The pages the browser opens: all of them but the code listings that Sphinx's
    viewcode writes under _modules/, of which it opens the index and the longest. The
    listings share one template and hold no equations, images or solutions, and opening
    each of the hundred took as long as the rest of the book; the static checks below
    (links, anchors) still read every one."""
    listings = [p for p in pages if p.relative_to(HTML).parts[0] == "_modules"]
    longest = max(listings, key=lambda p: p.stat().st_size, default=None)
    return [p for p in pages if p not in listings
            or p == longest or p.relative_to(HTML).as_posix() == "_modules/index.html"]


PAGES = html_pages()
BROWSER_PAGES = browser_pages(PAGES)
PAGE_IDS = [p.relative_to(HTML).as_posix() for p in BROWSER_PAGES]
CHAPTER_PAGES = [HTML / "book" / f"{c.stem}.html" for c in chapters()]
# Screenshots of the package's code under the equations it implements, for people to
# look at: the first chapters, in the book's order, whose pages show such code.
SOURCE_SCREENSHOTS = 3


@functools.cache
def pages_showing_code_under_equations() -> tuple[Path, ...]:
    """The first SOURCE_SCREENSHOTS chapter pages, in the book's order, with a snippet of
    package code (seqbook.notebook.show_source) that cites one of the page's equations."""
    chapter_pages = {page.stem: page for page in CHAPTER_PAGES if page.exists()}
    found: list[Path] = []
    for name in toc_files():
        page = chapter_pages.get(Path(name).name)
        if page is not None and page_facts(page).code_cites_an_equation:
            found.append(page)
            if len(found) == SOURCE_SCREENSHOTS:
                break
    return tuple(found)


@functools.cache
def pages_with_diagrams() -> tuple[tuple[Path, tuple[str, ...]], ...]:
    """Chapter pages with a mechanism diagram (an SVG in a figure), and those diagrams."""
    shown = [(path, tuple(page_facts(path).figure_images)) for path in CHAPTER_PAGES]
    return tuple((path, images) for path, images in shown if images)


@functools.cache
def screenshot_chapter() -> Path | None:
    """The chapter shown whole in both colour schemes, for people to look at: the first
    with a diagram (its light view is taken on the visit that checks the page, its dark
    view on the visit that checks its diagrams in the dark)."""
    return next((path for path in CHAPTER_PAGES if page_facts(path).figure_images), None)


# Elements HTML writes without an end tag.
_VOID = frozenset({"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta",
                   "source", "track", "wbr"})


class _PageFacts(html.parser.HTMLParser):
    """What the static checks read from a built page, in one pass of the standard
    library's parser (several times faster than a BeautifulSoup tree of each page): the
    ids of its elements, the hrefs of its links, its visible text, the text of its
    equation references, its images inside figures and inside cell outputs, and whether
    a shown snippet of package code (``div.seqbook-source``) cites an equation."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: set[str] = set()
        self.hrefs: list[str] = []
        self.strings: list[str] = []
        self.equation_references: list[str] = []
        self.figure_images: list[str] = []
        self.output_images: list[str] = []
        self.code_cites_an_equation = False
        self._open: list[tuple[str, frozenset[str]]] = []  # (tag, classes) of open elements
        self._hidden = 0  # inside a <script> or <style>, whose text is not shown
        self._reference: list[str] | None = None  # the text of an open equation reference

    def _inside(self, tag: str = "", css_class: str = "") -> bool:
        return any((not tag or t == tag) and (not css_class or css_class in classes)
                   for t, classes in self._open)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        attributes = {name: value or "" for name, value in attrs}
        if "id" in attributes:
            self.ids.add(attributes["id"])
        href = attributes.get("href")
        if tag == "a" and href is not None:
            self.hrefs.append(href)
            if href.startswith("#equation-") and self._inside("div", "seqbook-source"):
                self.code_cites_an_equation = True
            if "#equation-" in href and "reference" in attributes.get("class", "").split():
                self._reference = []
        if tag == "img":
            src = attributes.get("src", "")
            if self._inside("figure") and src.endswith(".svg"):
                self.figure_images.append(src)
            if self._inside(css_class="cell_output"):
                self.output_images.append(src)
        if tag not in _VOID:
            self._open.append((tag, frozenset(attributes.get("class", "").split())))
            self._hidden += tag in ("script", "style")

    def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
        if tag not in _VOID:
            self.handle_endtag(tag)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._reference is not None:
            self.equation_references.append("".join(self._reference).strip())
            self._reference = None
        # close up to the matching open element (HTML lets some end tags be left out)
        for depth in range(len(self._open) - 1, -1, -1):
            if self._open[depth][0] == tag:
                for closed, _ in self._open[depth:]:
                    self._hidden -= closed in ("script", "style")
                del self._open[depth:]
                break

    def handle_data(self, data: str) -> None:
        if not self._hidden:
            self.strings.append(data)
            if self._reference is not None:
                self._reference.append(data)


@functools.lru_cache(maxsize=None)
def page_facts(path: Path) -> _PageFacts:
    """A built page, parsed once for all the tests (they only read it)."""
    parser = _PageFacts()
    parser.feed(path.read_text(encoding="utf-8"))
    parser.close()
    return parser


def page_ids(path: Path) -> frozenset[str]:
    return frozenset(page_facts(path).ids)


@functools.lru_cache(maxsize=None)
def page_text(path: Path) -> str:
    """A page's visible text, its whitespace collapsed (what a text fragment matches:
    BeautifulSoup's ``get_text(" ")`` of the page)."""
    return " ".join(" ".join(page_facts(path).strings).split())


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the build; its files do not change during the tests, so the browser may
    keep them (a reader's browser keeps the theme's scripts and MathJax from page to page
    too, and compiles them once)."""

    def end_headers(self) -> None:
        self.send_header("Cache-Control", "max-age=3600")
        super().end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="session")
def base_url():
    assert HTML.is_dir(), "no _build/html: build the book first (make book)"
    server = socketserver.ThreadingTCPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(HTML))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="session")
def reader(browser):
    """One browser context (light scheme, desktop) in which each page opens in a new tab,
    as a reader goes from page to page: the context's cache spares each page the loading
    and compiling of the same scripts again."""
    context = browser.new_context(color_scheme="light", **DEVICES["desktop"])
    yield context
    context.close()


@pytest.fixture(scope="module")
def report():
    summary = {"pages": 0, "equations_typeset": 0, "internal_links": 0, "images": 0,
               "solutions_toggled": 0, "per_page": {}}
    yield summary
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(summary, indent=2), encoding="utf-8")


class PageVisit:
    """A page opened in the browser, with everything it logged."""

    def __init__(self, browser, url: str, color_scheme: str = "light",
                 device: str = "desktop", context=None) -> None:
        """Opens ``url`` in a new context of ``browser`` (with ``color_scheme`` and
        ``device``), or in a new tab of ``context`` when one is given."""
        self.owns_context = context is None
        self.context = context or browser.new_context(color_scheme=color_scheme,
                                                      **DEVICES[device])
        self.page = self.context.new_page()
        # generous: make test runs these beside other checks on a busy machine, and a
        # page that never loads still fails
        self.page.set_default_timeout(120_000)
        self.problems: list[str] = []
        self.page.on("console", self._console)
        self.page.on("pageerror", lambda error: self.problems.append(f"page error: {error}"))
        self.page.on("requestfailed",
                     lambda request: self.problems.append(f"failed request: {request.url}"))
        self.page.on("response", self._response)
        self.page.goto(url, wait_until="load")
        # MathJax typesets asynchronously; its startup promise resolves when it is done.
        self.page.wait_for_function(
            "() => !document.querySelector('.math') || "
            "(window.MathJax && MathJax.startup && MathJax.startup.promise)"
        )
        self.page.evaluate(
            "() => window.MathJax && MathJax.startup ? MathJax.startup.promise : null"
        )

    def _console(self, message) -> None:
        # "Failed to load resource" repeats what _response reports with the URL.
        if message.type == "error" and "Failed to load resource" not in message.text:
            self.problems.append(f"console error: {message.text}")

    def _response(self, response) -> None:
        if response.status >= 400:
            self.problems.append(f"HTTP {response.status}: {response.url}")

    def close(self) -> None:
        self.page.close()
        if self.owns_context:
            self.context.close()


@pytest.mark.parametrize("path", BROWSER_PAGES, ids=PAGE_IDS)
def test_page_renders_cleanly(path, reader, base_url, report):
    """No console error, every equation typeset, no raw LaTeX, every image loaded; on a
    chapter page, also the solutions hidden until opened (one visit does both: loading
    a chapter page costs seconds of the browser's time)."""
    relative = path.relative_to(HTML).as_posix()
    visit = PageVisit(None, urljoin(base_url, relative), context=reader)
    page = visit.page
    try:
        math = page.evaluate("""() => {
            const all = [...document.querySelectorAll('.math')];
            return {total: all.length,
                    typeset: all.filter(m => m.querySelector('mjx-container')).length,
                    // a TeX error, or an unknown macro set as its name in red
                    errors: all.filter(m => m.querySelector(
                                'mjx-merror, mjx-mtext[style*="color: red"]'))
                               .map(m => m.textContent.slice(0, 60))};
        }""")
        raw_latex = page.evaluate(r"""() => {
            const main = document.querySelector('main') || document.body;
            const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
            const found = [];
            while (walker.nextNode()) {
                const node = walker.currentNode;
                const skip = 'pre, code, .highlight, script, style, mjx-container';
                if (node.parentElement.closest(skip)) continue;
                const text = node.textContent;
                // a lone $ too: an inline equation the parser did not take as one
                if (/\$|\\\(|\\\[/.test(text)) found.push(text.slice(0, 60));
            }
            return found;
        }""")
        images = page.evaluate("""() => [...document.images].map(
            img => ({src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0}))""")
        # the screenshots for people to look at, on this visit (each visit costs the
        # browser seconds), before the solutions below are opened
        if path in CHAPTER_PAGES and path == screenshot_chapter():
            screenshot_whole_page(visit, path, "light")
        if path in pages_showing_code_under_equations():
            screenshot_code_under_its_equations(visit, path, "desktop")
        solutions = check_solutions(page, report) if path in CHAPTER_PAGES else None
        objectives = check_objectives(page) if path in CHAPTER_PAGES else None
        if path in dict(pages_with_diagrams()) and path != screenshot_chapter():
            # the diagrams in the dark theme, on this visit (last: it scrolls): the
            # theme follows the reader's scheme as it changes (its "auto" mode)
            page.emulate_media(color_scheme="dark")
            check_diagrams_on_their_white_card(visit, path)
    finally:
        visit.close()
    broken_images = [img["src"] for img in images if not img["ok"]]
    report["pages"] += 1
    report["equations_typeset"] += math["typeset"]
    report["images"] += len(images)
    report["per_page"][relative] = {"equations": math["typeset"], "images": len(images),
                                    **({} if solutions is None else {"solutions": solutions})}
    assert not visit.problems, "\n".join(visit.problems)
    untypeset = math["total"] - math["typeset"]
    assert not untypeset, f"{untypeset} equations not typeset"
    # MathJax sets a TeX error (a missing brace) or an unknown macro in red, inside a
    # typeset equation (the book colours no equation itself)
    assert not math["errors"], f"equations with TeX errors: {math['errors'][:3]}"
    assert not raw_latex, f"raw LaTeX left in the text: {raw_latex[:3]}"
    assert not broken_images, f"images that did not load: {broken_images}"
    if objectives is not None:
        assert objectives["visible"], "the chapter does not open with its objectives in view"
        assert 3 <= objectives["items"] <= 5, f"{objectives['items']} objectives, not 3-5"
        assert objectives["prerequisites"], "the objectives name no prerequisites"
        assert objectives["before_first_section"], "the objectives come after a section"


def check_objectives(page) -> dict:
    """The chapter's "In this chapter" box: shown, before its first section, with its
    objectives and prerequisites."""
    return page.evaluate("""() => {
        const box = document.querySelector('main .admonition.objectives');
        if (!box) return {visible: false, items: 0, prerequisites: false,
                          before_first_section: false};
        const title = box.querySelector('.admonition-title');
        const section = document.querySelector('main section section h2');
        const rect = box.getBoundingClientRect();
        return {
            visible: rect.width > 0 && rect.height > 0
                     && !!title && title.textContent.trim() === 'In this chapter',
            items: box.querySelectorAll(':scope > ul > li').length,
            prerequisites: [...box.querySelectorAll('p')].some(
                p => p.textContent.trim().startsWith('Prerequisites:')),
            before_first_section: !section || !!(box.compareDocumentPosition(section)
                                                 & Node.DOCUMENT_POSITION_FOLLOWING),
        };
    }""")


def check_solutions(page, report) -> int:
    """Every solution of a chapter page is hidden, and shows when its title is clicked."""
    solutions = page.locator("div.solution.dropdown")
    count = solutions.count()
    assert count > 0, "no solutions on a chapter page"
    for i in range(count):
        solution = solutions.nth(i)
        body = solution.locator(":scope > :not(.admonition-title)").first
        assert not body.is_visible(), f"solution {i + 1} is visible before it is opened"
        # on its first words: the rest of a solution's title links to its exercise
        title = solution.locator(".admonition-title")
        title.click(position={"x": 16, "y": title.bounding_box()["height"] / 2})
        body.wait_for(state="visible", timeout=5000)
        report["solutions_toggled"] += 1
    return count


def test_every_chapter_page_is_visited_with_its_solutions():
    """The solutions are checked in test_page_renders_cleanly, on the chapter pages
    among the built pages: none may be missing from them."""
    assert CHAPTER_PAGES, "no chapters"
    missing = [p.relative_to(HTML).as_posix() for p in CHAPTER_PAGES
               if p not in BROWSER_PAGES]
    assert not missing, f"chapter pages not built: {missing}"


def test_every_internal_link_and_anchor_resolves(report):
    assert PAGES, "no pages: build the book first"
    broken, checked = [], 0
    for page in PAGES:
        for href in page_facts(page).hrefs:
            parts = urlparse(href)
            if parts.scheme or href.startswith(("mailto:", "javascript:")):
                continue  # external links are not ours to check offline
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            checked += 1
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(HTML)}: {href} (no such file)")
            elif parts.fragment.startswith(":~:text="):  # a text fragment: the words
                words = " ".join(unquote(parts.fragment[len(":~:text="):]).split())
                if words not in page_text(target):
                    broken.append(f"{page.relative_to(HTML)}: {href} (no such text)")
            elif (parts.fragment and target.suffix == ".html"
                  and unquote(parts.fragment) not in page_ids(target)):
                broken.append(f"{page.relative_to(HTML)}: {href} (no such anchor)")
    report["internal_links"] = checked
    assert checked > 0
    assert not broken, "\n".join(broken[:20])


def test_equation_references_point_at_numbered_equations():
    for page in CHAPTER_PAGES:
        for text in page_facts(page).equation_references:
            assert re.fullmatch(r"\(\d+(\.\d+)*\)", text), (
                f"{page.name}: equation reference shows {text!r}"
            )


def test_search_finds_a_chapter_by_a_word_in_it(browser, base_url):
    visit = PageVisit(browser, urljoin(base_url, "search.html?q=embedding"))
    try:
        hit = visit.page.locator('#search-results a[href*="sequences.html"]').first
        hit.wait_for(timeout=15000)
        assert visit.page.locator("#search-results li").count() >= 1
    finally:
        visit.close()


def test_navigation_lists_every_part_and_its_chapters_in_order(browser, base_url):
    """The sidebar, as a reader's browser draws it, shows each part of _toc.yml under
    its caption, with the part's chapters in the toc's order."""
    toc = yaml.safe_load((ROOT / "_toc.yml").read_text(encoding="utf-8"))
    # the preface is in no part, so every chapter's link is drawn with its address
    visit = PageVisit(browser, urljoin(base_url, "book/preface.html"))
    try:
        nav = visit.page.locator("nav.bd-docs-nav").first
        nav.wait_for(timeout=15000)
        drawn = nav.evaluate("""nav => [...nav.querySelectorAll('p.caption, a.reference')]
            .map(e => e.matches('p.caption') ? ['part', e.innerText.trim()]
                                              : ['page', e.getAttribute('href')])""")
    finally:
        visit.close()
    for part in toc["parts"]:
        caption = next((i for i, (kind, text) in enumerate(drawn)
                        if kind == "part" and part["caption"] in text), None)
        assert caption is not None, f"part {part['caption']!r} is not in the navigation"
        following = [href for kind, href in drawn[caption + 1:]
                     if kind == "page"][: len(part["chapters"])]
        expected = [Path(c["file"]).name for c in part["chapters"]]
        assert [Path(h.split("#")[0]).stem for h in following] == expected, (
            part["caption"], following)


def screenshot_whole_page(visit: PageVisit, chapter: Path, scheme: str) -> None:
    """A full-page screenshot of ``chapter`` in ``scheme`` ("light" or "dark"), after
    checking that the theme follows the reader's setting."""
    mode = visit.page.evaluate("() => document.documentElement.dataset.theme")
    assert mode == scheme, f"the theme did not follow the reader's {scheme} setting"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    visit.page.screenshot(path=str(SCREENSHOTS / f"{chapter.stem}-{scheme}.png"),
                          full_page=True)


def test_figures_stay_readable_in_the_dark_theme():
    """Figures stay readable in dark mode because they are drawn on an opaque white
    background (matplotlib's default), not on a transparent one: every chapter's."""
    checked = 0
    for chapter in CHAPTER_PAGES:
        for src in page_facts(chapter).output_images:
            with Image.open(io.BytesIO((chapter.parent / src).read_bytes())) as figure:
                rgba = figure.convert("RGBA")
                corners = [rgba.getpixel((x, y))
                           for x in (0, rgba.width - 1) for y in (0, rgba.height - 1)]
            assert all(pixel[3] == 255 and min(pixel[:3]) > 200 for pixel in corners), (
                chapter.stem, src)
            checked += 1
    assert checked >= len(CHAPTER_PAGES), "the chapters have too few figures to check"


def screenshot_code_under_its_equations(visit: PageVisit, chapter: Path, device: str) -> None:
    """A screenshot of the first snippet of package code on ``chapter`` that cites an
    equation, from the last displayed equation above it to its end; the snippet's box
    stays within the screen."""
    page = visit.page
    snippet = page.locator("div.seqbook-source").filter(
        has=page.locator('a[href^="#equation-"]')).first
    snippet.scroll_into_view_if_needed()
    # From the last displayed equation above the snippet to the snippet's end, in
    # the page's coordinates (at most a screen and a half above it).
    region = snippet.evaluate("""(snippet) => {
        const top = (el) => el.getBoundingClientRect().top + window.scrollY;
        const above = [...document.querySelectorAll('div.math')].filter(
            (m) => m.compareDocumentPosition(snippet) & Node.DOCUMENT_POSITION_FOLLOWING);
        const start = above.length ? top(above[above.length - 1]) : top(snippet);
        const box = snippet.getBoundingClientRect();
        return {start: Math.max(0, Math.max(start, top(snippet) - 1.5 * innerHeight) - 16),
                end: top(snippet) + box.height + 16, left: box.left, right: box.right,
                width: document.documentElement.clientWidth,
                code: snippet.querySelector('div.highlight pre').innerText.length};
    }""")
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{chapter.stem}-code-{device}.png"
    # the sticky header (and a focused "skip to content" link) stay at the top of
    # the page, out of the region
    page.evaluate("() => { document.activeElement?.blur(); window.scrollTo(0, 0); }")
    page.screenshot(path=str(path), full_page=True,
                    clip={"x": 0, "y": region["start"], "width": region["width"],
                          "height": region["end"] - region["start"]})
    assert region["code"] > 0, "the snippet shows no code"
    # The code scrolls inside its box; the box itself stays within the screen.
    assert region["left"] >= 0 and region["right"] <= region["width"] + 1, region
    with Image.open(path) as shot:
        assert shot.width >= region["width"] and shot.height > 50, shot.size


@pytest.mark.parametrize("slot", range(SOURCE_SCREENSHOTS))
def test_screenshots_of_code_under_its_equations_on_a_phone(slot, browser, base_url):
    """On a phone (the desktop's are taken on the visits of test_page_renders_cleanly)."""
    pages = pages_showing_code_under_equations()
    if slot >= len(pages):
        pytest.skip(f"only {len(pages)} chapter(s) show package code under their equations yet")
    chapter = pages[slot]
    visit = PageVisit(browser, urljoin(base_url, chapter.relative_to(HTML).as_posix()),
                      device="phone")
    try:
        screenshot_code_under_its_equations(visit, chapter, "phone")
        assert not visit.problems, "\n".join(visit.problems)
    finally:
        visit.close()


def check_diagrams_on_their_white_card(visit: PageVisit, chapter: Path) -> None:
    """In the dark theme each diagram in view loads, is drawn at a readable width, and
    its top-left pixel is the SVG's white card (the theme dims images in the dark: white
    shows as light grey, dark ink stays dark)."""
    page = visit.page
    page.wait_for_function("() => document.documentElement.dataset.theme === 'dark'")
    visible = [image for image in page.locator('figure img[src$=".svg"]').all()
               if image.is_visible()]  # not those folded in a closed dropdown
    assert visible, f"{chapter.stem}: no diagram in view"
    for image in visible:
        image.scroll_into_view_if_needed()
        size = image.evaluate("(img) => [img.complete, img.naturalWidth, "
                              "img.getBoundingClientRect().width]")
        assert size[0] and size[1] > 0 and size[2] >= 300, (chapter.stem, size)
        box = image.bounding_box()
        corner = Image.open(io.BytesIO(page.screenshot(clip={
            "x": box["x"] + 2, "y": box["y"] + 2, "width": 4, "height": 4}))).convert("RGB")
        assert min(corner.getpixel((1, 1))) > 200, (chapter.stem, corner.getpixel((1, 1)))


def test_diagrams_render_on_their_white_card_in_the_dark_theme(browser, base_url):
    """A page opened in a browser that prefers the dark scheme is dark, and its diagrams
    stay on their white card: the chapter shown whole (its dark screenshot, for people to
    look at). The other chapters' diagrams are checked in the dark on the visit of
    test_page_renders_cleanly."""
    assert len(pages_with_diagrams()) >= 10, "the chapters' mechanism diagrams are missing"
    chapter = screenshot_chapter()
    assert chapter is not None
    visit = PageVisit(browser, urljoin(base_url, chapter.relative_to(HTML).as_posix()),
                      color_scheme="dark")
    try:
        screenshot_whole_page(visit, chapter, "dark")  # before any scrolling
        assert visit.page.evaluate("() => document.documentElement.dataset.theme") == "dark"
        check_diagrams_on_their_white_card(visit, chapter)
        assert not visit.problems, "\n".join(visit.problems)
    finally:
        visit.close()
