"""Claude Desktop: `claude_desktop_config.json`, servers under `mcpServers`.

Where: `~/Library/Application Support/Claude/` on macOS, `~/.config/Claude/` on Linux
(`$XDG_CONFIG_HOME/Claude/`). Entries are local servers: `command`, `args`, `env`. The file is
plain JSON, and Claude Desktop keeps its own settings beside `mcpServers` (`preferences`,
`globalShortcut`); `--install` leaves those alone.
"""

from __future__ import annotations

from router.hosts.base import FileFormat

__all__ = ["FORMAT"]

FORMAT = FileFormat(host="claude-desktop", label="Claude Desktop")
