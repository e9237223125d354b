"""VS Code: `mcp.json` in the workspace (`.vscode/mcp.json`) or the user profile, or the
`mcp` key of the user's `settings.json` (the place before `mcp.json` existed).

Servers are under `servers` (not `mcpServers`), each with `type`: `stdio` (`command`, `args`,
`env`, `envFile`) or `http` / `sse` (`url`, `headers`). `inputs` declares values VS Code asks
the user for, used as `${input:id}`; the router cannot ask, so each becomes an environment
variable placeholder (`${input:api-key}` -> `${API_KEY}`) and the report names the variable
to set. `${env:NAME}`, `${userHome}` and `${workspaceFolder}` are expanded as VS Code does.
The files are JSON with comments (JSONC); `--install` edits the `servers` value in place and
keeps the comments, `inputs` and everything else.

User profile folder: `~/.config/Code/User/` on Linux, `~/Library/Application
Support/Code/User/` on macOS.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from router.hosts.base import FileFormat, KeyPath, Places, lookup
from router.hosts.entries import Variables

__all__ = ["SETTINGS", "USER", "WORKSPACE"]


@dataclass(frozen=True)
class _McpFile(FileFormat):
    inputs_key: KeyPath = ("inputs",)

    def variables(self, doc: Mapping[str, Any], places: Places) -> Variables:
        inputs: dict[str, str] = {}
        declared = lookup(doc, self.inputs_key)
        for item in declared if isinstance(declared, list) else ():
            if isinstance(item, Mapping) and isinstance(item.get("id"), str):
                inputs[item["id"]] = str(item.get("description", ""))
        return Variables(
            home=places.home,
            project=places.project,
            env_prefix=True,
            editor=True,
            inputs=inputs,
            environ=places.environ,
        )


def _format(label: str, servers: KeyPath, inputs: KeyPath) -> _McpFile:
    return _McpFile(
        host="vscode",
        label=label,
        syntax="jsonc",
        servers_key=servers,
        env_prefix=True,
        editor=True,
        entry_type="stdio",
        inputs_key=inputs,
    )


WORKSPACE = _format("VS Code (workspace)", ("servers",), ("inputs",))
USER = _format("VS Code", ("servers",), ("inputs",))
SETTINGS = _format("VS Code (settings.json)", ("mcp", "servers"), ("mcp", "inputs"))
