# The kernels that execute the book (`make book`, `make test`; the Makefile points
# IPYTHONDIR here) draw each figure at twice its resolution and show it at its size,
# so that figures stay crisp on high-density screens, and check every figure's ticks
# (book/_ext/figure_checks.py: a fault is written to stderr, which fails a strict build).
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (IPython's config loader provides it)
c.InlineBackend.figure_formats = {"retina"}
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_ext"))
c.InteractiveShellApp.extensions = ["figure_checks"]
