"""Keep each page's inline scripts unique.

In a Jupyter Book 1 build, the inline scripts of sphinx-thebe
(``const THEBE_JS_URL = ...``) and sphinx-togglebutton end up on every page twice,
once registered with ``filename=None`` and once with ``filename=''``, which Sphinx's
own de-duplication does not catch. The browser then reports "Identifier
'THEBE_JS_URL' has already been declared" on every page. Dropping duplicates (same
file, same inline body) fixes it without changing what any script does.
"""

from __future__ import annotations

from typing import Any

from sphinx.application import Sphinx


def drop_duplicate_scripts(
    app: Sphinx, pagename: str, templatename: str, context: dict[str, Any], doctree: Any
) -> None:
    scripts = context.get("script_files")
    if not scripts:
        return
    seen: set[tuple[str, str]] = set()
    unique = []
    for script in scripts:
        # Compare file and inline body only: the duplicates' filename is None in one
        # copy and "" in the other.
        attributes = getattr(script, "attributes", {})
        key = (str(getattr(script, "filename", script) or ""), str(attributes.get("body", "")))
        if key not in seen:
            seen.add(key)
            unique.append(script)
    context["script_files"] = unique


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("html-page-context", drop_duplicate_scripts, priority=900)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
