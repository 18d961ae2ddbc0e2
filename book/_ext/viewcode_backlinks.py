"""Point viewcode's "[docs]" links at the anchors the API reference really has.

``sphinx.ext.viewcode`` (Sphinx 7.4) builds every "[docs]" link of a module's source
page from one module name, the one under which the module's *first* documented object
was documented. When a module's objects are documented under different names (here
``seqbook.hopfield.memory.PatternMemory`` and ``seqbook.hopfield.Retrieval``, both
defined in ``seqbook/hopfield/memory.py``), the others' links name the object by its
canonical name, which the page has no anchor for; and an object of a module whose
first documented object is re-exported elsewhere (``seqbook.notebook.claim``, defined in
``seqbook/claims.py``) is named under the re-exporting module. The Python domain knows
the anchor of every name, canonical ones included; this rewrites each link to it.
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
    module = pagename[len("_modules/"):].replace("/", ".")  # the page's own module

    def anchor(match: re.Match) -> str:
        name = match.group(2)
        node_id = anchors.get(name)
        # a name under another module (seqbook.notebook.ClaimError, for an object of
        # seqbook/claims.py): the object under this page's module, by its qualified name
        parts = name.split(".")
        for start in range(1, len(parts)):
            if node_id is None:
                node_id = anchors.get(f"{module}.{'.'.join(parts[start:])}")
        return match.group(0) if node_id is None else match.expand(rf"\g<1>{node_id}\g<3>")

    context["body"] = BACKLINK.sub(anchor, context["body"])


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.viewcode")
    app.connect("html-page-context", fix_backlinks)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
