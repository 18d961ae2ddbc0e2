"""seqbook: the companion package of an executable textbook on sequence models.

Every non-trivial piece of code in the book lives here, one module per concept, so the
chapters can ``import seqbook`` and the tests can hold each piece against a trusted twin.

Subpackages are imported on demand (``import seqbook.data``) to keep ``import seqbook``
cheap in Colab's first cell.
"""

__version__ = "0.1.0"
