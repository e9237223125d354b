"""Which hosts re-read a server's tools on `notifications/tools/list_changed`, and which host
files start the router on a given config for a host that does not (`mcp-router inspect`).

`"mode": "dynamic"` lists a session's searched tools only after that notification, so a host
that keeps the list it read first gains nothing from it. What each host does, and the source,
is on its page in docs/hosts/: Claude Code (2.1.0 on, when the server advertises
`tools.listChanged`, which the router does in every mode), VS Code and Copilot CLI (0.0.354
on; the model sees the new list from the next prompt) re-read the list;
Claude Desktop, Codex and Cursor keep the old one; for Windsurf nothing is documented.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from router.core.errors import ConfigError
from router.hosts.base import Places
from router.hosts.discovery import host_files

__all__ = ["REFRESHES", "StaleHost", "stale_hosts"]

Refresh = Literal["yes", "no", "unknown"]

REFRESHES: dict[str, Refresh] = {
    "claude-code": "yes",
    "vscode": "yes",
    "claude-desktop": "no",
    "codex": "no",
    "cursor": "no",
    "windsurf": "unknown",
    "copilot-cli": "yes",
}
"""Each host of `router.hosts.discovery.HOSTS`, by id: whether it re-reads the tool list."""


@dataclass(frozen=True, slots=True)
class StaleHost:
    """A host file whose router entry serves the config, for a host that does not (or is not
    known to) re-read its tools on `list_changed`."""

    label: str
    where: str
    refresh: Refresh


def stale_hosts(config: Path, places: Places) -> list[StaleHost]:
    """The host files on this machine (`host_files`) that start the router on `config`, of
    hosts whose `REFRESHES` is not "yes". A host file that cannot be read names nothing:
    `inspect` reports on the router, and `mcp-router import` reports on host files."""
    target = config.expanduser().resolve()
    found = []
    for item in host_files(places):
        refresh = REFRESHES.get(item.format.host, "unknown")
        if refresh == "yes" or not item.path.is_file():
            continue
        try:
            read = item.format.read(item.path, item.path.read_text(encoding="utf-8"), places)
        except (OSError, UnicodeDecodeError, ConfigError):
            continue
        for entry in read.routers:
            if entry.config is not None and entry.config.expanduser().resolve() == target:
                found.append(StaleHost(entry.label, entry.where, refresh))
    return found
