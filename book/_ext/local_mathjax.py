"""Serve MathJax from the book itself instead of a CDN.

Sphinx loads MathJax from cdn.jsdelivr.net by default, so a book read offline (or
built and tested on a machine without internet, like CI) shows raw LaTeX. MathJax 3
is published on PyPI inside ``django-static-mathjax`` (MathJax's own files, Apache
2.0); this extension copies the parts a page needs (the ``tex-chtml`` bundle, the TeX
extensions it loads on demand, the menu and accessibility code, and the CHTML fonts)
into the build's ``_static/mathjax/`` and points ``mathjax_path`` at it.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx
from sphinx.errors import ExtensionError

# Paths inside MathJax's es5/ directory that tex-chtml.js loads, eagerly or on demand.
NEEDED = [
    "tex-chtml.js",
    "input/tex/extensions",
    "output/chtml/fonts/woff-v2",
    "ui",
    "a11y",
    "adaptors",
]


def mathjax_es5() -> Path:
    try:
        import mathjax  # the django-static-mathjax package
    except ImportError as error:  # pragma: no cover - requirements.txt installs it
        raise ExtensionError(
            "local_mathjax needs the django-static-mathjax package (see requirements.txt)"
        ) from error
    es5 = Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"
    if not (es5 / "tex-chtml.js").is_file():
        raise ExtensionError(f"local_mathjax: no tex-chtml.js in {es5}")
    return es5


def copy_mathjax(app: Sphinx) -> None:
    source = mathjax_es5()
    # A folder of our own next to the doctrees, added to html_static_path, so Sphinx
    # copies it into _static/ like any other static file.
    staging = Path(app.doctreedir).parent / "local_mathjax_static"
    target = staging / "mathjax"
    if target.exists():
        shutil.rmtree(target)
    for relative in NEEDED:
        origin = source / relative
        if origin.is_dir():
            shutil.copytree(origin, target / relative)
        else:
            (target / relative).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(origin, target / relative)
    app.config.html_static_path.append(str(staging))
    # A relative mathjax_path is resolved against _static/.
    app.config.mathjax_path = "mathjax/tex-chtml.js"


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("builder-inited", copy_mathjax)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
