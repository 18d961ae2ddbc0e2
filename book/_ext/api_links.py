"""Link each entry of the API reference to the chapters that explain it.

Chapters refer to the package with Python roles (``{py:func}`seqbook.data.pad_batch```),
which Sphinx turns into links to the API reference. This extension records, while the
chapters are read, which chapter refers to which object, and adds an "Explained in"
line under each entry of the API page pointing back at those chapters. The links are
derived from the chapters themselves, so they cannot go stale.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.environment import BuildEnvironment

STORE = "seqbook_explained_in"  # env attribute: object name -> set of docnames
API_PAGE = "book/api"
CSS_CLASS = "explained-in"


def _store(env: BuildEnvironment) -> dict[str, set[str]]:
    if not hasattr(env, STORE):
        setattr(env, STORE, defaultdict(set))
    return getattr(env, STORE)


def record_references(app: Sphinx, doctree: nodes.document) -> None:
    docname = app.env.docname
    if docname == API_PAGE:
        return
    store = _store(app.env)
    for xref in doctree.findall(addnodes.pending_xref):
        target = xref.get("reftarget", "")
        if xref.get("refdomain") == "py" and target.startswith("seqbook"):
            # credit the object and its parents: a method's chapter explains its class
            parts = target.split(".")
            for end in range(2, len(parts) + 1):
                store[".".join(parts[:end])].add(docname)


def purge(app: Sphinx, env: BuildEnvironment, docname: str) -> None:
    for docnames in _store(env).values():
        docnames.discard(docname)


def merge(app: Sphinx, env: BuildEnvironment, docnames: list[str], other: BuildEnvironment) -> None:
    for name, sources in _store(other).items():
        _store(env)[name] |= sources


def add_links(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    if docname != API_PAGE:
        return
    store = _store(app.env)
    for desc in doctree.findall(addnodes.desc):
        if desc.get("domain") != "py":
            continue
        signature = next(iter(desc.findall(addnodes.desc_signature)), None)
        if signature is None or not signature.get("ids"):
            continue
        name = signature["ids"][0]
        chapters = sorted(store.get(name, ()), key=lambda d: app.env.titles[d].astext())
        if not chapters:
            continue
        line = nodes.paragraph(classes=[CSS_CLASS])
        line += nodes.strong(text="Explained in: ")
        for i, chapter in enumerate(chapters):
            if i:
                line += nodes.Text(", ")
            uri = app.builder.get_relative_uri(docname, chapter)
            line += nodes.reference("", app.env.titles[chapter].astext(), internal=True, refuri=uri)
        content = next(iter(desc.findall(addnodes.desc_content)), None)
        if content is not None:
            content.insert(0, line)


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("doctree-read", record_references)
    app.connect("env-purge-doc", purge)
    app.connect("env-merge-info", merge)
    app.connect("doctree-resolved", add_links)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True,
            "env_version": 1}
