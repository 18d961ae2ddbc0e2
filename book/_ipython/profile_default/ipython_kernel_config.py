# The kernels that execute the book (`make book`, `make test`; the Makefile points
# IPYTHONDIR here) draw each figure at twice its resolution and show it at its size,
# so that figures stay crisp on high-density screens, and check every figure's ticks
# (book/_ext/figure_checks.py: a fault is written to stderr, which fails a strict build).
# A run that checks claims, not pictures (make test's nbval, at other seeds) sets
# SEQBOOK_DRAW_FIGURES=0: its kernels show no figure format, so a figure is closed
# without being drawn (about 1-8 s a chapter); the strict build draws and checks them all.
import os
import sys
from pathlib import Path

c = get_config()  # noqa: F821  (IPython's config loader provides it)
draw = os.environ.get("SEQBOOK_DRAW_FIGURES", "1") != "0"
c.InlineBackend.figure_formats = {"retina"} if draw else set()
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "_ext"))
c.InteractiveShellApp.extensions = ["figure_checks"]
