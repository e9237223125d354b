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

Each streamable-HTTP session resumes only its own SSE events (`event_store.py`): a
`Last-Event-ID` that names no event of the session (another session's, a guess, or one too
old to be kept) is refused with 400 rather than answered with an empty stream, which the
SDK's client would reopen forever. Fair shares: with identities, one principal holds at most
`SESSIONS_PER_PRINCIPAL` streamable-HTTP sessions and `SSE_PER_PRINCIPAL` legacy SSE streams
(429 past either), on top of the global bounds (the SDK manager's 10,000 sessions,
`MAX_SSE_STREAMS`). Without identities every caller is one principal, and only the global
bounds apply.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager

from mcp.server.lowlevel import Server
from mcp.server.sse import SseServerTransport
from mcp.server.streamable_http import EventStore
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from starlette.datastructures import Headers
from starlette.routing import BaseRoute, Route
from starlette.types import Message, Receive, Scope, Send

from router.core.errors import HttpRefusal
from router.sdk.internals import hook_sessions, open_session_count
from router.sdk.sse_sessions import canonical_session_id, posted_session_id
from router.sdk.versions import HANDSHAKE_PROTOCOL_VERSIONS
from router.server.access.endpoint import at_endpoint, requested_endpoint
from router.server.access.visibility import current_principal
from router.server.http.errors import JsonRpcErrors, error_response
from router.server.http.event_store import RETRY_MS, BoundedEventStore, owner_key
from router.server.lifecycle.state import RouterState

MESSAGES_PATH = "/messages/"
ENDPOINT_MCP, ENDPOINT_SSE = "/mcp/{endpoint}", "/sse/{endpoint}"
"""A named endpoint's streamable HTTP and legacy SSE (`router.endpoints`)."""
SSE_SESSION_HEADER = "x-mcp-router-session"
"""The `GET /sse` response header naming the session, for a load balancer's stickiness."""
_SESSION_ID = re.compile(rb"[?&]session_id=([^&\s]+)")
"""The session id in the SDK's `endpoint` event (checked by `canonical_session_id`)."""
MAX_SSE_STREAMS = 1_000
"""Legacy SSE streams open at once, across every principal (each is a whole MCP session)."""
SSE_PER_PRINCIPAL = 16
"""Legacy SSE streams one principal may hold open: one per host process it runs."""
SESSIONS_PER_PRINCIPAL = 100
"""Streamable-HTTP sessions one principal may hold open (a session lives until its client
deletes it or it idles 30 minutes, so a host that restarts often holds a few at once)."""
_UNKNOWN_EVENT = (
    "Last-Event-ID names no event of this session's streams: another session's, unknown, "
    "or too old to be kept; open the stream again without it (a request whose answer was "
    "lost must be sent again)"
)


