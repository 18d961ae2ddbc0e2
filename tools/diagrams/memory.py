"""memory diagrams."""

from __future__ import annotations

from diagrams import Canvas, diagram  # noqa: F401
