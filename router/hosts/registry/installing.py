"""Installing a registry package into the cache folder, the way the example servers are
(`scripts/lib/install-servers.sh`): npm packages into one `servers/node/node_modules`,
each PyPI package into a venv of its own (`servers/NAME/`), since servers pin their own
dependencies. Only npm and PyPI are reached, through their own clients.

The entry then runs the installed command, no `npx` or `uvx` at each start."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from router.core.errors import ConfigError
from router.hosts.registry.document import Package

__all__ = ["InstallFailed", "install"]

INSTALL_TIMEOUT = 600
"""Seconds one npm or pip install may take."""


class InstallFailed(RuntimeError):
    """npm or pip failed; the message holds the tail of what it said."""


def install(package: Package, servers: Path, name: str) -> Path:
    """Install `package` under `servers` (the cache folder's `servers/`); the command the
    entry runs."""
    if package.registry == "npm":
        return _npm(package, servers / "node")
    if package.registry == "pypi":
        return _pypi(package, servers / name)
    raise ConfigError(f"{package.label}: only npm and PyPI packages are installed")


def _run(command: list[str]) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=INSTALL_TIMEOUT, check=False
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise InstallFailed(f"{command[0]}: {exc}") from None
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()[-8:]
        raise InstallFailed(f"{' '.join(command[:3])} failed: " + " | ".join(said))


def _npm(package: Package, prefix: Path) -> Path:
    prefix.mkdir(parents=True, exist_ok=True)
    spec = f"{package.identifier}@{package.version}" if package.version else package.identifier
    _run(
        [
            "npm", "install", "--prefix", str(prefix), "--no-audit", "--no-fund",
            "--prefer-offline", "--loglevel=error", spec,
        ]
    )  # fmt: skip
    manifest = prefix / "node_modules" / package.identifier / "package.json"
    try:
        meta = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InstallFailed(f"{manifest}: {exc}") from None
    bins = meta.get("bin")
    if isinstance(bins, str):
        script = package.identifier.rsplit("/", 1)[-1]
    elif isinstance(bins, dict) and bins:
        own = package.identifier.rsplit("/", 1)[-1]
        script = own if own in bins else next(iter(bins))
    else:
        raise InstallFailed(f"{package.identifier} has no command (`bin` in its package.json)")
    command = prefix / "node_modules" / ".bin" / script
    if not command.exists():
        raise InstallFailed(f"{command} is missing after the install")
    return command


def _pypi(package: Package, venv: Path) -> Path:
    python = venv / "bin" / "python"
    if not python.exists():
        _run([sys.executable, "-m", "venv", str(venv)])
    spec = f"{package.identifier}=={package.version}" if package.version else package.identifier
    _run([str(python), "-m", "pip", "install", "--quiet", "--disable-pip-version-check", spec])
    listing = (
        "import importlib.metadata as m, sys; d = m.distribution(sys.argv[1]); "
        "print('\\n'.join(e.name for e in d.entry_points if e.group == 'console_scripts'))"
    )
    done = subprocess.run(
        [str(python), "-c", listing, package.identifier],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    scripts = done.stdout.split()
    if done.returncode != 0 or not scripts:
        raise InstallFailed(f"{package.identifier} has no console script to run")
    script = package.identifier if package.identifier in scripts else scripts[0]
    return venv / "bin" / script