class McpEndpoints:
    """The ASGI endpoints of both MCP transports; `run()` must be entered before use."""

    def __init__(self, server: Server[RouterState], max_body_bytes: int) -> None:
        self.server = server
        self._sse_sessions = 0
        self._sse_by_principal: Counter[str] = Counter()
        self.events = BoundedEventStore()
        # No SDK Host/Origin checks: GuardMiddleware has applied ours to every endpoint
        # (its docstring says why ours); the body limit is kept here as a second bound.
        # No event store of the manager's: each session gets its own view (`hook_sessions`).
        self.manager = StreamableHTTPSessionManager(
            server,
            security_settings=None,
            retry_interval=RETRY_MS,
            max_request_body_size=max_body_bytes,
        )
        self._endpoint_of: dict[str, str | None] = {}
        """Each streamable-HTTP session's endpoint (`router.endpoints`), bound when it opens
        (as many as the manager's sessions, which it bounds)."""
        self._sse_endpoint_of: dict[str, str | None] = {}
        """Each legacy SSE stream's endpoint, by its session id (at most `MAX_SSE_STREAMS`)."""

        def opened(session_id: str) -> EventStore:
            self._endpoint_of[session_id] = requested_endpoint()
            return self.events.for_session(session_id, owner_key())

        def closed(session_id: str) -> None:
            self._endpoint_of.pop(session_id, None)
            self.events.forget(session_id)

        hook_sessions(
            self.manager,
            admits=lambda: self._session_refusal() is None,
            opened=opened,
            closed=closed,
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
        refusal = self._streamable_refusal(scope)
        if refusal is not None:
            await error_response(refusal, mcp=True)(scope, receive, send)
            return
        await self.manager.handle_request(scope, receive, send)

    def _streamable_refusal(self, scope: Scope) -> HttpRefusal | None:
        """A resume that names no event of its own session (400), or a new session past
        the principal's share (429); None for everything the SDK's manager should answer."""
        headers = Headers(scope=scope)  # the first of repeated headers, as the SDK reads them
        session_id = headers.get("mcp-session-id")
        bound = self._endpoint_of.get(session_id, ...) if session_id is not None else ...
        if bound is not ... and bound != requested_endpoint():
            # a session is its endpoint's: another endpoint's path does not know it
            return HttpRefusal(404, "Session not found at this endpoint")
        if scope["method"] == "POST" and session_id is None:
            # a handshake-era request opens a session; a 2026-07-28 one stands alone
            revision = headers.get("mcp-protocol-version")
            opens = revision is None or revision in HANDSHAKE_PROTOCOL_VERSIONS
            return self._session_refusal() if opens else None
        last_event_id = headers.get("last-event-id")
        if scope["method"] != "GET" or session_id is None or last_event_id is None:
            return None
        known = self.events.replayable(session_id, last_event_id, owner_key())
        return HttpRefusal(400, _UNKNOWN_EVENT) if known is False else None

    def _session_refusal(self) -> HttpRefusal | None:
        principal = current_principal()
        if principal is None or self.events.sessions_of(principal.key) < SESSIONS_PER_PRINCIPAL:
            return None
        return _too_many(f"{SESSIONS_PER_PRINCIPAL} MCP sessions", "DELETE /mcp ends one")

    async def sse_stream(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["method"] != "GET":
            response = error_response(HttpRefusal(405, "use GET to open the SSE stream"), mcp=True)
            await response(scope, receive, send)
            return
        principal = current_principal()
        key = principal.key if principal is not None else None
        refusal = None
        if self._sse_sessions >= MAX_SSE_STREAMS:
            refusal = HttpRefusal(
                503,
                f"{MAX_SSE_STREAMS} SSE streams are open, the most this router serves",
                {"Retry-After": "30"},
            )
        elif key is not None and self._sse_by_principal[key] >= SSE_PER_PRINCIPAL:
            refusal = _too_many(f"{SSE_PER_PRINCIPAL} SSE streams", "close one first")
        if refusal is not None:
            await error_response(refusal, mcp=True)(scope, receive, send)
            return
        # Counted before the first await: concurrent opens cannot pass the bounds together.
        self._sse_sessions += 1
        if key is not None:
            self._sse_by_principal[key] += 1
        endpoint, ids = requested_endpoint(), []

        def bind(session_id: str) -> None:
            ids.append(session_id)
            self._sse_endpoint_of[session_id] = endpoint

        try:
            named = _SessionHeader(send, bind)
            async with self.sse.connect_sse(scope, receive, named) as (read_stream, write_stream):
                await self.server.run(
                    read_stream, write_stream, self.server.create_initialization_options()
                )
        finally:
            for session_id in ids:
                self._sse_endpoint_of.pop(session_id, None)
            self._sse_sessions -= 1
            if key is not None:
                self._sse_by_principal[key] -= 1
                if not self._sse_by_principal[key]:
                    del self._sse_by_principal[key]

    async def sse_message(self, scope: Scope, receive: Receive, send: Send) -> None:
        """A message for a legacy SSE session, served at the endpoint its stream opened at:
        the id is read once, in the form the SDK then reads (`router/sdk/sse_sessions.py`);
        one that names no open stream is refused here, never served as the router itself."""
        if scope["method"] != "POST":
            refusal = HttpRefusal(405, "Method Not Allowed", {"Allow": "POST"})
            await error_response(refusal, mcp=True)(scope, receive, send)
            return
        session_id = posted_session_id(scope)
        if isinstance(session_id, str) and session_id not in self._sse_endpoint_of:
            session_id = HttpRefusal(404, "Could not find session")
        if isinstance(session_id, HttpRefusal):
            await error_response(session_id, mcp=True)(scope, receive, send)
            return
        with at_endpoint(self._sse_endpoint_of[session_id]):
            await self.sse.handle_post_message(scope, receive, send)


def _too_many(what: str, remedy: str) -> HttpRefusal:
    """429: the caller's principal holds its share already; the others are still served."""
    return HttpRefusal(
        429,
        f"this principal holds {what} open already, its share of this router; {remedy}",
        {"Retry-After": "30"},
    )


class _SessionHeader:
    """The `send` of a `GET /sse` response that adds the session's id as a header: it holds
    the response start until the first body chunk, the `endpoint` event naming the session
    (the SDK picks the id and writes that event first)."""

    def __init__(self, send: Send, bind: Callable[[str], None]) -> None:
        self._send = send
        self._bind = bind
        self._start: Message | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self._start = message
            return
        if self._start is not None and message["type"] == "http.response.body":
            start, self._start = self._start, None
            found = _SESSION_ID.search(message.get("body", b""))
            session_id = canonical_session_id(found[1].decode()) if found is not None else None
            if session_id is not None:  # else unbound: a post naming it is refused
                self._bind(session_id)
                header = (SSE_SESSION_HEADER.encode(), session_id.encode())
                headers = [*start.get("headers", []), header]
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


class _AtEndpoint:
    """`/mcp/NAME` and `/sse/NAME`: the MCP endpoint, served as endpoint NAME
    (`router.endpoints`; `router.server.access.endpoint`). A name the config in force does
    not define is 404, before the transport sees the request."""

    def __init__(self, app: _Lookup) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        name = scope.get("path_params", {}).get("endpoint")
        state: RouterState = scope["state"]["router"]
        known = state.config_settings.endpoints
        if not isinstance(name, str) or name not in known:
            names = ", ".join(sorted(known)) or "none"
            refusal = HttpRefusal(404, f"no endpoint {name!r} (router.endpoints: {names})")
            await error_response(refusal, mcp=True)(scope, receive, send)
            return
        with at_endpoint(name):
            await self.app(scope, receive, send)


def mcp_routes() -> list[BaseRoute]:
    """`/mcp`, `/sse`, `/messages/` (and `/messages`, which would otherwise redirect), and
    each endpoint's `/mcp/NAME` and `/sse/NAME`."""
    at = _AtEndpoint
    return [
        Route("/mcp", JsonRpcErrors(_Lookup("streamable_http")), include_in_schema=False),
        Route("/sse", JsonRpcErrors(_Lookup("sse_stream")), include_in_schema=False),
        Route(ENDPOINT_MCP, JsonRpcErrors(at(_Lookup("streamable_http"))), include_in_schema=False),
        Route(ENDPOINT_SSE, JsonRpcErrors(at(_Lookup("sse_stream"))), include_in_schema=False),
        Route(MESSAGES_PATH, JsonRpcErrors(_Lookup("sse_message")), include_in_schema=False),
        Route("/messages", JsonRpcErrors(_Lookup("sse_message")), include_in_schema=False),
    ]
