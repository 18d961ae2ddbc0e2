"""The Makefile installs what the tests need whenever it is missing.

`make test` once failed on a new machine because a rule named `$(CHROMIUM)` as a
prerequisite on a line above the one that defined it: make expands prerequisites as it
reads them, so the prerequisite was empty and the rule that installs chromium never
ran. These tests run make itself (dry runs, `make -n`, which execute nothing but the
lines that call make) to prove that each system tool is installed by its rule when its
file is missing, that nothing is installed when it is there, and that no variable is
read before it is defined.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from book_files import ROOT

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="needs GNU make")

# Which targets need which tool (a tool added to SYSTEM_TOOLS must be added here).
NEEDED_BY = {
    "CHROMIUM": ["html-checks", "check-html-checks"],
    "ENSUREPIP": ["{venv}/.installed", "colab-venv"],
}


def make(*args: str, cwd: Path = ROOT, makefile: Path | None = None) -> str:
    """stdout and stderr of a make run, without the calling make's flags (make test
    runs these tests inside make, whose MAKEFLAGS would leak in)."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES", "CHROMIUM")}
    command = ["make", "--no-print-directory"]
    if makefile is not None:
        command += ["-f", str(makefile)]
    result = subprocess.run([*command, *args], cwd=cwd, env=env, capture_output=True,
                            text=True, timeout=900)
    return result.stdout + result.stderr


def variable(name: str) -> str:
    return make("-s", f"print-{name}").strip()


def install_lines(output: str) -> list[str]:
    return [line for line in output.splitlines() if re.search(r"apt-get\b.*\binstall\b", line)]


def test_every_system_tool_has_its_targets_listed_here():
    assert set(variable("SYSTEM_TOOLS").split()) == set(NEEDED_BY)


@pytest.mark.parametrize("tool", sorted(NEEDED_BY))
def test_a_missing_tool_is_installed_by_every_target_that_needs_it(tool, tmp_path):
    package = variable(f"{tool}_PACKAGE")
    assert package, f"{tool}_PACKAGE is empty"
    missing = tmp_path / "missing" / tool.lower()
    for target in NEEDED_BY[tool]:
        target = target.format(venv=tmp_path / "venv")
        output = make("-n", target, f"{tool}={missing}", f"VENV={tmp_path / 'venv'}",
                      f"LOGS={tmp_path / 'logs'}")
        installs = install_lines(output)
        assert installs, f"`make -n {target}` with {tool} missing installs nothing:\n{output}"
        assert any(re.search(rf"\binstall\b.*\b{re.escape(package)}\b", line)
                   for line in installs), installs


@pytest.mark.parametrize("tool", sorted(NEEDED_BY))
def test_a_present_tool_is_not_installed_again(tool, tmp_path):
    present = tmp_path / "present"
    present.write_text("#!/bin/sh\n")
    present.chmod(0o755)
    for target in NEEDED_BY[tool]:
        target = target.format(venv=tmp_path / "venv")
        overrides = [f"{name}={present}" for name in NEEDED_BY]
        output = make("-n", target, *overrides, f"VENV={tmp_path / 'venv'}",
                      f"LOGS={tmp_path / 'logs'}")
        assert not install_lines(output), output


def prerequisites(database: str, target: str) -> list[str]:
    """A target's prerequisites (order-only ones included) in `make -p`'s database."""
    found = re.findall(rf"^{re.escape(target)}:(?!=)(.*)$", database, re.M)
    assert found, f"no rule for {target}"
    return found[-1].replace("|", " ").split()


@pytest.mark.parametrize("tool", sorted(NEEDED_BY))
def test_targets_name_the_tool_at_its_default_path(tool):
    # Unlike the dry runs above (whose command-line paths are defined before make reads
    # the Makefile), this sees the Makefile's own default: a prerequisite that was empty
    # when make read the rule is not in the database.
    default = variable(tool)
    assert default.startswith("/"), f"{tool} has no absolute default path: {default!r}"
    database = make("-p", "-n", "plan")
    for target in NEEDED_BY[tool]:
        target = target.format(venv=variable("VENV"))
        assert default in prerequisites(database, target), (target, default)
    assert re.search(rf"^{re.escape(default)}:", database, re.M), f"no rule installs {default}"


def undefined_variables(makefile: Path, targets: list[str]) -> list[str]:
    output = make("-n", "--warn-undefined-variables", *targets, makefile=makefile,
                  cwd=makefile.parent)
    return [line for line in output.splitlines() if "undefined variable" in line]


def test_no_variable_is_read_before_it_is_defined(tmp_path):
    # the targets of make test and make book, dry, with the tools' defaults
    targets = ["plan", "book", "notebooks", "unit", "lint", "nbval", "build-strict",
               "html-checks", "colab-check", "system-tools"]
    makefile = tmp_path / "Makefile"
    shutil.copy(ROOT / "Makefile", makefile)
    for name in ("requirements.txt", "pyproject.toml", "_toc.yml"):
        shutil.copy(ROOT / name, tmp_path / name)
    assert not undefined_variables(makefile, targets)


def test_the_check_above_catches_a_tool_defined_below_its_use(tmp_path):
    makefile = tmp_path / "Makefile"
    makefile.write_text(
        "checks: $(TOOL)\n\techo checking\n\nTOOL := /nonexistent/tool\n"
        "$(TOOL):\n\techo installing\n"
    )
    assert undefined_variables(makefile, ["checks"]), "the bug that hid chromium's install"


def test_make_test_says_first_what_it_will_install(tmp_path):
    missing = tmp_path / "no-chromium"
    output = make("-n", "test", f"CHROMIUM={missing}", f"LOGS={tmp_path / 'logs'}")
    announce = [line for line in output.splitlines() if "installs first" in line]
    assert announce, output
    assert f"chromium (for {missing})" in announce[0]
    # ... before anything is installed
    lines = output.splitlines()
    assert lines.index(announce[0]) < min(lines.index(line) for line in install_lines(output))
    present = make("-n", "plan", f"CHROMIUM={ROOT / 'Makefile'}")
    assert "chromium" not in present.split("installs first")[1].split("\n")[0]


def test_make_test_runs_every_check():
    checks = set(variable("CHECKS").split())
    assert checks == {"lint", "unit", "nbval", "build-strict", "html-checks", "colab-check"}
    database = make("-p", "-n", "-q", "plan")
    for check in checks:
        assert re.search(rf"^check-{check}:", database, re.M), check


def test_html_checks_collect_every_file_with_built_html_tests():
    """make html-checks collects only HTML_TESTS: a file of tests of the built book that
    is not listed there would never run."""
    listed = set(variable("HTML_TESTS").split())
    marked = {f"tests/{path.name}" for path in (ROOT / "tests").glob("test_*.py")
              if re.search(r"^(pytestmark = |\s*@)pytest\.mark\.built_html",
                           path.read_text(encoding="utf-8"), re.M)}
    assert marked and marked <= listed, sorted(marked - listed)
