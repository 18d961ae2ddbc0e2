"""Open-in-Colab links that point at the chapters' ``notebooks/`` twins.

Jupyter Book 1's Colab launch button links to the page's source file, here a MyST
Markdown file (``book/<name>.md``) that Colab cannot open. The chapters' Colab-ready
twins live in ``notebooks/<name>.ipynb``. This extension

* rewrites the theme's Colab launch button to the twin, and
* puts a visible "Open in Colab" link under each chapter's title.

Pages without a twin (the API reference, the execution report) get neither. The
link opens the twin of the commit the book is built from (``git rev-parse HEAD``), so
that the notebook a reader opens is the page's own; outside a git checkout it opens the
branch. The repository and branch come from ``_config.yml`` (``repository.url``/
``branch``), the only place they are written down.
"""

from __future__ import annotations

import functools
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

from docutils import nodes
from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)

NOTEBOOKS_DIR = "notebooks"
BADGE_CLASS = "colab-link"


def colab_url(app: Sphinx, docname: str) -> str | None:
    """The Colab address of ``docname``'s twin, or None if the page has no twin."""
    twin = Path(app.srcdir) / NOTEBOOKS_DIR / f"{Path(docname).name}.ipynb"
    if not twin.is_file():
        return None
    options = app.config.html_theme_options
    repository = options.get("repository_url", "")
    parts = urlparse(repository)
    if parts.netloc != "github.com" or parts.path.strip("/").count("/") != 1:
        logger.warning(
            f"colab_link: repository.url must be https://github.com/ORG/REPO, got {repository!r}"
        )
        return None
    base = options.get("launch_buttons", {}).get("colab_url", "https://colab.research.google.com")
    revision = built_commit(app.srcdir) or options.get("repository_branch", "main")
    relative = twin.relative_to(app.srcdir).as_posix()
    return f"{base.rstrip('/')}/github/{parts.path.strip('/')}/blob/{revision}/{relative}"


@functools.cache
def built_commit(srcdir: str) -> str | None:
    """The commit the book is built from, or None outside a git checkout."""
    done = subprocess.run(["git", "rev-parse", "HEAD"], cwd=srcdir, capture_output=True,
                          text=True)
    return done.stdout.strip() if done.returncode == 0 else None


def add_colab_link(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    """Insert the "Open in Colab" link right after the page's title."""
    url = colab_url(app, docname)
    if url is None:
        return
    section = next(iter(doctree.findall(nodes.section)), None)
    if section is None:
        return
    link = nodes.reference("", "Open in Colab", refuri=url, classes=[BADGE_CLASS])
    paragraph = nodes.paragraph("", "", link, classes=[f"{BADGE_CLASS}-line"])
    title_index = next(
        (i for i, child in enumerate(section.children) if isinstance(child, nodes.title)), -1
    )
    section.insert(title_index + 1, paragraph)


def _rewrite(buttons: Any, url: str) -> None:
    """Replace the URL of every Colab button in the theme's nested button groups."""
    if isinstance(buttons, list):
        for button in buttons:
            _rewrite(button, url)
    elif isinstance(buttons, dict):
        if "colab.research.google.com" in str(buttons.get("url", "")):
            buttons["url"] = url
        for value in buttons.values():  # groups keep their members under "buttons"
            if isinstance(value, (list, dict)):
                _rewrite(value, url)


def fix_launch_button(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    """Point the theme's Colab launch button at the twin instead of the .md source."""
    url = colab_url(app, pagename)
    if url is not None:
        _rewrite(context.get("header_buttons"), url)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-resolved", add_colab_link)
    # sphinx-book-theme adds its launch buttons at priority 501; run after it.
    app.connect("html-page-context", fix_launch_button, priority=600)
    app.add_css_file("colab_link.css")
    app.connect("builder-inited", _add_static_path)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}


def _add_static_path(app: Sphinx) -> None:
    app.config.html_static_path.append(str(Path(__file__).parent / "static"))
