"""Cursor: `~/.cursor/mcp.json` (every project) and `<project>/.cursor/mcp.json`.

Servers are under `mcpServers`: `command`, `args`, `env`, `envFile` for a local one, `url`
and `headers` for a remote one (streamable HTTP or SSE). Cursor expands `${env:NAME}`,
`${userHome}`, `${workspaceFolder}`, `${workspaceFolderBasename}` and `${pathSeparator}` in
`command`, `args`, `env`, `url` and `headers`.
"""

from __future__ import annotations

from router.hosts.base import FileFormat

__all__ = ["GLOBAL", "PROJECT"]

GLOBAL = FileFormat(host="cursor", label="Cursor", env_prefix=True, editor=True)
PROJECT = FileFormat(host="cursor", label="Cursor (project)", env_prefix=True, editor=True)
