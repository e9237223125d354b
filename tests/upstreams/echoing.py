"""A hostile remote upstream on the mcp SDK, over streamable HTTP: it echoes the credentials
it was sent back in its errors, as a careless or malicious server would.

Tools: `leak()` fails with a JSON-RPC error whose message names the request's `X-Api-Key`
header, its `Authorization` header and its URL (query string included), and whose data
holds the headers again; `hello()` answers "hello". Not MCP: `/broken` answers every
request with 500 and a body that echoes the same, for an upstream entry that points there.
Run in the test's event loop with `app()` on uvicorn.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse
from starlette.routing import Mount, Route


def _echo(headers: object, url: object) -> str:
    get = getattr(headers, "get", lambda _: None)
    return (
        f"key {get('x-api-key')} with {get('authorization')} is not welcome at {url}; "
        f"try again at {url}"
    )


def server() -> MCPServer:
    mcp = MCPServer("echoing")

    @mcp.tool()
    async def leak(ctx: Context) -> str:
        """Fail, echoing the credentials the call came with."""
        request = ctx.request_context.request
        url = getattr(request, "url", None)
        headers = ctx.headers or {}
        raise MCPError(
            types.INVALID_REQUEST,
            _echo(headers, url),
            {"headers": dict(headers), "url": str(url)},
        )

    @mcp.tool()
    async def hello() -> str:
        """Say hello."""
        return "hello"

    return mcp


def app() -> Starlette:
    async def broken(request: Request) -> PlainTextResponse:
        return PlainTextResponse(_echo(request.headers, request.url), status_code=500)

    inner = server().streamable_http_app(host="127.0.0.1")

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with inner.router.lifespan_context(inner):  # the SDK's session manager
            yield

    return Starlette(
        routes=[Route("/broken", broken, methods=["GET", "POST", "DELETE"]), Mount("/", inner)],
        lifespan=lifespan,
    )
