"""seqbook: the companion package of an executable textbook on sequence models.

Every non-trivial piece of code in the book lives here, one module per concept, so the
chapters can ``import seqbook`` and the tests can hold each piece against a trusted twin.

Subpackages are imported on demand (``import seqbook.data``) to keep ``import seqbook``
cheap in Colab's first cell.

The annotations of every public function and method (tensors as jaxtyping types,
``Float[Tensor, "B T {self.d_model}"]``) are checked when it is called: the import hook
below hands each ``seqbook.*`` module, once run, to :mod:`seqbook._typecheck`, as
``beartype.claw`` does, so that no module can forget to be checked.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

__version__ = "0.1.0"


class _CheckingLoader(importlib.abc.Loader):
    """A module's own loader, which then wraps the module's public functions."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        from seqbook._typecheck import typecheck_namespace  # imports torch: not before

        typecheck_namespace(vars(module))

    def __getattr__(self, name: str) -> Any:  # get_source, get_code: inspect, Sphinx, runpy
        return getattr(self.loader, name)


class _CheckingFinder(importlib.abc.MetaPathFinder):
    """Finds this package's modules as usual, with a :class:`_CheckingLoader`."""

    prefix = __name__ + "."
    machinery = {__name__ + "._typecheck", __name__ + "._checks"}  # what checks is not checked

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not fullname.startswith(self.prefix) or fullname in self.machinery:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _CheckingLoader(spec.loader)
        return spec


if not any(isinstance(finder, _CheckingFinder) for finder in sys.meta_path):
    sys.meta_path.insert(0, _CheckingFinder())
