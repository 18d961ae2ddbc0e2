"""tools/install_environment.py: pip's settings given to uv, or pip where they cannot be.

The values come from pip itself, so the tests that matter most run the real pip in a
configuration of their own (files in a temporary home, chosen PIP_* variables) and
check that uv is given what pip install would use.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from book_files import ROOT

sys.path.insert(0, str(ROOT / "tools"))
import install_environment as ie  # noqa: E402

# `pip config list` on one of the project's machines: a file and PIP_* variables
CONFIG_LIST = """\
:env:.cert='/etc/ssl/certs/ca-certificates.crt'
:env:.default-timeout='180'
:env:.disable-pip-version-check='1'
:env:.find-links='/opt/wheels'
global.cert='/etc/ssl/certs/ca-certificates.crt'
global.constraint='/etc/xdg/pip/constraints.txt'
global.extra-index-url='file:///opt/pypi/simple file:///opt/pypi-more/simple'
global.find-links='/opt/wheels'
download.prefer-binary='1'
"""


def pip_configuration(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
                      site: str = "", user: str = "", variables: dict[str, str] | None = None
                      ) -> tuple[set[str], dict]:
    """What the installer reads from the real pip, with only these files and variables:
    ``site`` is a global-scope file (XDG_CONFIG_DIRS), ``user`` the user's file."""
    for name in [name for name in os.environ if name.startswith("PIP_")]:
        monkeypatch.delenv(name)
    (tmp_path / "site" / "pip").mkdir(parents=True)
    (tmp_path / "home" / ".config" / "pip").mkdir(parents=True)
    (tmp_path / "site" / "pip" / "pip.conf").write_text(site)
    (tmp_path / "home" / ".config" / "pip" / "pip.conf").write_text(user)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "home" / ".config"))
    monkeypatch.setenv("XDG_CONFIG_DIRS", str(tmp_path / "site"))
    for name, value in (variables or {}).items():
        monkeypatch.setenv(name, value)
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                            capture_output=True, text=True, check=True).stdout
    return ie.configured_options(listed), ie.pip_options(sys.executable)


def pairs(arguments: list[str]) -> list[tuple[str, str]]:
    flags = [i for i, item in enumerate(arguments) if item.startswith("--")]
    return [(arguments[i], arguments[i + 1]) for i in flags
            if i + 1 < len(arguments) and not arguments[i + 1].startswith("--")]


def test_the_options_set_are_those_of_pip_install():
    assert ie.configured_options(CONFIG_LIST) == {
        "cert", "default-timeout", "disable-pip-version-check", "find-links", "constraint",
        "extra-index-url"}  # download's prefer-binary is not pip install's


def test_the_users_file_wins_over_the_sites_as_in_pip(tmp_path, monkeypatch):
    # pip config list prints both, the site's last: only pip's resolution is right
    configured, options = pip_configuration(
        tmp_path, monkeypatch, site="[global]\nfind-links = /srv/site-wheels\n",
        user="[global]\nfind-links = /srv/user-wheels\n")
    arguments, _ = ie.uv_arguments(configured, options)
    assert ("--find-links", "/srv/user-wheels") in pairs(arguments)
    assert "/srv/site-wheels" not in arguments


def test_variables_and_install_sections_win_and_empty_values_are_dropped(tmp_path, monkeypatch):
    configured, options = pip_configuration(
        tmp_path, monkeypatch,
        user="[global]\nfind-links = /srv/wheels\nindex-url = https://a.example/simple\n"
             "timeout = 5\n[install]\nindex-url = https://b.example/simple\n",
        variables={"PIP_FIND_LINKS": "", "PIP_TIMEOUT": "60", "PIP_NO_INDEX": "y"})
    arguments, environment = ie.uv_arguments(configured, options)
    # an empty PIP_FIND_LINKS leaves the file's, as pip does: torch's CPU build stays
    assert ("--find-links", "/srv/wheels") in pairs(arguments)
    assert ("--index-url", "https://b.example/simple") in pairs(arguments)
    assert "--no-index" in arguments  # "y" is true to pip
    assert environment["UV_HTTP_TIMEOUT"] == "60"


def test_a_list_on_several_lines_reaches_uv_item_by_item(tmp_path, monkeypatch):
    configured, options = pip_configuration(
        tmp_path, monkeypatch,
        user="[global]\nfind-links =\n    /opt/wheels\n    /srv/wheels\n"
             "extra-index-url = file:///opt/pypi/simple file:///opt/pypi-more/simple\n"
             "trusted-host = mirror.example\ncert = /etc/ssl/certs/ca-certificates.crt\n")
    arguments, environment = ie.uv_arguments(configured, options)
    found = pairs(arguments)
    assert ("--index-strategy", "unsafe-best-match") in found  # as pip chooses
    assert ("--find-links", "/opt/wheels") in found and ("--find-links", "/srv/wheels") in found
    assert ("--extra-index-url", "file:///opt/pypi/simple") in found
    assert ("--extra-index-url", "file:///opt/pypi-more/simple") in found
    assert ("--allow-insecure-host", "mirror.example") in found
    assert "--no-config" in arguments and "--no-index" not in arguments
    assert environment == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt"}


