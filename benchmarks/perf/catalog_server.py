"""A stdio MCP upstream that serves every tool of a `catalog.jsonl` (thousands of them), so
a router can be measured in front of a catalog as large as the public pools.

    python benchmarks/perf/catalog_server.py CATALOG.jsonl

Each line's `name` becomes a tool name (characters outside `[A-Za-z0-9_.-]` as `_`, cut to
100, and `_2`, `_3`, ... where two lines share one), its `description` and `inputSchema`
(an empty object schema when absent) are kept. Every call answers "ok".
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

_NOT_NAME = re.compile(r"[^A-Za-z0-9_.-]")
_EMPTY: dict[str, Any] = {"type": "object", "properties": {}}


def read_tools(path: Path) -> list[types.Tool]:
    tools: list[types.Tool] = []
    seen: dict[str, int] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            raw = json.loads(line)
            base = _NOT_NAME.sub("_", str(raw["name"]))[:100] or "tool"
            seen[base] = seen.get(base, 0) + 1
            name = base if seen[base] == 1 else f"{base}_{seen[base]}"
            schema = raw.get("inputSchema")
            tools.append(
                types.Tool(
                    name=name,
                    description=str(raw.get("description") or ""),
                    input_schema=_servable(schema) if isinstance(schema, dict) else _EMPTY,
                )
            )
    return tools


def _servable(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema less the properties that are not schemas: a few pool tools list
    `"properties": {"type": "object", ...}`, and the SDK refuses to send such a listing
    ("Handler returned an invalid result"), which would take every tool down with it."""
    properties = schema.get("properties")
    if not isinstance(properties, dict):
        return schema
    kept = {k: v for k, v in properties.items() if isinstance(v, dict | bool)}
    return schema if len(kept) == len(properties) else {**schema, "properties": kept}


def build(tools: list[types.Tool]) -> Server[Any]:
    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        return types.CallToolResult(content=[types.TextContent(type="text", text="ok")])

    return Server("perf-catalog", on_list_tools=list_tools, on_call_tool=call_tool)


async def serve(path: Path) -> None:
    server = build(read_tools(path))
    async with stdio_server() as (read_stream, write_stream):
        await server.run(read_stream, write_stream, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(serve, Path(sys.argv[1]))
