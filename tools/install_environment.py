"""Install a requirements file into a virtual environment: with uv, configured as pip is.

    python tools/install_environment.py .venv/bin/python requirements.txt

pip fetches and unpacks one package after another: for the book's 140 packages that
is half a minute to a minute, most of it spent waiting. uv, a pip-compatible installer,
does the same work in parallel, in about ten seconds. But uv does not read pip's
configuration, and here that configuration matters: on the project's machines pip's
``find-links`` hold the CPU build of torch, and without them the same pin resolves to
the CUDA build (gigabytes). So this script

1. asks pip which settings its configuration sets (``pip config list``: its files and
   the ``PIP_*`` variables) and which values pip install would use for them, after
   pip's own precedence; gives each to uv under uv's name for it, and keeps uv's own
   configuration (``uv.toml``, ``UV_*`` variables) out, since pip would not see it;
2. installs uv, at the version these options were checked with, with pip (so the
   registry pip is configured for provides it);
3. installs the requirements with uv, choosing across the indexes as pip does;

and installs with pip instead, saying why, when pip has a setting it cannot translate,
uv cannot be installed or uv fails. ``SEQBOOK_INSTALLER=pip`` asks for pip.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

INSTALLER_VARIABLE = "SEQBOOK_INSTALLER"
INSTALLERS = ("uv", "pip")
UV_VERSION = "0.13.9"  # the uv whose options below were checked; a newer one may differ
# pip's settings that only change how pip talks or shows progress, and the name of a
# configuration file (its settings are listed with the others): nothing to translate
IGNORED = {"config-file", "disable-pip-version-check", "no-cache-dir", "cache-dir",
           "progress-bar", "quiet", "verbose", "require-virtualenv", "root-user-action",
           "no-compile", "no-color", "no-input", "break-system-packages", "user"}
TRANSLATED = {"index-url", "extra-index-url", "find-links", "constraint", "no-index",
              "trusted-host", "cert", "timeout", "default-timeout"}
# uv's own variables that may stay: where its cache is, how it reports
UV_VARIABLES_KEPT = {"UV_CACHE_DIR", "UV_NO_PROGRESS", "UV_COLOR"}

# The values pip install would use: pip resolves its files (global, user, site, in
# that order), their [global] and [install] sections and the PIP_* variables itself,
# drops empty values, and reads booleans its own way. Asking it is the only way to
# agree with it.
RESOLVE_WITH_PIP = """
import json
from pip._internal.commands import create_command
options, _ = create_command("install").parse_args([])
print(json.dumps({
    "index-url": options.index_url, "extra-index-url": options.extra_index_urls,
    "find-links": options.find_links, "constraint": options.constraints,
    "no-index": options.no_index, "trusted-host": options.trusted_hosts,
    "cert": options.cert, "timeout": options.timeout}))
"""


class Untranslatable(ValueError):
    """pip has a setting that uv would not apply in the same way."""


def configured_options(config_list: str) -> set[str]:
    """The options that pip install's configuration sets, from ``pip config list``.

    Lines read ``section.option='value'``; the sections that apply to pip install are
    a file's ``global`` and ``install`` and ``:env:`` (a ``PIP_*`` variable)."""
    names = set()
    for line in config_list.splitlines():
        key = line.split("=", 1)[0]
        section, _, option = key.rpartition(".")
        if "=" in line and section in {"global", "install", ":env:"}:
            names.add(option)
    return names


def pip_options(python: str) -> dict[str, Any]:
    """The settings pip install would use in the environment of ``python``.

    Raises:
        Untranslatable: if pip cannot say (its configuration is broken, or its
            internals have moved).
    """
    resolved = subprocess.run([python, "-c", RESOLVE_WITH_PIP], capture_output=True, text=True)
    if resolved.returncode != 0:
        last = (resolved.stderr.strip().splitlines() or ["no message"])[-1]
        raise Untranslatable(f"pip's settings, which pip could not resolve: {last}")
    return json.loads(resolved.stdout)


