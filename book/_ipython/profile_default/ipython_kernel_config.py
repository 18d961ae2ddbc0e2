# The kernels that execute the book (`make book`, `make test`; the Makefile points
# IPYTHONDIR here) draw each figure at twice its resolution and show it at its size,
# so that figures stay crisp on high-density screens.
c = get_config()  # noqa: F821  (IPython's config loader provides it)
c.InlineBackend.figure_formats = {"retina"}
