"""A lookup that the book's build repeats, answered once.

Profiled on the whole book, Sphinx's single-threaded write phase spent about a tenth of
its time in pybtex finding its plain-text backend, once for every citation (383 of them):
pybtex looks a plugin up among its runtime registrations first and otherwise scans the
entry points of every installed package, each time. Registering the backend it finds
(pybtex's public ``register_plugin``, the class unchanged) answers every later lookup from
the registrations.
"""

from __future__ import annotations

from typing import Any

import pybtex.plugin
from sphinx.application import Sphinx

GROUP, NAME = "pybtex.backends", "plaintext"


def setup(app: Sphinx) -> dict[str, Any]:
    backend = pybtex.plugin.find_plugin(GROUP, NAME)  # the installed one, found once
    pybtex.plugin.register_plugin(GROUP, NAME, backend, force=True)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
