"""Point viewcode's "[docs]" links at the anchors the API reference really has.

``sphinx.ext.viewcode`` (Sphinx 7.4) builds every "[docs]" link of a module's source
page from one module name, the one under which the module's *first* documented object
was documented. When a module's objects are documented under different names (here
``seqbook.hopfield.memory.PatternMemory`` and ``seqbook.hopfield.Retrieval``, both
defined in ``seqbook/hopfield/memory.py``), the others' links name the object by its
canonical name, which the page has no anchor for. The Python domain knows the anchor
of every name, canonical ones included; this rewrites each link to it.
"""

from __future__ import annotations

import re
from typing import Any

from sphinx.application import Sphinx

BACKLINK = re.compile(r'(<a class="viewcode-back" href="[^"#]*#)([\w.]+)(")')


def fix_backlinks(app: Sphinx, pagename: str, templatename: str, context: dict[str, Any],
                  doctree: Any) -> None:
    if not pagename.startswith("_modules/") or "body" not in context:
        return
    # Domain.get_objects(): (name, display name, type, docname, anchor, priority)
    anchors = {name: node for name, _, _, _, node, _ in app.env.get_domain("py").get_objects()}

    def anchor(match: re.Match) -> str:
        node_id = anchors.get(match.group(2))
        return match.group(0) if node_id is None else match.expand(rf"\g<1>{node_id}\g<3>")

    context["body"] = BACKLINK.sub(anchor, context["body"])


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.viewcode")
    app.connect("html-page-context", fix_backlinks)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