def uv_arguments(configured: set[str], options: dict[str, Any]
                 ) -> tuple[list[str], dict[str, str]]:
    """uv's command-line options and environment for pip's resolved ``options``.

    ``configured`` names the options pip's configuration sets: one that this script
    does not know how to give uv means pip must install.

    Raises:
        Untranslatable: for such an option.
    """
    unknown = sorted(configured - IGNORED - TRANSLATED)
    if unknown:
        raise Untranslatable(f"pip's setting(s) {', '.join(unknown)}")
    arguments = ["--no-config",  # uv's own files would add to (or contradict) pip's
                 "--index-strategy", "unsafe-best-match",  # pip: the best version anywhere
                 "--index-url", options["index-url"]]
    for url in options["extra-index-url"]:
        arguments += ["--extra-index-url", url]
    for location in options["find-links"]:
        arguments += ["--find-links", location]
    for path in options["constraint"]:
        arguments += ["--constraint", path]
    if options["no-index"]:
        arguments.append("--no-index")
    for host in options["trusted-host"]:
        arguments += ["--allow-insecure-host", host]
    environment = {}
    if options["cert"]:
        environment["SSL_CERT_FILE"] = options["cert"]
    if configured & {"timeout", "default-timeout"}:
        environment["UV_HTTP_TIMEOUT"] = str(max(1, round(float(options["timeout"]))))
    return arguments, environment


def uv_environment(environment: dict[str, str]) -> dict[str, str]:
    """This process's environment for uv: without uv's own settings (``UV_INDEX``,
    ``UV_TORCH_BACKEND``, ...), which pip would not see, and with ``environment``."""
    kept = {name: value for name, value in os.environ.items()
            if not name.startswith("UV_") or name in UV_VARIABLES_KEPT}
    return {**kept, **environment}


def run(command: list[str], environment: dict[str, str] | None = None) -> bool:
    try:
        return subprocess.run(command, env=environment).returncode == 0
    except OSError as error:  # no such program: the caller falls back
        print(f"could not run {command[0]}: {error}", file=sys.stderr)
        return False


def install_with_pip(python: str, requirements: str) -> None:
    # a current pip resolves and installs faster than the one venv bundles
    run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    if not run([python, "-m", "pip", "install", "--quiet", "--no-compile", "-r", requirements]):
        sys.exit(f"pip could not install {requirements}")


def install(python: str, requirements: str) -> str:
    """Install ``requirements`` into the environment of ``python``; say with what."""
    installer = os.environ.get(INSTALLER_VARIABLE, "uv")
    if installer not in INSTALLERS:
        sys.exit(f"{INSTALLER_VARIABLE} must be one of {', '.join(INSTALLERS)}, "
                 f"got {installer!r}")
    if installer == "pip":
        install_with_pip(python, requirements)
        return f"pip ({INSTALLER_VARIABLE}=pip)"
    listed = subprocess.run([python, "-m", "pip", "config", "list"],
                            capture_output=True, text=True)
    try:
        if listed.returncode != 0:  # settings unknown: uv might resolve other builds
            raise Untranslatable("pip's settings: pip config list failed: "
                                 + (listed.stderr.strip() or "no message"))
        arguments, environment = uv_arguments(configured_options(listed.stdout),
                                              pip_options(python))
    except Untranslatable as why:
        install_with_pip(python, requirements)
        return f"pip (uv would not follow {why})"
    if not run([python, "-m", "pip", "install", "--quiet", f"uv=={UV_VERSION}"]):
        install_with_pip(python, requirements)
        return "pip (uv could not be installed)"
    uv = str(Path(python).parent / "uv")
    if not run([uv, "pip", "install", "--quiet", "--python", python, *arguments,
                "-r", requirements], uv_environment(environment)):
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
