"""Two lookups that the book's build repeats, answered once.

Profiled on the whole book, Sphinx's single-threaded write phase spent about a quarter of
its time on two lookups whose answers do not change during a build:

* pybtex finds its plugins (the plain-text backend, for every citation: 383 of them) by
  scanning the entry points of every installed package, each time;
* every ``{numref}`` (130) unpickles the whole doctree of the page it points to, to read
  the kind of the target (figure, table, code) and its caption.

Both are memoised here for one build. The doctrees are kept for numbered references only,
which read them and change nothing; the writer's own doctrees are loaded as before.
"""

from __future__ import annotations

import functools
from typing import Any

import pybtex.plugin
from docutils import nodes
from sphinx.application import Sphinx
from sphinx.domains.std import StandardDomain
from sphinx.environment import BuildEnvironment

# find_plugin looks this name up in its module at every call
pybtex.plugin._load_entry_point = functools.cache(pybtex.plugin._load_entry_point)

_resolve_numref = StandardDomain._resolve_numref_xref
_doctrees: dict[str, nodes.document] = {}


class _ReadOnlyDoctrees:
    """The build environment, with each page's doctree unpickled once."""

    def __init__(self, env: BuildEnvironment) -> None:
        self._env = env

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)

    def get_doctree(self, docname: str) -> nodes.document:
        if docname not in _doctrees:
            _doctrees[docname] = self._env.get_doctree(docname)
        return _doctrees[docname]


def _resolve_numref_xref(self: StandardDomain, env: BuildEnvironment, *args: Any,
                         **kwargs: Any) -> Any:
    return _resolve_numref(self, _ReadOnlyDoctrees(env), *args, **kwargs)  # type: ignore[arg-type]


def _forget(*_: Any) -> None:
    """The pages may change between builds of one process (sphinx-autobuild)."""
    _doctrees.clear()


def setup(app: Sphinx) -> dict[str, Any]:
    StandardDomain._resolve_numref_xref = _resolve_numref_xref  # type: ignore[method-assign]
    app.connect("env-updated", _forget)
    app.connect("build-finished", _forget)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
