"""Upstream requests to the host: which host session gets them, and how.

An upstream shares one connection among every host session, and a server-to-client request
(sampling, elicitation, `roots/list`) does not name the call that caused it. So the relay
keeps, per upstream, the host requests now forwarded to it (`calling`), and the calls there
that ended without the upstream's answer (timed out or cancelled: the upstream may still be
working on them, and ask for them later). A call that ended so counts for its upstream for
`LINGER` seconds more; at most `LINGER_LIMIT` such sessions are told apart per upstream, and
past that the upstream counts as asked by several. The relay picks:
- the caller in the current context first. The SDK asks from the calling task when a
  2026-07-28 upstream returns its questions in the call's result, and it hands on the
  sender's context when a streamable HTTP upstream asks on the call's own response stream:
  both are tied to their call exactly;
- else, when every call in flight to that upstream and every call that ended there lately
  are one host session's, that session's call in flight (a 2025-11-25 upstream over stdio or
  SSE asks out of band); the request goes out on that call's stream (`related_request_id`),
  as if the upstream were the router itself;
- with calls from several sessions in flight or ended lately there, no one can tell whose it
  is: the upstream gets an error rather than another user's answer. An ended call is never
  the one asked: its session gave up on it (over HTTP, with no call of that session in
  flight, the upstream gets an error). An upstream's log message follows the same rule, and
  one that belongs to no one call stays in the router's log;
- with no call in flight (an upstream asking `roots/list` after its start, or after a roots
  change), the one host the router serves on stdio, which is the only user by construction.
  Over HTTP (`one_host` false) no session is picked by being the only one connected: such a
  request gets an error naming why (roots are each client's own; ask during a call).
A per-user upstream has one connection per principal, all under the server's one name: what
a principal's connection asks or logs comes with that principal's key (`principal`), and
every rule above applies among that principal's calls only, so another principal's call is
never asked, however alone it is in flight there (each call records its principal).
The host's own errors go back to the upstream with their codes; a host that did not declare
the capability, or whose connection cannot carry requests (2026-07-28, JSON-only HTTP),
gives the upstream an error that says so. Between a 2026-07-28 host and a 2026-07-28
upstream nothing is relayed here: the questions pass as results (`tools.forward`).
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

import anyio
import mcp_types as types
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from router.core.errors import UpstreamTimeout
from router.sdk.internals import connection_of
from router.server.calls.host_capabilities import missing_capability
from router.upstream.connection.host_requests import HostRequest
from router.upstream.personal.acting import current_acting

logger = logging.getLogger(__name__)

_R = TypeVar("_R", bound=types.Result)


class Asker(Protocol):
    """Who answers an upstream's questions for a call no host request waits on: a held call
    (`router.server.calls.held_calls`), or a task (`router.server.tasks`)."""

    async def ask(self, request: Any, result_type: type[_R]) -> _R | types.ErrorData: ...


@dataclass(eq=False)
class _Caller:
    """A host request being forwarded to `upstream`."""

    upstream: str
    session: ServerSession | None
    """The request's session; None for a request outside any call."""
    connection: Connection
    request_id: types.RequestId | None
    meta: Mapping[str, Any] | None = None
    principal: str | None = None
    """The key of the principal the request went out for (`Acting.key`), if any."""
    delivering: int = 0
    """Log messages for this call being written to the host now."""
    held: Asker | None = None
    """A call held open, or a task's: its questions wait for the host's retry or update."""
    delivered: anyio.Event = field(default_factory=anyio.Event)


_LOG_ORDER = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_NOTIFY_LIMIT = 10.0
"""Seconds a log message may wait to be written to its client before it is dropped."""

