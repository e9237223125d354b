"""A server that takes an API key, written as a third party would (the SDK's `MCPServer`):
over stdio the key is `KEYED_TOKEN` in its environment, as GitHub's server takes
`GITHUB_PERSONAL_ACCESS_TOKEN`; over streamable HTTP it is each request's `Authorization:
Bearer` header.

Tools: `whoami()` appends `{"how": "env"|"header", "key": KEY, "pid": PID}` to LOG and
answers "noted" (never the key); `own_<8 hex of the key's sha256>()`, listed only to that
key, answers "yours". A request without a key is refused.

    python -m tests.upstreams.keyed LOG           # stdio
    python -m tests.upstreams.keyed LOG --http    # prints http://127.0.0.1:PORT/mcp
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import socket
from contextvars import ContextVar
from typing import Any

import anyio
import uvicorn
from mcp.server.mcpserver import MCPServer
from mcp_types import CallToolResult, TextContent, Tool
from starlette.types import ASGIApp, Receive, Scope, Send

_HTTP = False
_HEADER: ContextVar[str] = ContextVar("keyed_header", default="")


class _KeyFromHeader:
    """Reads each HTTP request's bearer key for the handlers (as the SDK's own auth
    middleware hands them the access token)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        value = dict(scope["headers"]).get(b"authorization", b"").decode()
        token = _HEADER.set(value.removeprefix("Bearer "))
        try:
            await self.app(scope, receive, send)
        finally:
            _HEADER.reset(token)


def _key() -> str:
    return _HEADER.get() if _HTTP else os.environ.get("KEYED_TOKEN", "")


def _own(key: str) -> str:
    return "own_" + hashlib.sha256(key.encode()).hexdigest()[:8]


class KeyedServer(MCPServer):
    """Lists `own_<digest>` to the key it is reached with."""

    async def list_tools(self) -> list[Tool]:
        key = _key()
        if not key:
            raise ValueError("no key")
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        own = Tool(name=_own(key), description="this key's own tool", input_schema=schema)
        return [*await super().list_tools(), own]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        if name == _own(_key()):
            return CallToolResult(content=[TextContent(text="yours")])
        return await super().call_tool(name, arguments, context)


def build(log: str) -> MCPServer:
    server = KeyedServer("keyed", log_level="WARNING")

    @server.tool()
    async def whoami() -> str:
        """Note which key this call came with."""
        key = _key()
        if not key:
            raise ValueError("no key")
        line = {"how": "header" if _HTTP else "env", "key": key, "pid": os.getpid()}
        with open(log, "a", encoding="utf-8") as file:  # noqa: ASYNC230 (a test's tiny log)
            file.write(json.dumps(line) + "\n")
        return "noted"

    return server


async def _serve_http(log: str) -> None:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port: int = sock.getsockname()[1]
    app = _KeyFromHeader(build(log).streamable_http_app(host="127.0.0.1"))
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", timeout_graceful_shutdown=1
    )
    print(f"http://127.0.0.1:{port}/mcp", flush=True)
    await uvicorn.Server(config).serve([sock])


def main() -> None:
    global _HTTP
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("log")
    parser.add_argument("--http", action="store_true")
    options = parser.parse_args()
    _HTTP = options.http
    if _HTTP:
        anyio.run(_serve_http, options.log)
    else:
        build(options.log).run("stdio")


if __name__ == "__main__":
    main()
