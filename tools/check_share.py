"""How much of the package is argument checking, and how the chapters show its code.

Three counts, printed one per line (``--by-module`` adds one row per module first):

**Check share.** The lines of every statement of ``seqbook/`` that is not a docstring
(a compound statement, such as ``def`` or ``if``, counts its header lines; its body
counts statement by statement), and among them the *check lines*: every line of a
function named ``check_*``, ``_check_*`` (or ``_check``) or ``_validate*``, of the
shared modules ``_checks.py`` and ``_typecheck.py`` whole, of an
``if ...: raise`` statement (an ``if`` whose body only raises), and of every other
simple statement that calls such a function anywhere (``check_x(...)``,
``x = check_x(...)``, ``return kernel(check_x(...))``). The share is the second over
the first.

**The budget's count** (checks at most 10% of the executable lines; printed second) is
narrower: functions whose name starts with ``check`` (or ``_check``, ``_validate``),
``if ...: raise`` statements and *bare* calls of such functions, the shared modules
counted by those names like any other.

**Snippets.** Every ``show_source(...)`` call in ``book/*.md``: how many, and how many
are cut with ``start=``/``stop=`` (``tests/test_book.py`` measures the bodies shown).

Run from the repository root::

    python tools/check_share.py [--by-module]
"""

from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHECK_NAME = re.compile(r"^_?check(_|$)|^_validate")  # not checkpoint*
# the budget's own count: any name that starts with check, bare calls only, and the
# shared modules by their functions' names like every other module
BUDGET_NAME = re.compile(r"^_?check|^_validate")
# the shared validation: every line of these modules is a check line, whatever its name
CHECK_MODULES = {"_checks.py", "_typecheck.py"}


def _name(func: ast.expr) -> str:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return ""


def _is_check_call(node: ast.stmt, budget: bool = False) -> bool:
    """A simple statement that calls a check anywhere (``return f(check_x(...))`` too);
    ``budget``: a bare call (an expression statement) to a name of ``BUDGET_NAME``."""
    if budget:
        return (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                and bool(BUDGET_NAME.match(_name(node.value.func))))
    return any(isinstance(n, ast.Call) and CHECK_NAME.match(_name(n.func))
               for n in ast.walk(node))


def _is_if_raise(node: ast.stmt) -> bool:
    return (isinstance(node, ast.If) and not node.orelse
            and all(isinstance(s, ast.Raise) for s in node.body))


def _span(node: ast.AST) -> set[int]:
    return set(range(node.lineno, node.end_lineno + 1))


def measure_source(
    source: str, all_checks: bool = False, budget: bool = False
) -> tuple[set[int], set[int]]:
    """The statement lines and the check lines of one module's source (``all_checks``:
    every statement line is a check line; ``budget``: the budget's count, see
    ``BUDGET_NAME``)."""
    names = BUDGET_NAME if budget else CHECK_NAME
    statements: set[int] = set()
    checks: set[int] = set()

    def visit(body: list[ast.stmt], in_check: bool) -> None:
        for i, node in enumerate(body):
            docstring = (i == 0 and isinstance(node, ast.Expr)
                         and isinstance(node.value, ast.Constant)
                         and isinstance(node.value.value, str))
            if docstring:
                continue
            blocks = [getattr(node, f) for f in ("body", "orelse", "finalbody", "handlers")
                      if isinstance(getattr(node, f, None), list) and getattr(node, f)]
            if isinstance(node, ast.Match):
                blocks = [c.body for c in node.cases]
            if blocks and not _is_if_raise(node):
                first = min(b[0].lineno for b in blocks)
                header = set(range(node.lineno, first))
                statements.update(header)
                is_check = isinstance(node, ast.FunctionDef) and bool(names.match(node.name))
                if in_check or is_check:
                    checks.update(header)
                for block in blocks:
                    if block and isinstance(block[0], ast.ExceptHandler):
                        for handler in block:
                            statements.add(handler.lineno)
                            visit(handler.body, in_check or is_check)
                    else:
                        visit(block, in_check or is_check)
                continue
            lines = _span(node)
            statements.update(lines)
            if in_check or _is_if_raise(node) or _is_check_call(node, budget):
                checks.update(lines)

    visit(ast.parse(source).body, all_checks)
    return statements, checks


def check_share(
    package: Path = ROOT / "seqbook", budget: bool = False
) -> dict[str, tuple[int, int]]:
    """``{module: (statement lines, check lines)}`` for every module of the package
    (``budget``: the budget's count)."""
    table = {}
    for path in sorted(package.rglob("*.py")):
        whole = path.name in CHECK_MODULES and not budget
        statements, checks = measure_source(path.read_text(), whole, budget)
        table[str(path.relative_to(package.parent))] = (len(statements), len(checks & statements))
    return table


def snippet_counts(book: Path = ROOT / "book") -> tuple[int, int]:
    """The number of ``show_source`` calls in the chapters, and of those cut with start/stop."""
    calls = cuts = 0
    for path in sorted(book.glob("*.md")):
        for call in re.findall(r"show_source\((.*?)\)\s*$", path.read_text(), flags=re.M | re.S):
            calls += 1
            cuts += bool(re.search(r"\b(start|stop)=", call))
    return calls, cuts


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--by-module", action="store_true", help="one row per module")
    args = parser.parse_args(argv)
    table = check_share()
    if args.by_module:
        for module, (n, c) in sorted(table.items(), key=lambda kv: -kv[1][1]):
            print(f"{module:50} {c:5} / {n:5}  {100 * c / max(n, 1):5.1f}%")
    n = sum(v[0] for v in table.values())
    c = sum(v[1] for v in table.values())
    print(f"check lines: {c} of {n} statement lines ({100 * c / n:.1f}%)")
    budget = check_share(budget=True)
    c = sum(v[1] for v in budget.values())
    print(f"check lines by the budget's count (check*-named functions, if-raise, bare calls): "
          f"{c} of {n} ({100 * c / n:.1f}%)")
    calls, cuts = snippet_counts()
    print(f"snippets: {calls} show_source calls, {cuts} of them cut with start=/stop=")
    return 0


if __name__ == "__main__":
    sys.exit(main())
