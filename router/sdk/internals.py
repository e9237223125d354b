"""Every use of the MCP SDK's private surface, in one place, each with its reason.

The router touches three things the SDK does not export. Everything else in the package
uses public API only (`mcp.client.Transport`, the transports, `mcp.server.lowlevel`).
If an SDK upgrade removes or renames one of them, `tests/sdk/test_sdk_internals.py` fails and
names it; `pyproject.toml` pins the tested minor release for the same reason.

1. `ReadStream` / `WriteStream` / `TransportStreams` (`mcp.shared._stream_protocols`,
   `mcp.client._transport`): the element types of a transport's streams. The public
   `mcp.client.Transport` protocol is built on them, but they have no public export.
   The router wraps read streams (to see a stdio child die, to answer unreadable stdio
   lines) and needs the types to say what it wraps.
2. `last_context` on a read stream: the SDK's dispatcher reads this duck-typed attribute
   (`getattr(stream, "last_context", None)`) to run each message's handler in the
   sender's contextvars. A wrapper that does not forward it silently loses them.
3. `ServerSession._connection`: the lowlevel server builds a new `ServerSession` for every
   request, around the one `Connection` object of its client. Dynamic mode keeps each
   client's searched tools for as long as that client is connected, so it needs the
   object that lives exactly that long, and there is no public accessor from a
   `ServerRequestContext` (the newer `Context` has `.connection`; the lowlevel handlers
   receive `ServerRequestContext`).
4. `StreamableHTTPSessionManager._server_instances`: the manager's table of open sessions
   (it admits, refuses at `max_sessions` and discards by it). `/healthz` reports how many
   MCP sessions are open, and the manager has no public count.
5. `ClientSession._stamp`: the function that writes each outgoing request's envelope. On
   2026-07-28 it puts the client's capabilities into every request's `_meta`, always the
   ones the client was built with. A gateway must send the capabilities of the host whose
   request it forwards (an upstream refuses, or asks, by them), so the router wraps it
   (`with_envelope_rewrite`) to replace them per request; there is no public hook.
6. `OAuthClientProvider._initialize` and `context.token_expiry_time`: the provider loads the
   stored tokens in `_initialize` but not their expiry, so an expired stored token is taken
   for a valid one until the server answers 401, which leads to a full sign-in instead of a
   refresh (python-sdk #1318). `restore_expiry_on_load` counts the expiry from the loaded
   token's `expires_in` (the token files store the seconds left).
7. `StreamableHTTPSessionManager._admit_session` / `._discard_session` and
   `StreamableHTTPServerTransport._event_store`: the manager hands its one `event_store` to
   every session's transport, and the transport replays by event id alone, so one session
   could resume another's stream (issue 33). `hook_sessions` gives each admitted session its
   own store, can refuse a session before it is admitted (a principal's fair share), and
   hears every way a session ends (DELETE, idle timeout, crash, shutdown) to drop what was
   kept for it. The manager has no hook for any of these.
8. `OAuthClientProvider.context.current_tokens` (with `update_token_expiry`): the tokens a
   provider holds in memory, loaded once. Two connections of one upstream (a primary and
   its handshake twin) have a provider each; when one signs in while the other waits
   (`router.upstream.auth.refresh`: one sign-in at a time), `adopt_tokens` gives the waiting
   one the new tokens, so it does not sign in a second time. There is no public setter.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any, TypeVar

from mcp.client._transport import TransportStreams
from mcp.shared._stream_protocols import ReadStream, WriteStream
from mcp.shared.auth import OAuthToken

if TYPE_CHECKING:  # the server side's modules load where they are used, not with the client's
    from mcp.server.connection import Connection
    from mcp.server.session import ServerSession
    from mcp.server.streamable_http import EventStore
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

__all__ = [
    "LAST_CONTEXT",
    "ReadStream",
    "SdkInternalMissing",
    "TransportStreams",
    "WriteStream",
    "connection_of",
    "hook_sessions",
    "last_context_of",
    "open_session_count",
    "restore_expiry_on_load",
    "with_envelope_rewrite",
]

LAST_CONTEXT = "last_context"
"""The read-stream attribute the SDK's dispatcher reads for per-message contextvars."""


class SdkInternalMissing(RuntimeError):
    """The installed SDK no longer has a private thing the router relies on."""

    def __init__(self, thing: str, why: str) -> None:
        super().__init__(
            f"the installed MCP SDK has no {thing}, which mcp-router needs ({why}); "
            "install the SDK release pinned in pyproject.toml"
        )
        self.thing = thing


def last_context_of(stream: object) -> Any:
    """The sender's context of the message `stream` returned last, as the SDK reads it."""
    return getattr(stream, LAST_CONTEXT, None)


