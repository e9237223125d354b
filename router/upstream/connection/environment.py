"""The environment a stdio child starts with: a minimal inherited set plus its configured env."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping

# Enough to find executables, a home for caches and a locale for text; secrets in the
# router's own environment (API keys of other upstreams) are deliberately not passed on.
_INHERITED = (
    "PATH",
    "HOME",
    "USER",
    "LOGNAME",
    "SHELL",
    "TERM",
    "LANG",
    "LC_ALL",
    "LC_CTYPE",
    "TMPDIR",
    "TZ",
)
_INHERITED_WINDOWS = (
    "APPDATA",
    "HOMEDRIVE",
    "HOMEPATH",
    "LOCALAPPDATA",
    "PATHEXT",
    "PROCESSOR_ARCHITECTURE",
    "SYSTEMDRIVE",
    "SYSTEMROOT",
    "TEMP",
    "USERNAME",
    "USERPROFILE",
)


def child_environment(
    configured: Mapping[str, str], environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The inherited minimum from `environ` (default `os.environ`), overlaid by `configured`."""
    source = os.environ if environ is None else environ
    names = _INHERITED + (_INHERITED_WINDOWS if sys.platform == "win32" else ())
    env = {
        name: source[name]
        for name in names
        # A value starting with "()" is an exported shell function, not a variable.
        if name in source and not source[name].startswith("()")
    }
    env.update(configured)
    return env
