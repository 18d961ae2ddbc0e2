"""The rendered book as a reader meets it, in a real (headless) Chromium.

Needs the build in _build/html (`make test` runs this after it) and Debian's chromium
(`make test` installs it). Every page is opened from a local HTTP server; the checks
are those a reader would notice: errors in the console, equations left as raw LaTeX,
broken images or links, solutions that are not hidden, a search that finds nothing.
A summary (pages, links, equations) goes to _build/browser-report.json and
screenshots to _build/screenshots/.
"""

from __future__ import annotations

import functools
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
from bs4 import BeautifulSoup

from book_files import ROOT, chapters

pytestmark = pytest.mark.built_html

HTML = ROOT / "_build" / "html"
SCREENSHOTS = ROOT / "_build" / "screenshots"
REPORT = ROOT / "_build" / "browser-report.json"
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
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


PAGES = html_pages()
PAGE_IDS = [p.relative_to(HTML).as_posix() for p in PAGES]
CHAPTER_PAGES = [HTML / "book" / f"{c.stem}.html" for c in chapters()]


class _QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def base_url():
    assert HTML.is_dir(), "no _build/html: build the book first (make book)"
    server = socketserver.ThreadingTCPServer(
        ("127.0.0.1", 0), functools.partial(_QuietHandler, directory=str(HTML))
    )
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/"
    server.shutdown()


@pytest.fixture(scope="module")
def browser():
    assert Path(CHROMIUM).exists(), f"{CHROMIUM} not found: apt-get install chromium"
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="module")
def report():
    summary = {"pages": 0, "equations_typeset": 0, "internal_links": 0, "images": 0,
               "solutions_toggled": 0, "per_page": {}}
    yield summary
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    REPORT.write_text(json.dumps(summary, indent=2), encoding="utf-8")


class PageVisit:
    """A page opened in the browser, with everything it logged."""

    def __init__(self, browser, url: str, color_scheme: str = "light") -> None:
        self.context = browser.new_context(viewport={"width": 1300, "height": 900},
                                           color_scheme=color_scheme)
        self.page = self.context.new_page()
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
        self.context.close()


@pytest.mark.parametrize("path", PAGES, ids=PAGE_IDS)
def test_page_renders_cleanly(path, browser, base_url, report):
    relative = path.relative_to(HTML).as_posix()
    visit = PageVisit(browser, urljoin(base_url, relative))
    page = visit.page
    try:
        math = page.evaluate("""() => {
            const all = [...document.querySelectorAll('.math')];
            return {total: all.length,
                    typeset: all.filter(m => m.querySelector('mjx-container')).length};
        }""")
        raw_latex = page.evaluate(r"""() => {
            const main = document.querySelector('main') || document.body;
            const walker = document.createTreeWalker(main, NodeFilter.SHOW_TEXT);
            const found = [];
            while (walker.nextNode()) {
                const node = walker.currentNode;
                if (node.parentElement.closest('pre, code, .highlight, script, style, mjx-container'))
                    continue;
                if (/\$\$|\\\(|\\\[/.test(node.textContent)) found.push(node.textContent.slice(0, 60));
            }
            return found;
        }""")
        images = page.evaluate("""() => [...document.images].map(
            img => ({src: img.getAttribute('src'), ok: img.complete && img.naturalWidth > 0}))""")
    finally:
        visit.close()
    broken_images = [img["src"] for img in images if not img["ok"]]
    report["pages"] += 1
    report["equations_typeset"] += math["typeset"]
    report["images"] += len(images)
    report["per_page"][relative] = {"equations": math["typeset"], "images": len(images)}
    assert not visit.problems, "\n".join(visit.problems)
    assert math["typeset"] == math["total"], f"{math['total'] - math['typeset']} equations not typeset"
    assert not raw_latex, f"raw LaTeX left in the text: {raw_latex[:3]}"
    assert not broken_images, f"images that did not load: {broken_images}"


