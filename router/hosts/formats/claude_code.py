"""Claude Code: `~/.claude.json` (user and local scope) and `<project>/.mcp.json` (project).

`~/.claude.json` holds the user-scope servers under the top-level `mcpServers` and each
project's local-scope servers under `projects["/abs/path"].mcpServers`, beside much state of
Claude Code's own. `.mcp.json` has `mcpServers` only. Entries carry `type` (`stdio`, `http`,
`sse`), then `command`, `args`, `env` or `url`, `headers`; Claude Code expands `${VAR}` and
`${VAR:-default}` in all of those, the router in `env` and `headers`. A remote entry's
`oauth` (`clientId`, `callbackPort`, `scopes`, `authServerMetadataUrl`) is the router's own
section, carried over as it is; a client secret given with `claude mcp add --client-secret`
is kept outside these files, so the report asks for it where a `clientId` is set.

`--install claude-code` leaves the router as the one user-scope server and empties the
local-scope lists it imported; `.mcp.json` belongs to the repository and is not rewritten.
Its entry says `alwaysLoad: true`: Claude Code defers MCP tools behind its own tool search,
and the router's `search_tools` and `call_tool` must never wait behind it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from router.hosts.base import FileFormat, KeyPath
from router.hosts.entries import Variables

__all__ = ["PROJECT", "USER"]


@dataclass(frozen=True)
class _ClaudeCodeFile(FileFormat):
    def convert(self, raw: Any, variables: Variables) -> tuple[dict[str, Any], list[str]]:
        entry, notes = super().convert(raw, variables)
        oauth = entry.get("oauth", {})
        if "clientId" in oauth and "clientSecret" not in oauth:
            notes.append(
                "oauth.clientId: a client secret given to Claude Code (--client-secret) is not "
                'in its files: if the client has one, add "clientSecret": "${VARIABLE}" to this '
                "server's oauth in the router config"
            )
        return entry, notes


@dataclass(frozen=True)
class _UserFile(_ClaudeCodeFile):
    """`~/.claude.json`: the user-scope servers, then every project's local-scope ones."""

    def tables(self, doc: Mapping[str, Any]) -> list[tuple[KeyPath, str]]:
        tables: list[tuple[KeyPath, str]] = [(self.servers_key, "")]
        projects = doc.get("projects")
        if isinstance(projects, Mapping):
            for path, project in projects.items():
                if isinstance(project, Mapping) and project.get("mcpServers"):
                    tables.append(
                        (("projects", path, "mcpServers"), f" projects[{json.dumps(path)}]")
                    )
        return tables


_ALWAYS_LOAD = (("alwaysLoad", True),)
"""Claude Code (2.1.121 on) loads such a server's tools up front, never deferred."""

USER = _UserFile(
    host="claude-code", label="Claude Code", entry_type="stdio", keep_loaded=_ALWAYS_LOAD
)
PROJECT = _ClaudeCodeFile(host="claude-code", label="Claude Code (project)")
