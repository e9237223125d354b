"""The routed MCP server over HTTP: streamable HTTP at `/mcp` (the SDK's session manager,
one session per client) and the legacy HTTP+SSE transport at `/sse` + `/messages/`.

Both serve one `Server` whose lifespan yields the front's shared `RouterState`, so every
session sees the same index and upstream pool. DNS-rebinding checks are the front's
(`GuardMiddleware`), not the SDK's, so REST and MCP share one policy.

A session lives in one process. Behind a load balancer its requests must come back to that
replica: streamable HTTP names the session in the `mcp-session-id` header of every response,
which a balancer can learn; legacy SSE names it only inside the stream (the `endpoint`
event's `/messages/?session_id=...`), so the `GET /sse` response also carries it in the
`x-mcp-router-session` header (deploy/haproxy.cfg sticks on both).
"""

from __future__ import annotations

import re
from contextlib import AbstractAsyncContextManager

from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.routing import BaseRoute, Route
from starlette.types import Message, Receive, Scope, Send

from router.errors import HttpRefusal
from router.sdk.internals import open_session_count
from router.server.http.errors import JsonRpcErrors, error_response
from router.server.http.event_store import RETRY_MS, BoundedEventStore
from router.server.state import RouterState

MESSAGES_PATH = "/messages/"
SSE_SESSION_HEADER = "x-mcp-router-session"
"""The `GET /sse` response header naming the session, for a load balancer's stickiness."""
_SESSION_ID = re.compile(rb"[?&]session_id=([0-9a-f]+)")


class McpEndpoints:
    """The ASGI endpoints of both MCP transports; `run()` must be entered before use."""

    def __init__(self, server: Server[RouterState], max_body_bytes: int) -> None:
        self.server = server
        self._sse_sessions = 0
        # No SDK Host/Origin checks: GuardMiddleware has applied ours to every endpoint
        # (its docstring says why ours); the body limit is kept here as a second bound.
        self.manager = StreamableHTTPSessionManager(
            server,
            event_store=BoundedEventStore(),
            security_settings=None,
            retry_interval=RETRY_MS,
            max_request_body_size=max_body_bytes,
        )
        self.sse = SseServerTransport(
            MESSAGES_PATH, security_settings=None, max_request_body_size=max_body_bytes
        )

    def run(self) -> AbstractAsyncContextManager[None]:
        """The session manager's task group: sessions live in it; leaving it ends them."""
        return self.manager.run()

    @property
    def open_sessions(self) -> int:
        """MCP sessions open now. Streamable HTTP: those the SDK's session manager holds, from
        the `initialize` that opens one until the client's DELETE, the idle timeout or the
        end of the front closes it (2026-07-28 clients are sessionless: each request stands
        alone). Legacy SSE: the open `/sse` streams."""
        return open_session_count(self.manager) + self._sse_sessions

    async def streamable_http(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.manager.handle_request(scope, receive, send)

    async def sse_stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":
            response = error_response(HttpRefusal(405, "use GET to open the SSE stream"), mcp=True)
            await response(scope, receive, send)
            return
        named = _SessionHeader(send)
        async with self.sse.connect_sse(scope, receive, named) as (read_stream, write_stream):
            self._sse_sessions += 1
            try:
                await self.server.run(
                    read_stream, write_stream, self.server.create_initialization_options()
                )
            finally:
                self._sse_sessions -= 1

    async def sse_message(self, scope: Scope, receive: Receive, send: Send) -> None:
        await self.sse.handle_post_message(scope, receive, send)


class _SessionHeader:
    """The `send` of a `GET /sse` response that adds the session's id as a header: it holds
    the response start until the first body chunk, the `endpoint` event naming the session
    (the SDK picks the id and writes that event first)."""

    def __init__(self, send: Send) -> None:
        self._send = send
        self._start: Message | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._start = message
            return
        if self._start is not None and message["type"] == "http.response.body":
            start, self._start = self._start, None
            found = _SESSION_ID.search(message.get("body", b""))
            if found is not None:
                headers = [*start.get("headers", []), (SSE_SESSION_HEADER.encode(), found[1])]
                start = {**start, "headers": headers}
            await self._send(start)
        await self._send(message)


class _Lookup:
    """An ASGI app that finds the running `McpEndpoints` in the lifespan state: routes
    exist before the lifespan has built the server they serve."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        endpoints: McpEndpoints = scope["state"]["mcp"]
        await getattr(endpoints, self.name)(scope, receive, send)


def mcp_routes() -> list[BaseRoute]:
    """`/mcp`, `/sse`, `/messages/` (and `/messages`, which would otherwise redirect)."""
    return [
        Route("/mcp", JsonRpcErrors(_Lookup("streamable_http")), include_in_schema=False),
        Route("/sse", JsonRpcErrors(_Lookup("sse_stream")), include_in_schema=False),
        Route(MESSAGES_PATH, JsonRpcErrors(_Lookup("sse_message")), include_in_schema=False),
        Route("/messages", JsonRpcErrors(_Lookup("sse_message")), include_in_schema=False),
    ]
