"""Read a chapter again when the seqbook modules it imports change.

Sphinx reads a page again when its source or a file noted as its dependency changes.
A chapter's outputs also depend on the seqbook modules it imports, their committed
results and requirements.txt: ``make book`` executes it again then
(tools/execution_cache.py), and noting those files as the page's dependencies makes
Sphinx read the new outputs from the cache. A page that pastes a number glued in
another chapter (``{glue:text}`lstm.md::key:fmt```, as the main results page does)
depends on that chapter in the same way.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from sphinx.application import Sphinx


def setup(app: Sphinx) -> dict[str, Any]:
    sys.path.insert(0, str(app.srcdir))
    from tools.execution_cache import chapters, dependency_files

    notebooks = {path.resolve() for path in chapters(Path(app.srcdir))}

    def note_dependencies(app: Sphinx, docname: str, source: list[str]) -> None:
        path = Path(app.env.doc2path(docname)).resolve()
        pasted_from = {(path.parent / name).resolve()
                       for name in re.findall(r"\{glue:?\w*\}`([\w/.-]+\.md)::", source[0])}
        for chapter in ({path} | pasted_from) & notebooks:
            if chapter != path:
                app.env.note_dependency(str(chapter))
            for dependency in dependency_files(chapter, Path(app.srcdir)):
                app.env.note_dependency(str(dependency))

    app.connect("source-read", note_dependencies)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