def test_uvs_own_settings_are_kept_from_it(monkeypatch):
    monkeypatch.setenv("UV_INDEX_URL", "https://elsewhere.example/simple")
    monkeypatch.setenv("UV_TORCH_BACKEND", "cu130")
    monkeypatch.setenv("UV_CACHE_DIR", "/tmp/uv-cache")
    environment = ie.uv_environment({"SSL_CERT_FILE": "/c.crt"})
    assert "UV_INDEX_URL" not in environment and "UV_TORCH_BACKEND" not in environment
    assert environment["UV_CACHE_DIR"] == "/tmp/uv-cache"
    assert environment["SSL_CERT_FILE"] == "/c.crt" and environment["PATH"] == os.environ["PATH"]


def test_a_setting_uv_would_not_follow_means_pip(monkeypatch):
    options = {"index-url": "x", "extra-index-url": [], "find-links": [], "constraint": [],
               "no-index": False, "trusted-host": [], "cert": None, "timeout": 15.0}
    with pytest.raises(ie.Untranslatable, match="prefer-binary"):
        ie.uv_arguments({"prefer-binary", "find-links"}, options)
    calls = []
    monkeypatch.setattr(ie, "install_with_pip", lambda python, req: calls.append((python, req)))

    class Listed:
        returncode, stdout = 0, "global.prefer-binary='1'\n"

    monkeypatch.setattr(ie.subprocess, "run", lambda *args, **kwargs: Listed)
    monkeypatch.setattr(ie, "pip_options", lambda python: options)
    how = ie.install("python", "requirements.txt")
    assert calls == [("python", "requirements.txt")] and "prefer-binary" in how
    monkeypatch.setenv(ie.INSTALLER_VARIABLE, "pip")
    assert "pip" in ie.install("python", "requirements.txt") and len(calls) == 2
    monkeypatch.setenv(ie.INSTALLER_VARIABLE, "PIP")
    with pytest.raises(SystemExit, match="SEQBOOK_INSTALLER must be one of uv, pip"):
        ie.install("python", "requirements.txt")


def test_pip_that_cannot_say_its_settings_means_pip(monkeypatch):
    calls = []
    monkeypatch.setattr(ie, "install_with_pip", lambda python, req: calls.append(req))
    monkeypatch.setattr(ie, "run", lambda *args, **kwargs: pytest.fail("uv was tried"))

    class Listed:
        returncode, stdout, stderr = 1, "", "ERROR: bad configuration file"

    monkeypatch.setattr(ie.subprocess, "run", lambda *args, **kwargs: Listed)
    how = ie.install("python", "requirements.txt")
    assert calls == ["requirements.txt"] and "bad configuration file" in how


def test_pip_whose_internals_moved_means_pip(monkeypatch):
    class Resolved:
        returncode, stdout = 1, ""
        stderr = "Traceback ...\nModuleNotFoundError: No module named 'pip._internal.commands'"

    monkeypatch.setattr(ie.subprocess, "run", lambda *args, **kwargs: Resolved)
    with pytest.raises(ie.Untranslatable, match="could not resolve: ModuleNotFoundError"):
        ie.pip_options("python")


def test_uv_failing_or_missing_means_pip(monkeypatch, capsys):
    commands, calls = [], []
    monkeypatch.setattr(ie, "install_with_pip", lambda python, req: calls.append(req))

    class Listed:
        returncode, stdout = 0, CONFIG_LIST

    monkeypatch.setattr(ie.subprocess, "run", lambda *args, **kwargs: Listed)
    monkeypatch.setattr(ie, "pip_options", lambda python: {
        "index-url": "x", "extra-index-url": [], "find-links": ["/opt/wheels"],
        "constraint": [], "no-index": False, "trusted-host": [], "cert": None,
        "timeout": 180.0})
    monkeypatch.setattr(ie, "run", lambda command, environment=None: (
        commands.append(command), "uv" not in command[0])[1])
    how = ie.install("/env/bin/python", "requirements.txt")
    assert calls == ["requirements.txt"] and "uv failed" in how
    assert commands[0][-1] == f"uv=={ie.UV_VERSION}"  # pip installed uv, at its version
    assert commands[1][0] == "/env/bin/uv"
    monkeypatch.undo()
    assert ie.run(["/nonexistent/uv", "pip", "install"]) is False  # no traceback
    assert "could not run /nonexistent/uv" in capsys.readouterr().err
