"""Windsurf: `~/.codeium/windsurf/mcp_config.json`, servers under `mcpServers`.

A local server is `command`, `args`, `env`; a remote one is `serverUrl` (or `url`) with
`headers`. `disabled: true` and `disabledTools` are Windsurf's too. Windsurf expands
`${env:NAME}` (and `${file:/path}`) in `command`, `args`, `env`, `serverUrl`, `url` and
`headers`.
"""

from __future__ import annotations

from router.hosts.base import FileFormat

__all__ = ["FORMAT"]

FORMAT = FileFormat(host="windsurf", label="Windsurf", env_prefix=True)
