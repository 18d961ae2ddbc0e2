"""Every Example in a docstring of seqbook runs and prints what it claims."""

import doctest
import importlib
import pkgutil

import pytest

import seqbook

MODULES = sorted(
    info.name for info in pkgutil.walk_packages(seqbook.__path__, prefix="seqbook.")
)


@pytest.mark.parametrize("module_name", MODULES)
def test_docstring_examples(module_name):
    module = importlib.import_module(module_name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0, f"{result.failed} docstring example(s) failed in {module_name}"
