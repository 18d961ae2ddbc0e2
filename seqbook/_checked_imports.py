"""Every module of the package checks the contracts of its signatures once imported.

``seqbook/__init__.py`` calls :func:`check_package_signatures` before it imports
anything else, so each ``seqbook.*`` module is found and run as usual and then handed
to :func:`seqbook._contracts.check_signatures`, which wraps the public functions and
methods whose hints carry a contract. No module has to remember a call at its end, and
none can forget it. This module imports nothing heavy: ``import seqbook`` stays cheap.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
import types
from typing import Any

__all__ = ["check_package_signatures"]


class _CheckingLoader(importlib.abc.Loader):
    """A module's own loader, which then wraps the module's public functions."""

    def __init__(self, loader: Any) -> None:
        self.loader = loader

    def create_module(self, spec: Any) -> Any:
        return self.loader.create_module(spec)

    def exec_module(self, module: types.ModuleType) -> None:
        self.loader.exec_module(module)
        from seqbook._contracts import check_signatures  # imports torch: not before

        check_signatures(vars(module))

    def __getattr__(self, name: str) -> Any:  # get_source, get_code: inspect, Sphinx, runpy
        return getattr(self.loader, name)


class _CheckingFinder(importlib.abc.MetaPathFinder):
    """Finds the modules of one package as usual, with a :class:`_CheckingLoader`."""

    def __init__(self, package: str, machinery: tuple[str, ...]) -> None:
        self.prefix = package + "."
        self.machinery = {self.prefix + name for name in machinery}

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if not fullname.startswith(self.prefix) or fullname in self.machinery:
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is not None and spec.loader is not None:
            spec.loader = _CheckingLoader(spec.loader)
        return spec


def check_package_signatures(
    package: str, machinery: tuple[str, ...] = ("_checks", "_contracts")
) -> None:
    """Apply :func:`seqbook._contracts.check_signatures` to every module of ``package``
    (its ``__name__``) as it is imported, so that no module can forget to: the
    package's ``__init__`` calls this before it imports any of its modules (as
    beartype's ``beartype_this_package`` does for its own checks). The ``machinery``
    modules, which the checks are made of, are imported as they are."""
    if not any(isinstance(f, _CheckingFinder) and f.prefix == package + "."
               for f in sys.meta_path):
        sys.meta_path.insert(0, _CheckingFinder(package, machinery))
