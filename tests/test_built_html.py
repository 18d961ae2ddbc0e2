"""Checks of the rendered book in _build/html. `make test` runs them after the build."""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path
from urllib.parse import urlparse

import pytest
from bs4 import BeautifulSoup

from book_files import ROOT, chapters, repository_url

pytestmark = pytest.mark.built_html

HTML = ROOT / "_build" / "html"
CHAPTERS = chapters()


def page(name: str) -> BeautifulSoup:
    path = HTML / "book" / f"{name}.html"
    assert path.exists(), f"{path} is missing: build the book first (make book)"
    return _parsed(path, path.stat().st_mtime_ns)


@functools.lru_cache(maxsize=None)
def _parsed(path: Path, mtime_ns: int) -> BeautifulSoup:
    # parsed once for all the tests, which only read it
    return BeautifulSoup(path.read_text(encoding="utf-8"), "html.parser")


def notebook_of_colab_url(url: str) -> Path:
    """The repository file a Colab URL opens, checked against _config.yml."""
    parts = urlparse(url)
    assert parts.netloc == "colab.research.google.com", url
    repo_path = urlparse(repository_url()).path.strip("/")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True,
                            text=True).stdout.strip()  # the twin of the page's own commit
    prefix = f"/github/{repo_path}/blob/{commit}/"
    assert parts.path.startswith(prefix), f"{url} does not open {repo_path}@{commit}"
    return ROOT / parts.path[len(prefix):]


def test_index_leads_to_the_preface():
    index = (HTML / "index.html").read_text(encoding="utf-8")
    assert "book/preface.html" in index


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_every_colab_link_opens_an_existing_notebook_twin(chapter):
    soup = page(chapter.stem)
    links = [a["href"] for a in soup.find_all("a", href=True)
             if "colab.research.google.com" in a["href"]]
    assert len(links) >= 2, "expected the header launch button and the link under the title"
    for url in links:
        target = notebook_of_colab_url(url)
        assert target.parent.name == "notebooks" and target.suffix == ".ipynb", url
        assert target.exists(), f"{url} points at {target}, which does not exist"
        assert target.stem == chapter.stem
    visible = soup.select("a.colab-link")
    assert len(visible) == 1 and visible[0].get_text(strip=True) == "Open in Colab"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_chapter_pages_have_live_figures_and_numbered_equations(chapter):
    soup = page(chapter.stem)
    images = soup.select("img")
    assert images, "a chapter should have live figures"
    for img in images:
        assert (HTML / "book" / img["src"]).resolve().exists(), img["src"]
    assert soup.select("div.math"), "no displayed equations"
    assert soup.select("span.eqno"), "displayed equations should be numbered"
    assert not soup.find(string=re.compile(r"Traceback \(most recent call last\)"))


def test_api_reference_documents_the_package():
    soup = page("api")
    documented = {dt["id"] for dt in soup.select("dt[id]")}
    for name in ("seqbook.data.pad_batch", "seqbook.data.Vocab", "seqbook.train.fit",
                 "seqbook.utils.seed_everything", "seqbook.data.mnist5k"):
        assert name in documented, name


def test_every_api_entry_links_to_a_chapter_that_explains_it():
    soup = page("api")
    entries = soup.select("dl.py.function > dt[id], dl.py.class > dt[id], dl.py.data > dt[id]")
    assert entries
    unexplained = []
    for entry in entries:
        content = entry.find_next_sibling("dd")
        line = content.find("p", class_="explained-in") if content else None
        links = line.find_all("a", href=True) if line else []
        if not links:
            unexplained.append(entry["id"])
        for link in links:
            assert (HTML / "book" / link["href"].split("#")[0]).exists(), link["href"]
    assert not unexplained, f"API entries no chapter refers to: {unexplained}"


def test_each_chapter_links_to_the_api_reference():
    for chapter in CHAPTERS:
        links = page(chapter.stem).select('a[href*="api.html#seqbook."]')
        assert links, f"{chapter.stem} does not link any package function to the API reference"


def test_pages_offer_md_and_ipynb_downloads():
    for chapter in CHAPTERS:
        soup = page(chapter.stem)
        hrefs = {a["href"] for a in soup.find_all("a", href=True)}
        for suffix in (".md", ".ipynb"):
            source = f"_sources/book/{chapter.stem}{suffix}"
            assert any(h.endswith(source) for h in hrefs), f"{chapter.stem}: no {suffix} download"
            assert (HTML / source).exists(), source


