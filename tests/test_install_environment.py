"""tools/install_environment.py: pip's settings given to uv, or pip where they cannot be."""

from __future__ import annotations

import os
import subprocess
import sys

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
"""


def test_pip_settings_are_read_with_the_variables_winning():
    settings = ie.pip_settings(CONFIG_LIST + "global.timeout='5'\n:env:.timeout='60'\n")
    assert settings["find-links"] == "/opt/wheels"
    assert settings["extra-index-url"] == "file:///opt/pypi/simple file:///opt/pypi-more/simple"
    assert settings["timeout"] == "60"  # PIP_TIMEOUT over the file's
    # the install section is pip install's, and wins over global; other commands' not
    settings = ie.pip_settings("global.index-url='a'\ninstall.index-url='b'\n"
                               "download.find-links='c'\n")
    assert settings == {"index-url": "b"}


def test_every_setting_reaches_uv_under_its_name():
    arguments, environment = ie.uv_arguments(ie.pip_settings(CONFIG_LIST))
    pairs = list(zip(arguments[::2], arguments[1::2]))
    assert ("--index-strategy", "unsafe-best-match") in pairs  # as pip chooses
    assert ("--find-links", "/opt/wheels") in pairs  # where the CPU build of torch lies
    assert ("--extra-index-url", "file:///opt/pypi/simple") in pairs
    assert ("--extra-index-url", "file:///opt/pypi-more/simple") in pairs
    assert ("--constraint", "/etc/xdg/pip/constraints.txt") in pairs
    assert environment == {"SSL_CERT_FILE": "/etc/ssl/certs/ca-certificates.crt",
                           "UV_HTTP_TIMEOUT": "180"}
    assert ie.uv_arguments({"no-index": "true", "index-url": "x"})[0][2:] == [
        "--no-index", "--index-url", "x"]


def test_a_setting_uv_would_not_follow_means_pip(monkeypatch):
    with pytest.raises(ie.Untranslatable, match="prefer-binary"):
        ie.uv_arguments({"prefer-binary": "1"})
    calls = []
    monkeypatch.setattr(ie, "install_with_pip", lambda python, req: calls.append((python, req)))

    class Listed:
        returncode, stdout = 0, "global.prefer-binary='1'\n"

    monkeypatch.setattr(ie.subprocess, "run", lambda *args, **kwargs: Listed)
    how = ie.install("python", "requirements.txt")
    assert calls == [("python", "requirements.txt")] and "prefer-binary" in how
    monkeypatch.setenv(ie.INSTALLER_VARIABLE, "pip")
    assert "pip" in ie.install("python", "requirements.txt") and len(calls) == 2


def test_uv_failing_means_pip(monkeypatch):
    commands, calls = [], []
    monkeypatch.setattr(ie, "install_with_pip", lambda python, req: calls.append(req))

    class Listed:
        returncode, stdout = 0, CONFIG_LIST

    monkeypatch.setattr(ie.subprocess, "run", lambda *args, **kwargs: Listed)
    monkeypatch.setattr(ie, "run", lambda command, environment=None: (
        commands.append(command), "uv" not in command[0])[1])
    how = ie.install("/env/bin/python", "requirements.txt")
    assert calls == ["requirements.txt"] and "uv failed" in how
    assert commands[0][-1] == "uv" and commands[1][0] == "/env/bin/uv"  # pip installed uv


def test_a_list_on_several_lines_of_pips_file_is_read_as_pip_reads_it(tmp_path, monkeypatch):
    # pip prints values with repr(): the newlines of a multi-line value come escaped
    (tmp_path / "pip.conf").write_text(
        "[global]\nfind-links =\n    /opt/wheels\n    /srv/wheels\n"
        "extra-index-url = file:///opt/pypi/simple\n")
    for name in [name for name in os.environ if name.startswith("PIP_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("PIP_CONFIG_FILE", str(tmp_path / "pip.conf"))
    listed = subprocess.run([sys.executable, "-m", "pip", "config", "list"],
                            capture_output=True, text=True, check=True).stdout
    settings = ie.pip_settings(listed)
    assert settings["find-links"].split("\n") == ["", "/opt/wheels", "/srv/wheels"]
    arguments, _ = ie.uv_arguments(settings)  # config-file: its settings are listed
    pairs = list(zip(arguments[::2], arguments[1::2]))
    assert ("--find-links", "/opt/wheels") in pairs and ("--find-links", "/srv/wheels") in pairs
    assert ("--extra-index-url", "file:///opt/pypi/simple") in pairs


def test_pip_config_list_failing_means_pip(monkeypatch):
    calls = []
    monkeypatch.setattr(ie, "install_with_pip", lambda python, req: calls.append(req))

    class Listed:
        returncode, stdout, stderr = 1, "", "ERROR: bad configuration file"

    monkeypatch.setattr(ie.subprocess, "run", lambda *args, **kwargs: Listed)
    monkeypatch.setattr(ie, "run", lambda *args, **kwargs: pytest.fail("uv was tried"))
    how = ie.install("python", "requirements.txt")
    assert calls == ["requirements.txt"] and "bad configuration file" in how
