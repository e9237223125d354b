"""Writing host and router config files: a timestamped backup first, then an atomic replace.

A host config is someone's settings: it is copied to `<file>.bak-YYYYmmdd-HHMMSS` before it
changes, the new text goes to a temporary file beside it that then replaces it (so a host
never reads half a file), and a symbolic link is followed rather than replaced.
"""

from __future__ import annotations

import difflib
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

__all__ = ["backup", "launcher", "unified_diff", "write_atomically"]


def backup(path: Path, now: float | None = None) -> Path:
    """Copy `path` to `path.bak-YYYYmmdd-HHMMSS` (a free name) and return the copy's path."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now))
    target = path.with_name(f"{path.name}.bak-{stamp}")
    number = 2
    while target.exists():
        target = path.with_name(f"{path.name}.bak-{stamp}-{number}")
        number += 1
    shutil.copy2(path, target)
    return target


def write_atomically(path: Path, text: str) -> None:
    """Replace the file's content in one step, keeping its permissions (0600 for new
    files: host configs hold credentials)."""
    real = path.resolve()
    real.parent.mkdir(parents=True, exist_ok=True)
    mode = real.stat().st_mode & 0o7777 if real.exists() else 0o600
    handle, temporary = tempfile.mkstemp(dir=real.parent, prefix=f".{real.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "w", encoding="utf-8", newline="") as stream:
            stream.write(text)
        os.chmod(temporary, mode)
        os.replace(temporary, real)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def unified_diff(path: Path, old: str | None, new: str) -> str:
    """The change as `diff -u` shows it (`old` None: a new file)."""
    lines = difflib.unified_diff(
        (old or "").splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile="/dev/null" if old is None else str(path),
        tofile=str(path),
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def launcher(config: Path, endpoint: str | None = None) -> tuple[str, list[str]]:
    """The command and arguments that serve `config` (its `endpoint`, if given) with this
    very installation: the `mcp-router` script beside this Python, else `python -m router`."""
    executable = Path(sys.executable)  # not resolved: a venv's python is a link
    script = executable.parent / ("mcp-router.exe" if os.name == "nt" else "mcp-router")
    serve: Sequence[str] = ("serve", "--config", str(config))
    if endpoint is not None:
        serve = (*serve, "--endpoint", endpoint)
    if script.is_file() and os.access(script, os.X_OK):
        return str(script), list(serve)
    return str(executable), ["-m", "router", *serve]
