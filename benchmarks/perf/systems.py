"""The systems measured and how each is started: the router on either embedding backend,
FastMCP's proxy with its BM25 search, and an upstream alone."""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from router.config import StdioServer
from router.upstream.connection.transport import stdio_parameters

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
ONNX = "all-MiniLM-L6-v2"
TORCH = "sentence-transformers/all-MiniLM-L6-v2"
BACKENDS = {"onnx": ONNX, "torch": TORCH}
QUERY = "what time is it in Tokyo"


@dataclass(frozen=True, slots=True)
class Launch:
    """A child process: its command line, environment (None: this process's) and folder."""

    command: tuple[str, ...]
    env: Mapping[str, str] | None = None
    cwd: Path | None = None


def _write(path: Path, data: Mapping[str, Any]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1), encoding="utf-8")
    return path


def router_launch(
    servers: Mapping[str, Any],
    config: Path,
    model: str,
    cache_dir: Path,
    connect_s: float | None = None,
) -> Launch:
    """`mcp-router serve` over stdio, with `model` and `cache_dir` (and a connect timeout,
    which also bounds how long a first search waits for indexing)."""
    router: dict[str, Any] = {"model": model, "cache_dir": str(cache_dir)}
    if connect_s is not None:
        router["timeouts"] = {"connect": connect_s}
    _write(config, {"mcpServers": dict(servers), "router": router})
    return Launch((sys.executable, "-m", "router", "serve", "--config", str(config)), cwd=ROOT)


def fastmcp_launch(servers: Mapping[str, Any], config: Path) -> Launch:
    """FastMCP 4.x's proxy with `BM25SearchTransform` (`fastmcp_proxy.py`)."""
    _write(config, {"mcpServers": dict(servers)})
    return Launch((sys.executable, str(HERE / "fastmcp_proxy.py"), str(config)), cwd=ROOT)


def upstream_launch(entry: Mapping[str, Any]) -> Launch:
    """An upstream alone, started exactly as the router's pool starts it."""
    parameters = stdio_parameters(StdioServer.model_validate(dict(entry)))
    cwd = Path(parameters.cwd) if parameters.cwd is not None else None
    return Launch((parameters.command, *parameters.args), parameters.env, cwd)


def router_name(server: str, tool: str) -> str:
    return f"{server}__{tool}"


def fastmcp_name(servers: Mapping[str, Any], server: str, tool: str) -> str:
    """FastMCP keeps a lone server's tool names and prefixes several servers' tools."""
    return tool if len(servers) == 1 else f"{server}_{tool}"


def top_tool(result: Mapping[str, Any]) -> str | None:
    """The first tool name a `search_tools` answer gives: the router's structured content
    (`{"tools": [...]}`), or FastMCP's JSON list (structured `{"result": [...]}` or text)."""
    found: Any = None
    structured = result.get("structuredContent")
    if isinstance(structured, Mapping):
        found = structured.get("tools", structured.get("result"))
    if found is None:
        for block in result.get("content") or []:
            if block.get("type") == "text":
                try:
                    found = json.loads(block["text"])
                except ValueError:
                    continue
                break
    if isinstance(found, Mapping):
        found = found.get("tools", found.get("result"))
    if isinstance(found, list) and found and isinstance(found[0], Mapping):
        name = found[0].get("name")
        return name if isinstance(name, str) else None
    return None