def connection_of(session: ServerSession) -> Connection:
    """The `Connection` behind a request's `ServerSession`: one per connected client.

    No fallback: keying per-client state by the per-request session would make dynamic
    mode forget every client's tools after each request, silently.
    """
    from mcp.server.connection import Connection

    try:
        connection = session._connection
    except AttributeError:
        raise SdkInternalMissing(
            "ServerSession._connection", "dynamic mode keeps each client's tools by it"
        ) from None
    if not isinstance(connection, Connection):
        raise SdkInternalMissing(
            "ServerSession._connection of type Connection",
            "dynamic mode keeps each client's tools by it",
        )
    return connection


def open_session_count(manager: StreamableHTTPSessionManager) -> int:
    """How many streamable-HTTP sessions `manager` holds open now."""
    try:
        sessions = manager._server_instances
    except AttributeError:
        raise SdkInternalMissing(
            "StreamableHTTPSessionManager._server_instances", "/healthz counts open sessions by it"
        ) from None
    return len(sessions)


Envelope = dict[str, Any]
"""An outgoing request as the client session builds it: `{"method": ..., "params": {...}}`."""


def with_envelope_rewrite(session: object, rewrite: Callable[[Envelope], None]) -> None:
    """Run `rewrite` on every request `session` sends, after the SDK stamped its envelope
    (in the sending task, before the request is written)."""
    try:
        stamp = session._stamp  # type: ignore[attr-defined]
    except AttributeError:
        raise SdkInternalMissing(
            "ClientSession._stamp", "requests carry the calling host's capabilities through it"
        ) from None

    def stamped(data: Envelope, options: Any) -> None:
        stamp(data, options)
        rewrite(data)

    session._stamp = stamped  # type: ignore[attr-defined]


_P = TypeVar("_P")


def adopt_tokens(provider: object, tokens: OAuthToken) -> None:
    """Make `provider` (an `OAuthClientProvider`) hold `tokens`, as if it had loaded them."""
    context = getattr(provider, "context", None)
    if context is None or not hasattr(context, "current_tokens"):
        raise SdkInternalMissing(
            "OAuthClientProvider.context.current_tokens",
            "a connection that waited for another's sign-in uses its tokens",
        )
    context.current_tokens = tokens
    context.update_token_expiry(tokens)


def restore_expiry_on_load(provider: _P) -> _P:
    """`provider` (an `OAuthClientProvider`), made to count a loaded token's expiry."""
    try:
        load = provider._initialize  # type: ignore[attr-defined]
        context = provider.context  # type: ignore[attr-defined]
        context.token_expiry_time  # noqa: B018 - the attribute must exist
    except AttributeError:
        raise SdkInternalMissing(
            "OAuthClientProvider._initialize / context.token_expiry_time",
            "a stored token that expired is refreshed rather than sent",
        ) from None

    async def initialize() -> None:
        await load()
        tokens = context.current_tokens
        if tokens is not None and context.token_expiry_time is None:
            context.update_token_expiry(tokens)

    provider._initialize = initialize  # type: ignore[attr-defined]
    return provider


def hook_sessions(
    manager: StreamableHTTPSessionManager,
    *,
    admits: Callable[[], bool],
    opened: Callable[[str], EventStore],
    closed: Callable[[str], None],
) -> None:
    """Make `manager` ask `admits()` before it opens a session (False: it answers 503, as at
    its own `max_sessions`), give each session it opens the event store `opened(session_id)`,
    and call `closed(session_id)` however the session ends. `admits` and `opened` run in the
    opening request's context (its principal), under the manager's session-creation lock.
    Build `manager` with no `event_store`: a session is then resumable only through the store
    `opened` gave it, and never through a shared one."""
    from mcp.server.streamable_http import StreamableHTTPServerTransport

    why = "each session's SSE events are kept apart from every other session's"
    try:
        admit = manager._admit_session
        discard = manager._discard_session
    except AttributeError:
        raise SdkInternalMissing(
            "StreamableHTTPSessionManager._admit_session / _discard_session", why
        ) from None
    if "_event_store" not in vars(StreamableHTTPServerTransport(mcp_session_id=None)):
        raise SdkInternalMissing("StreamableHTTPServerTransport._event_store", why)
    if manager.event_store is not None:
        raise ValueError("hook_sessions needs a manager built without an event_store")

    def admitted(requestor: Any) -> StreamableHTTPServerTransport | None:
        if not admits():
            return None
        transport = admit(requestor)
        if transport is not None:
            assert transport.mcp_session_id is not None
            transport._event_store = opened(transport.mcp_session_id)
        return transport

    async def discarded(session_id: str, transport: StreamableHTTPServerTransport) -> None:
        try:
            await discard(session_id, transport)
        finally:
            closed(session_id)

    manager._admit_session = admitted  # type: ignore[method-assign]
    manager._discard_session = discarded  # type: ignore[method-assign]
