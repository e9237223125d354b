"""FastMCP 4.x's proxy in front of the upstreams of an `mcpServers` config, with its BM25
search transform: what a FastMCP user runs instead of mcp-router. Serves over stdio.

    python benchmarks/perf/fastmcp_proxy.py CONFIG.json

`create_proxy` takes the config as FastMCP reads it (command, args, env, cwd of each
server; one server keeps its tool names, several get `{server}_{tool}`); the transform hides
the tools behind `search_tools(query)` and `call_tool(name, arguments)`, five results a
search as the router's default k.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_KEYS = ("command", "args", "env", "cwd")


def fastmcp_config(config: dict[str, Any]) -> dict[str, Any]:
    """The stdio entries of a router config, in the fields FastMCP's config reads."""
    servers = {
        name: {k: entry[k] for k in _KEYS if k in entry}
        for name, entry in config["mcpServers"].items()
    }
    return {"mcpServers": servers}


def main() -> None:
    from fastmcp.server import create_proxy
    from fastmcp.server.transforms.search import BM25SearchTransform

    config = json.loads(Path(sys.argv[1]).read_text(encoding="utf-8"))
    proxy = create_proxy(fastmcp_config(config), name="fastmcp-proxy")
    proxy.add_transform(BM25SearchTransform(max_results=5))
    proxy.run(transport="stdio", show_banner=False)


if __name__ == "__main__":
    main()
