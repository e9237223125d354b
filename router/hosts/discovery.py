"""Where each host keeps its MCP servers, on Linux and macOS, under a given home folder.

| host | user files | project files |
|---|---|---|
| Claude Desktop | `<config>/Claude/claude_desktop_config.json` | |
| Claude Code | `~/.claude.json` | `.mcp.json` |
| Cursor | `~/.cursor/mcp.json` | `.cursor/mcp.json` |
| VS Code | `<config>/Code/User/mcp.json`, `<config>/Code/User/settings.json` | `.vscode/mcp.json` |
| Windsurf | `~/.codeium/windsurf/mcp_config.json` | |
| Codex | `~/.codex/config.toml` (`$CODEX_HOME`) | `.codex/config.toml` |
| Copilot CLI | `~/.copilot/mcp-config.json` (`$COPILOT_HOME`) | |

`<config>` is `~/Library/Application Support` on macOS and `$XDG_CONFIG_HOME` (else
`~/.config`) elsewhere. Everything takes the home folder, project folder, platform and
environment as arguments, so tests can point it at a temporary home.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from router.hosts.base import FileFormat, Places, lookup
from router.hosts.formats import (
    claude_code,
    claude_desktop,
    codex,
    copilot_cli,
    cursor,
    vscode,
    windsurf,
)

__all__ = [
    "GENERIC",
    "HOSTS",
    "HostFile",
    "config_dir",
    "detect_format",
    "host_files",
    "install_target",
]

HOSTS = (
    "claude-desktop",
    "claude-code",
    "cursor",
    "vscode",
    "windsurf",
    "codex",
    "copilot-cli",
)
"""The hosts `--install` knows, by id."""

GENERIC = FileFormat(host="file", label="file", env_prefix=True)
"""Any other file with `mcpServers`: a router config, or another host's file."""
GENERIC_TOML = FileFormat(host="file", label="file", syntax="toml")
"""A router config written in TOML (`[mcpServers.NAME]`)."""

Scope = Literal["user", "project"]


@dataclass(frozen=True)
class HostFile:
    """A file a host reads its MCP servers from."""

    format: FileFormat
    path: Path
    scope: Scope


def config_dir(places: Places) -> Path:
    """Where desktop apps keep their settings on this platform."""
    if places.platform == "darwin":
        return places.home / "Library" / "Application Support"
    xdg = places.environ.get("XDG_CONFIG_HOME", "")
    return Path(xdg) if xdg and Path(xdg).is_absolute() else places.home / ".config"


def host_files(places: Places) -> list[HostFile]:
    """Every file any host may read, user files first, each path once, in host order."""
    home, project = places.home, places.project
    code_user = config_dir(places) / "Code" / "User"
    codex_home = places.environ.get("CODEX_HOME", "")
    codex_dir = Path(codex_home).expanduser() if codex_home else home / ".codex"
    copilot_home = places.environ.get("COPILOT_HOME", "")
    copilot_dir = Path(copilot_home).expanduser() if copilot_home else home / ".copilot"
    candidates = [
        HostFile(
            claude_desktop.FORMAT,
            config_dir(places) / "Claude" / "claude_desktop_config.json",
            "user",
        ),
        HostFile(claude_code.USER, home / ".claude.json", "user"),
        HostFile(claude_code.PROJECT, project / ".mcp.json", "project"),
        HostFile(cursor.GLOBAL, home / ".cursor" / "mcp.json", "user"),
        HostFile(cursor.PROJECT, project / ".cursor" / "mcp.json", "project"),
        HostFile(vscode.USER, code_user / "mcp.json", "user"),
        HostFile(vscode.SETTINGS, code_user / "settings.json", "user"),
        HostFile(vscode.WORKSPACE, project / ".vscode" / "mcp.json", "project"),
        HostFile(windsurf.FORMAT, home / ".codeium" / "windsurf" / "mcp_config.json", "user"),
        HostFile(codex.GLOBAL, codex_dir / "config.toml", "user"),
        HostFile(codex.PROJECT, project / ".codex" / "config.toml", "project"),
        HostFile(copilot_cli.FORMAT, copilot_dir / "mcp-config.json", "user"),
    ]
    seen: set[Path] = set()
    unique = []
    for candidate in candidates:  # the project may be the home folder
        key = candidate.path.absolute()
        if key not in seen:
            seen.add(key)
            unique.append(candidate)
    return unique


def install_target(
    places: Places, host: str, settings: Mapping[str, Any] | None = None
) -> HostFile:
    """The user file `--install host` rewrites.

    For VS Code that is the profile's `mcp.json`, unless only `settings.json` has servers
    (`settings` is that file's decoded content, when it exists).
    """
    user = [
        item for item in host_files(places) if item.format.host == host and item.scope == "user"
    ]
    if host == "vscode":
        mcp_json, settings_json = user
        if not mcp_json.path.exists() and settings and lookup(settings, ("mcp", "servers")):
            return settings_json
        return mcp_json
    return user[0]


def detect_format(path: Path, doc: Mapping[str, Any] | None, home: Path) -> FileFormat:
    """The format of a file given on the command line: by its name, else by its keys."""
    name, parent = path.name, path.parent.name
    by_name = {
        "claude_desktop_config.json": claude_desktop.FORMAT,
        ".claude.json": claude_code.USER,
        ".mcp.json": claude_code.PROJECT,
        "mcp_config.json": windsurf.FORMAT,
        "mcp-config.json": copilot_cli.FORMAT,
    }
    if name in by_name:
        return by_name[name]
    if name == "mcp.json" and parent == ".cursor":
        return cursor.GLOBAL if path.parent.parent == home else cursor.PROJECT
    if name == "mcp.json" and parent == ".vscode":
        return vscode.WORKSPACE
    if path.suffix.lower() == ".toml":
        return codex.GLOBAL if doc is not None and "mcp_servers" in doc else GENERIC_TOML
    if doc is not None and "mcpServers" not in doc:
        if isinstance(doc.get("servers"), Mapping):
            return vscode.USER
        if lookup(doc, ("mcp", "servers")) is not None:
            return vscode.SETTINGS
    return GENERIC
