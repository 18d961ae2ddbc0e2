"""Install a requirements file into a virtual environment: with uv, configured as pip is.

    python tools/install_environment.py .venv/bin/python requirements.txt

pip fetches and unpacks one package after another: for the book's 140 packages that
is half a minute to a minute, most of it spent waiting. uv, a pip-compatible installer,
does the same work in parallel, in about ten seconds. But uv does not read pip's
configuration, and here that configuration matters: on the project's machines pip's
``find-links`` hold the CPU build of torch, and without them the same pin resolves to
the CUDA build (gigabytes). So this script

1. reads pip's settings as ``pip config list`` reports them (its files and the
   ``PIP_*`` variables) and gives each to uv under uv's name for it;
2. installs uv with pip (so the registry pip is configured for provides it);
3. installs the requirements with uv, choosing across the indexes as pip does;

and installs with pip instead, saying why, when pip has a setting it cannot translate,
uv cannot be installed or uv fails. ``SEQBOOK_INSTALLER=pip`` asks for pip.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
import time
from pathlib import Path

INSTALLER_VARIABLE = "SEQBOOK_INSTALLER"
# pip's settings that only change how pip talks or shows progress, and the name of a
# configuration file (its settings are listed with the others): nothing to translate
IGNORED = {"config-file", "disable-pip-version-check", "no-cache-dir", "cache-dir", "progress-bar",
           "quiet", "verbose", "require-virtualenv", "root-user-action", "no-compile",
           "no-color", "no-input", "break-system-packages", "user"}


class Untranslatable(ValueError):
    """pip has a setting that uv would not apply in the same way."""


def pip_settings(config_list: str) -> dict[str, str]:
    """The settings of ``pip config list``'s output, by option name.

    Lines read ``section.option='value'``; the section is a file's (``global``,
    ``install``) or ``:env:`` for a ``PIP_*`` variable, which wins, as it does in pip.
    """
    files: dict[str, str] = {}
    variables: dict[str, str] = {}
    for line in config_list.splitlines():
        if "=" not in line:
            continue
        key, value = line.split("=", 1)
        section, _, option = key.rpartition(".")
        if section not in {"global", "install", ":env:"}:
            continue  # another command's settings (download, wheel, ...)
        value = _printed_string(value)
        target = variables if section == ":env:" else files
        if section == "install" or option not in target:
            target[option] = value
    return {**files, **variables}


def _printed_string(value: str) -> str:
    # pip prints each value with repr(): a list of find-links on several lines of its
    # file reads '\\n/opt/wheels\\n/srv/wheels', which only literal_eval turns back
    try:
        parsed = ast.literal_eval(value.strip())
    except (ValueError, SyntaxError):
        return value.strip()
    return parsed if isinstance(parsed, str) else value.strip()


def uv_arguments(settings: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """uv's command-line options and environment for pip's ``settings``.

    Raises:
        Untranslatable: for a setting this script does not know how to give uv.
    """
    arguments = ["--index-strategy", "unsafe-best-match"]  # pip: the best version anywhere
    environment: dict[str, str] = {}
    for option, value in settings.items():
        values = value.split()
        if option in IGNORED:
            continue
        if option == "index-url":
            arguments += ["--index-url", value]
        elif option == "extra-index-url":
            for url in values:
                arguments += ["--extra-index-url", url]
        elif option == "find-links":
            for location in values:
                arguments += ["--find-links", location]
        elif option == "constraint":
            for path in values:
                arguments += ["--constraint", path]
        elif option == "no-index":
            if value.lower() in {"1", "true", "yes", "on"}:
                arguments.append("--no-index")
        elif option == "trusted-host":
            for host in values:
                arguments += ["--allow-insecure-host", host]
        elif option == "cert":
            environment["SSL_CERT_FILE"] = value
        elif option in {"timeout", "default-timeout"}:
            environment["UV_HTTP_TIMEOUT"] = value
        else:
            raise Untranslatable(f"pip's setting {option}={value!r}")
    return arguments, environment


def run(command: list[str], environment: dict[str, str] | None = None) -> bool:
    return subprocess.run(command, env={**os.environ, **(environment or {})}).returncode == 0


def install_with_pip(python: str, requirements: str) -> None:
    # a current pip resolves and installs faster than the one venv bundles
    run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    if not run([python, "-m", "pip", "install", "--quiet", "--no-compile", "-r", requirements]):
        sys.exit(f"pip could not install {requirements}")


def install(python: str, requirements: str) -> str:
    """Install ``requirements`` into the environment of ``python``; say with what."""
    if os.environ.get(INSTALLER_VARIABLE, "uv") == "pip":
        install_with_pip(python, requirements)
        return f"pip ({INSTALLER_VARIABLE}=pip)"
    listed = subprocess.run([python, "-m", "pip", "config", "list"],
                            capture_output=True, text=True)
    if listed.returncode != 0:  # settings unknown: uv might resolve other builds
        install_with_pip(python, requirements)
        return "pip (pip config list failed: " + (listed.stderr.strip() or "no message") + ")"
    try:
        arguments, environment = uv_arguments(pip_settings(listed.stdout))
    except Untranslatable as why:
        install_with_pip(python, requirements)
        return f"pip (uv would not follow {why})"
    if not run([python, "-m", "pip", "install", "--quiet", "uv"]):
        install_with_pip(python, requirements)
        return "pip (uv could not be installed)"
    uv = str(Path(python).parent / "uv")
    if not run([uv, "pip", "install", "--quiet", "--python", python, *arguments,
                "-r", requirements], environment):
        install_with_pip(python, requirements)
        return "pip (uv failed, see above)"
    return "uv, with pip's settings"


def main() -> None:
    if len(sys.argv) != 3:
        sys.exit("usage: python tools/install_environment.py VENV_PYTHON REQUIREMENTS")
    started = time.perf_counter()
    how = install(*sys.argv[1:])
    print(f"installed {sys.argv[2]} into {sys.argv[1]} with {how} "
          f"in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