def test_every_internal_link_and_anchor_resolves(report):
    assert PAGES, "no pages: build the book first"
    ids_of: dict[Path, set[str]] = {}

    def ids(target: Path) -> set[str]:
        if target not in ids_of:
            soup = BeautifulSoup(target.read_text(encoding="utf-8"), "html.parser")
            ids_of[target] = {tag["id"] for tag in soup.find_all(id=True)}
        return ids_of[target]

    broken, checked = [], 0
    for page in PAGES:
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for anchor in soup.find_all("a", href=True):
            href = anchor["href"]
            parts = urlparse(href)
            if parts.scheme or href.startswith(("mailto:", "javascript:")):
                continue  # external links are not ours to check offline
            target = page if not parts.path else (page.parent / unquote(parts.path)).resolve()
            checked += 1
            if target.is_dir():
                target = target / "index.html"
            if not target.exists():
                broken.append(f"{page.relative_to(HTML)}: {href} (no such file)")
            elif parts.fragment and target.suffix == ".html" and unquote(parts.fragment) not in ids(target):
                broken.append(f"{page.relative_to(HTML)}: {href} (no such anchor)")
    report["internal_links"] = checked
    assert checked > 0
    assert not broken, "\n".join(broken[:20])


def test_equation_references_point_at_numbered_equations():
    for page in CHAPTER_PAGES:
        soup = BeautifulSoup(page.read_text(encoding="utf-8"), "html.parser")
        for ref in soup.select('a.reference[href*="#equation-"]'):
            assert re.fullmatch(r"\(\d+(\.\d+)*\)", ref.get_text(strip=True)), (
                f"{page.name}: equation reference shows {ref.get_text(strip=True)!r}"
            )


@pytest.mark.parametrize("path", CHAPTER_PAGES, ids=[p.stem for p in CHAPTER_PAGES])
def test_solutions_are_hidden_until_toggled(path, browser, base_url, report):
    visit = PageVisit(browser, urljoin(base_url, path.relative_to(HTML).as_posix()))
    page = visit.page
    try:
        solutions = page.locator("div.solution.dropdown")
        count = solutions.count()
        assert count > 0, "no solutions on a chapter page"
        for i in range(count):
            solution = solutions.nth(i)
            body = solution.locator(":scope > :not(.admonition-title)").first
            assert not body.is_visible(), f"solution {i + 1} is visible before it is opened"
            solution.locator(".admonition-title").click()
            body.wait_for(state="visible", timeout=5000)
            report["solutions_toggled"] += 1
        assert not visit.problems, "\n".join(visit.problems)
    finally:
        visit.close()


def test_search_finds_a_chapter_by_a_word_in_it(browser, base_url):
    visit = PageVisit(browser, urljoin(base_url, "search.html?q=embedding"))
    try:
        hit = visit.page.locator('#search-results a[href*="sequences.html"]').first
        hit.wait_for(timeout=15000)
        assert visit.page.locator("#search-results li").count() >= 1
    finally:
        visit.close()


def test_screenshots_light_and_dark_with_readable_figures(browser, base_url):
    from PIL import Image

    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    chapter = CHAPTER_PAGES[0]
    url = urljoin(base_url, chapter.relative_to(HTML).as_posix())
    for scheme in ("light", "dark"):
        visit = PageVisit(browser, url, color_scheme=scheme)
        try:
            mode = visit.page.evaluate("() => document.documentElement.dataset.theme")
            assert mode == scheme, f"the theme did not follow the reader's {scheme} setting"
            visit.page.screenshot(path=str(SCREENSHOTS / f"{chapter.stem}-{scheme}.png"),
                                  full_page=True)
            assert not visit.problems, "\n".join(visit.problems)
        finally:
            visit.close()
    # Figures stay readable in dark mode because they are drawn on an opaque white
    # background (matplotlib's default), not on a transparent one.
    soup = BeautifulSoup(chapter.read_text(encoding="utf-8"), "html.parser")
    figures = soup.select(".cell_output img")
    assert figures, "the chapter has no figures to check"
    for img in figures:
        with Image.open(io.BytesIO((chapter.parent / img["src"]).read_bytes())) as figure:
            rgba = figure.convert("RGBA")
            corners = [rgba.getpixel((x, y)) for x in (0, rgba.width - 1) for y in (0, rgba.height - 1)]
        assert all(pixel[3] == 255 and min(pixel[:3]) > 200 for pixel in corners), img["src"]
