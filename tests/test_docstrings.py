"""Every Example in a docstring of seqbook runs and prints what it claims, and every
docstring that holds LaTeX is a raw string."""

import doctest
import importlib
import pkgutil
import re

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


def test_docstrings_with_backslashes_are_raw_strings():
    """A LaTeX macro in a docstring that is not a raw string loses its backslash to an
    escape: ``\\bullet`` becomes a backspace and "ullet", ``\\nabla`` a newline, and the
    API page shows a MathJax error or wrong text. (Only a raw docstring may hold them.)"""
    import ast
    from pathlib import Path

    cooked = []
    for path in sorted(Path(seqbook.__file__).parent.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        lines = source.splitlines(keepends=True)
        for node in ast.walk(ast.parse(source)):
            if not isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                                     ast.AsyncFunctionDef)) or not node.body:
                continue
            first = node.body[0]
            if not (isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                    and isinstance(first.value.value, str)):
                continue
            # the literal as written (ast.get_source_segment splits the file anew on
            # each call: seconds over the package)
            literal = "".join(lines[first.value.lineno - 1:first.value.end_lineno])
            # an escape: an odd run of backslashes before a letter (a doubled one is
            # the backslash itself)
            escapes = [run for run, _ in re.findall(r"(\\+)([A-Za-z])", literal)
                       if len(run) % 2]
            prefix = literal.lstrip()[:2].lower()  # the docstring opens its first line
            if escapes and not prefix.startswith(("r", "br", "rb")):
                cooked.append(f"{path.name}:{first.lineno}")
    assert not cooked, f"docstrings with a backslash escape that are not raw: {cooked}"