LINGER = 60.0
"""Seconds a call that timed out or was cancelled still counts for its upstream: long enough
for most work a cancellation did not stop to reach its question, short enough that one
session's abandoned call does not keep every other session's out-of-band questions to that
upstream refused for minutes (the price of the grace). No bound is exact: an upstream that
ignores cancellation may ask at any time; this one is explicit, and configurable per relay."""
LINGER_LIMIT = 64
"""Sessions with ended calls told apart per upstream; past it, the upstream counts as asked
by several until the newest would have expired."""

_current: ContextVar[_Caller | None] = ContextVar("mcp_router_relay_caller", default=None)


def _refusal(message: str, code: int = types.INVALID_REQUEST) -> types.ErrorData:
    return types.ErrorData(code=code, message=f"mcp-router: {message}")


def _method(request: HostRequest) -> str:
    return request.method


class HostRelay:
    """Routes each upstream's request to the host session that should answer it."""

    def __init__(self, *, one_host: bool = False, linger: float = LINGER) -> None:
        """`one_host`: the router serves one host (stdio), the only user there is, so a
        request outside any call may go to it; over HTTP none does. `linger`: the grace of
        an ended call, in seconds."""
        self._one_host = one_host
        self._linger = linger
        self._calls: dict[str, list[_Caller]] = {}
        # Per upstream, the host connections whose calls there ended without an answer, until
        # when each counts and for whom; a strong reference, so an id is never reused meanwhile.
        self._ended: dict[str, dict[Connection, tuple[float, str | None]]] = {}
        self._crowded: dict[str, float] = {}
        """Upstreams whose ended calls overflowed `LINGER_LIMIT`: several, until then."""
        # Every handshake-era host connection seen: its own channel is what a request
        # outside any call goes out on. Weak, and holding nothing that refers back to it, so
        # a closed connection goes. (2026-07-28 connections, one a request, carry no requests.)
        self._hosts: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._log_levels: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()

    def seen(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        """Note the host session of a request; True the first time the one host (stdio) is
        seen if it lists roots (its upstreams should then ask for them again). Over HTTP they
        should not: a request outside any call is refused there."""
        connection = connection_of(ctx.session)
        first = connection not in self._hosts
        self._note(connection)
        caps = ctx.session.client_capabilities
        return self._one_host and first and caps is not None and caps.roots is not None

    def _note(self, connection: Connection) -> None:
        if connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._hosts.add(connection)

    @asynccontextmanager
    async def calling(
        self, ctx: ServerRequestContext[Any, Any], upstream: str, held: Asker | None = None
    ) -> AsyncIterator[None]:
        """While the host's request `ctx` is forwarded to `upstream`. On the way out it lets
        the call's log messages reach the host first: the SDK hands them over in tasks of
        their own, which may still be writing when the result arrives, and a message after
        the result would miss an HTTP call's stream."""
        connection = connection_of(ctx.session)
        acting = current_acting()
        principal = acting.key if acting is not None else None
        caller = _Caller(
            upstream, ctx.session, connection, ctx.request_id, ctx.meta, principal, held=held
        )
        self._note(connection)
        calls = self._calls.setdefault(upstream, [])
        calls.append(caller)
        token = _current.set(caller)
        answered = ended = False
        try:
            yield
            answered = True
            if caller.delivering:
                with anyio.move_on_after(_NOTIFY_LIMIT):
                    await caller.delivered.wait()
        except (UpstreamTimeout, anyio.get_cancelled_exc_class()):
            ended = not answered  # no answer, and the upstream may still be working on it
            raise
        finally:
            _current.reset(token)
            calls.remove(caller)
            if not calls:
                del self._calls[upstream]
            if ended:
                self._end(upstream, connection, principal)

    def _end(self, upstream: str, connection: Connection, principal: str | None) -> None:
        """A call from `connection` (for `principal`) to `upstream` ended without its answer:
        it counts there for `linger` seconds more."""
        now = anyio.current_time()
        self._expire(upstream, now)
        ended = self._ended.setdefault(upstream, {})
        ended[connection] = (now + self._linger, principal)
        if len(ended) > LINGER_LIMIT:
            self._crowded[upstream] = now + self._linger
            ended.clear()

    def _expire(self, upstream: str, now: float) -> None:
        ended = self._ended.get(upstream, {})
        for connection in [c for c, (until, _) in ended.items() if until <= now]:
            del ended[connection]
        if not ended:
            self._ended.pop(upstream, None)
        if self._crowded.get(upstream, float("inf")) <= now:
            del self._crowded[upstream]

    def _candidates(self, upstream: str, principal: str | None) -> tuple[_Caller | None, int, bool]:
        """Outside a call's context: the one session's call in flight to `upstream` (None if
        there is none, or several sessions' calls), how many sessions have calls in flight
        or lately ended there (over `LINGER_LIMIT`: too many to tell apart), and whether
        some of those sessions have only ended calls there; `principal`'s alone if given."""
        self._expire(upstream, anyio.current_time())
        calls = [c for c in self._calls.get(upstream, []) if _for(c.principal, principal)]
        live = {id(c.connection): c for c in reversed(calls)}
        ended_calls = self._ended.get(upstream, {}).items()
        ended = {id(c) for c, (_, whose) in ended_calls if _for(whose, principal)}
        sessions = len(live.keys() | ended)
        if upstream in self._crowded:
            sessions = max(sessions, LINGER_LIMIT + 1)
        one = next(iter(live.values())) if sessions == 1 and live else None
        return one, sessions, sessions > len(live)

    def set_log_level(self, ctx: ServerRequestContext[Any, Any], level: str) -> None:
        """A host's `logging/setLevel` (handshake revisions): upstream log messages below it
        are not passed on to that host."""
        self._log_levels[connection_of(ctx.session)] = level

    async def log(
        self,
        upstream: str,
        params: types.LoggingMessageNotificationParams,
        *,
        principal: str | None = None,
    ) -> None:
        """An upstream's log message goes to the host whose call it belongs to, on that
        call's stream, at or above the host's level; one that belongs to no call, or to
        one of several, stays in the router's log only."""
        current = self._current(upstream, principal)
        if current is not None:
            caller = current
        else:
            one, _, _ = self._candidates(upstream, principal)
            if one is None:
                return
            caller = one
        wanted = self._log_levels.get(caller.connection)
        if wanted is not None and _LOG_ORDER.index(params.level) < _LOG_ORDER.index(wanted):
            return
        # On 2026-07-28 a host opts in per request (`_meta`), at a level of its choosing.
        session = caller.session
        if session is None:
            return
        if params.level not in allowed_log_levels(session.protocol_version, caller.meta):
            return
        caller.delivering += 1
        try:
            with anyio.fail_after(_NOTIFY_LIMIT):
                await session.send_notification(
                    types.LoggingMessageNotification(params=params),
                    related_request_id=caller.request_id,
                )
        except (TimeoutError, MCPError, anyio.BrokenResourceError, anyio.ClosedResourceError):
            logger.info("a log message from %s was not delivered to its client", upstream)
        finally:
            caller.delivering -= 1
            if not caller.delivering:
                caller.delivered.set()

    async def tell_host(self, level: types.LoggingLevel, message: str) -> None:
        """A message of the router's own (a config file it could not apply) as a log
        notification to the one host (stdio, handshake revisions), at or above the host's
        level. Over HTTP it stays in the router's log: a shared front's clients are not who
        edits its config."""
        if not self._one_host:
            return
        params = types.LoggingMessageNotificationParams(
            level=level, logger="mcp-router", data=message
        ).model_dump(mode="json", by_alias=True, exclude_none=True)
        for connection in list(self._hosts):
            wanted = self._log_levels.get(connection)
            if wanted is not None and _LOG_ORDER.index(level) < _LOG_ORDER.index(wanted):
                continue
            with anyio.move_on_after(_NOTIFY_LIMIT):
                await connection.notify("notifications/message", params)

    @staticmethod
    def _current(upstream: str, principal: str | None) -> _Caller | None:
        """The call in the current context, if it is to `upstream` (and `principal`'s)."""
        current = _current.get()
        if current is None or current.upstream != upstream:
            return None
        return current if _for(current.principal, principal) else None

    def _caller(
        self, upstream: str, request: HostRequest, principal: str | None
    ) -> _Caller | types.ErrorData:
        current = self._current(upstream, principal)
        if current is not None:
            return current
        one, sessions, ended = self._candidates(upstream, principal)
        if one is not None:
            return one
        if sessions > 1:
            return _refusal(
                f"{_method(request)} from '{upstream}' cannot be relayed: calls from "
                f"{'several' if sessions > LINGER_LIMIT else sessions} clients are in flight "
                f"to it or ended there within {self._linger:g}s, and the request does not say "
                "which one it belongs to. Retry when fewer calls run at once."
            )
        if self._one_host:  # stdio: the one host is the only user, ended calls its own
            return self._the_one_host(upstream, request)
        if ended:
            return _refusal(
                f"{_method(request)} from '{upstream}' arrived after the call it belongs to "
                "ended (it timed out or was cancelled), so there is no one to ask"
            )
        return _refusal(
            f"{_method(request)} from '{upstream}' arrived outside any call, and over HTTP "
            "the router serves many clients: none is asked for another's call (roots are "
            "each client's own). Ask during a tool call, whose client then answers"
        )

    def _the_one_host(self, upstream: str, request: HostRequest) -> _Caller | types.ErrorData:
        hosts = list(self._hosts)
        if len(hosts) == 1:
            return _Caller(upstream, None, hosts[0], None)
        reason = "no client is connected" if not hosts else f"{len(hosts)} clients are connected"
        return _refusal(
            f"{_method(request)} from '{upstream}' arrived outside any call and {reason}, "
            "so there is no one client to ask"
        )

    async def ask(
        self,
        upstream: str,
        request: HostRequest,
        result_type: type[_R],
        limit: float,
        *,
        principal: str | None = None,
    ) -> _R | types.ErrorData:
        caller = self._caller(upstream, request, principal)
        if isinstance(caller, types.ErrorData):
            logger.warning("%s", caller.message)
            return caller
        missing = missing_capability(caller.connection.client_capabilities, request)
        if missing is not None:
            return _refusal(
                f"the client did not declare the {missing} capability, so it cannot answer "
                f"{_method(request)} from '{upstream}'"
            )
        if caller.held is not None:
            return await caller.held.ask(request, result_type)
        try:
            with anyio.fail_after(limit):
                session = caller.session
                if session is None or not session.can_send_request:
                    # outside any call, or its stream is gone: the connection's own channel
                    return await caller.connection.send_request(request, result_type=result_type)
                metadata = ServerMessageMetadata(related_request_id=caller.request_id)
                return await session.send_request(request, result_type, metadata=metadata)
        except NoBackChannelError:
            return _refusal(
                f"the client's connection cannot carry {_method(request)} from '{upstream}' "
                "(a 2026-07-28 or JSON-response connection has no channel for server requests)"
            )
        except MCPError as exc:  # the host's own answer: its code and message go back
            return types.ErrorData(code=exc.code, message=exc.message, data=exc.data)
        except TimeoutError:
            return _refusal(
                f"the client did not answer {_method(request)} from '{upstream}' within {limit:g}s",
                types.REQUEST_TIMEOUT,
            )
        except ValidationError as exc:
            return _refusal(
                f"the client's answer to {_method(request)} is invalid: {exc.error_count()} errors",
                types.INTERNAL_ERROR,
            )
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return _refusal(f"the client went away before answering {_method(request)}")


def _for(whose: str | None, principal: str | None) -> bool:
    """Whether a call for `whose` may be asked what `principal`'s connection asks (None: a
    connection every principal shares)."""
    return principal is None or whose == principal
