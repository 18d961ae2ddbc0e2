"""seqbook: the companion package of an executable textbook on sequence models.

Every non-trivial piece of code in the book lives here, one module per concept, so the
chapters can ``import seqbook`` and the tests can hold each piece against a trusted twin.

Subpackages are imported on demand (``import seqbook.data``) to keep ``import seqbook``
cheap in Colab's first cell.
"""

from seqbook._checked_imports import check_package_signatures

__version__ = "0.1.0"

# every module imported from here on checks the contracts in its public signatures
check_package_signatures(__name__)
