"""Cursor: `~/.cursor/mcp.json` (every project) and `<project>/.cursor/mcp.json`.

Servers are under `mcpServers`: `command`, `args`, `env`, `envFile` for a local one, `url`
and `headers` for a remote one (streamable HTTP or SSE), and for a remote one that signs in
with a client registered beforehand, `auth`: `CLIENT_ID`, `CLIENT_SECRET`, `scopes` (the
router's `oauth` `clientId`, `clientSecret`, `scopes`). Cursor expands `${env:NAME}`,
`${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}` and `${pathSeparator}` in
`command`, `args`, `env`, `url` and `headers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from router.hosts.base import FileFormat
from router.hosts.entries import Variables, convert

__all__ = ["GLOBAL", "PROJECT"]

_AUTH = {"CLIENT_ID": "clientId", "CLIENT_SECRET": "clientSecret", "scopes": "scopes"}
"""Cursor's `auth` keys -> the router's `oauth` keys."""


@dataclass(frozen=True)
class _CursorFile(FileFormat):
    def convert(self, raw: Any, variables: Variables) -> tuple[dict[str, Any], list[str]]:
        return convert(raw, variables, oauth_key="auth", oauth_names=_AUTH)


GLOBAL = _CursorFile(host="cursor", label="Cursor", env_prefix=True, editor=True)
PROJECT = _CursorFile(host="cursor", label="Cursor (project)", env_prefix=True, editor=True)
