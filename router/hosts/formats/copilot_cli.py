"""GitHub Copilot CLI: `~/.copilot/mcp-config.json` (`$COPILOT_HOME/mcp-config.json`).

Servers are under `mcpServers`, each with a `type`: `local` or `stdio` (`command`, `args`,
`env`, `cwd`), `http` or `sse` (`url`, `headers`); `tools` names the tools Copilot may call
(`["*"]`: every one), which the router reads as its `include` filter; `deferTools` (`auto`,
the default, or `never`) is Copilot's own. The file is plain JSON.

Copilot CLI defers MCP tools behind its own tool search once about 30 tools are connected, so
the router's entry says `"deferTools": "never"`: its `search_tools` and `call_tool` are always
in the agent's tool list, never a search away. Its `tools: ["*"]` lets Copilot call every tool
the router lists (the router's own policy and profiles decide which those are).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from router.hosts.base import FileFormat
from router.hosts.entries import Variables, convert

__all__ = ["FORMAT"]

_ALL_TOOLS = "*"
_HOST_ONLY = ("deferTools",)
"""Keys that steer Copilot CLI alone: left out without a note."""


@dataclass(frozen=True)
class _CopilotFile(FileFormat):
    def convert(self, raw: Any, variables: Variables) -> tuple[dict[str, Any], list[str]]:
        if not isinstance(raw, Mapping):
            return convert(raw, variables)  # says why it cannot be imported
        tools = raw.get("tools")
        rest = {key: value for key, value in raw.items() if key not in ("tools", *_HOST_ONLY)}
        entry, notes = convert(rest, variables)
        if isinstance(tools, list) and tools and _ALL_TOOLS not in tools:
            entry["include"] = [*entry.get("include", []), *map(str, tools)]
        elif tools is not None and not isinstance(tools, list):
            notes.append(f"left out: tools {tools!r} (not a list of tool names)")
        return entry, notes


FORMAT = _CopilotFile(
    host="copilot-cli",
    label="Copilot CLI",
    entry_type="local",
    keep_loaded=(("tools", [_ALL_TOOLS]), ("deferTools", "never")),
)