def test_execution_report_lists_every_chapter():
    soup = page("execution_report")
    table = soup.find("table")
    assert table is not None, "the execution report has no table"
    text = table.get_text(" ")
    for chapter in CHAPTERS:
        assert f"book/{chapter.stem}" in text


def test_pages_without_a_twin_have_no_colab_link():
    for name in ("api", "execution_report", "bibliography", "glossary"):
        assert not page(name).select("a.colab-link"), name


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_shown_source_cites_equations_of_its_own_page(chapter):
    # seqbook.notebook.show_source turns each "(eq-...)" comment of the shown code into
    # a reference: it must land on an equation of the same page, just above the code.
    soup = page(chapter.stem)
    for snippet in soup.select("div.seqbook-source"):
        assert snippet.select("div.highlight pre"), "a snippet without highlighted code"
        # a private helper's snippet links to its owner: a class, or its module's entry
        api_links = snippet.select(
            'a[href*="api.html#seqbook."], a[href*="api.html#module-seqbook."]')
        assert api_links, "a snippet without its API link"
        for link in snippet.select('a[href*="equation-"]'):
            href = link["href"]
            assert href.startswith("#equation-"), f"{chapter.stem}: {href} is not on this page"
            assert soup.find(id=href[1:]), f"{chapter.stem}: no equation {href}"


def test_the_preface_leads_to_the_roadmap_and_the_notation_and_lists_its_sections():
    preface = page("preface")
    links = {a["href"].split("#")[0] for a in preface.select("main a[href]")}
    assert {"roadmap.html", "notation.html"} <= links
    sections = [h.get_text(" ", strip=True).rstrip("#").strip()
                for h in preface.select("main section > h2")]
    contents = preface.select_one(".bd-toc")
    listed = contents.get_text(" ", strip=True) if contents else ""
    assert len(sections) >= 5 and all(s in listed for s in sections), (sections, listed)
    roadmap = page("roadmap")
    figure = roadmap.select_one("figure img")
    assert figure is not None and len(figure.get("alt", "")) > 100  # described, not named
    assert "Fig. 1" in roadmap.select_one("figure figcaption").get_text()
    assert page("notation").select_one("main table") is not None


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_the_roadmaps_minutes_are_those_of_the_built_chapter(chapter):
    """The roadmap's reading times (book/reading_minutes.json) stay those of the book:
    within half a minute, the effect of a paragraph (then `tools/roadmap.py
    --measure`); and each chapter's main thread stays within its 30 minutes."""
    import roadmap  # tools/

    built = roadmap.main_thread_minutes(HTML / "book" / f"{chapter.stem}.html")
    committed = roadmap.minutes()[chapter.stem]
    assert abs(built - committed) <= 0.5, (built, committed)
    assert built <= 30.0


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_every_image_is_a_numbered_figure_with_a_caption_and_a_description(chapter):
    soup = page(chapter.stem)
    images = [img for img in soup.select("article img") if "_images/" in img.get("src", "")]
    assert images, "a chapter should have figures"
    for img in images:
        figure = img.find_parent("figure")
        assert figure is not None and figure.get("id", "").startswith("fig-"), \
            f"{img['src']} is not a named figure"
        number = figure.select_one("figcaption .caption-number")
        assert number and re.fullmatch(r"Fig\. \d+\.\d+ ?", number.get_text()), \
            f"{figure['id']} has no chapter-numbered caption"
        assert len(figure.select_one("figcaption .caption-text").get_text(strip=True)) >= 30
        alt = img.get("alt", "")
        assert len(alt) >= 60 and not re.search(r"\.(png|svg)\b", alt), \
            f"{figure['id']}: the alt text does not describe the figure"
        # cited from the page's text: a link to the figure outside the figure itself
        assert soup.select(f'a[href="#{figure["id"]}"]:not(.headerlink)'), \
            f"{figure['id']} is never cited"


@pytest.mark.parametrize("chapter", CHAPTERS, ids=[c.stem for c in CHAPTERS])
def test_the_colab_edition_numbers_equations_and_figures_as_the_page_does(chapter):
    """The twin writes "(4.3)" and "Figure 4.2" from the Markdown alone; the page is
    numbered by Sphinx: the two must agree, folds and figures of code cells included."""
    import colab_edition  # tools/

    soup = page(chapter.stem)
    for span in soup.select("span.eqno"):
        label = span.find("a")["href"].split("#equation-")[-1]
        assert colab_edition.numbers()[label][1] == span.get_text().strip("()# \n"), label
    for figure in soup.select("figure[id^=fig-]"):
        number = figure.select_one(".caption-number").get_text().replace("Fig.", "").strip()
        assert colab_edition.figures()[figure["id"]][1] == number, figure["id"]
