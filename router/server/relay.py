"""Upstream requests to the host: which host session gets them, and how.

An upstream shares one connection among every host session, and a server-to-client request
(sampling, elicitation, `roots/list`) does not name the call that caused it. So the relay
keeps, per upstream, the host requests now forwarded to it (`calling`), and picks:
- the caller in the current context first. The SDK asks from the calling task when a
  2026-07-28 upstream returns its questions in the call's result, and it hands on the
  sender's context when a streamable HTTP upstream asks on the call's own response stream:
  both are tied to their call exactly;
- else the one host session with a call in flight to that upstream (a 2025-11-25 upstream
  over stdio or SSE asks out of band); the request goes out on that call's stream
  (`related_request_id`), as if the upstream were the router itself;
- with calls from several sessions in flight there, no one can tell whose it is: the
  upstream gets an error rather than another user's answer;
- with no call in flight (an upstream asking `roots/list` after its start, or after a roots
  change), the one host session the router serves, if there is exactly one (stdio).
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
from typing import Any, TypeVar

import anyio
import mcp_types as types
from mcp.server.connection import Connection, allowed_log_levels
from mcp.server.context import ServerRequestContext
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError, NoBackChannelError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import ValidationError

from router.sdk.internals import connection_of
from router.server.held_calls import HeldCall
from router.upstream.host_requests import HostRequest

logger = logging.getLogger(__name__)

_R = TypeVar("_R", bound=types.Result)


@dataclass(eq=False)
class _Caller:
    """A host request being forwarded to `upstream`."""

    upstream: str
    session: ServerSession | None
    """The request's session; None for a request outside any call."""
    connection: Connection
    request_id: types.RequestId | None
    meta: Mapping[str, Any] | None = None
    delivering: int = 0
    """Log messages for this call being written to the host now."""
    held: HeldCall | None = None
    """A 2026-07-28 host's call held open: its questions wait for the host's retry."""
    delivered: anyio.Event = field(default_factory=anyio.Event)


_LOG_ORDER = ("debug", "info", "notice", "warning", "error", "critical", "alert", "emergency")
_NOTIFY_LIMIT = 10.0
"""Seconds a log message may wait to be written to its client before it is dropped."""

_current: ContextVar[_Caller | None] = ContextVar("mcp_router_relay_caller", default=None)


def _refusal(message: str, code: int = types.INVALID_REQUEST) -> types.ErrorData:
    return types.ErrorData(code=code, message=f"mcp-router: {message}")


def _method(request: HostRequest) -> str:
    return request.method


class HostRelay:
    """Routes each upstream's request to the host session that should answer it."""

    def __init__(self) -> None:
        self._calls: dict[str, list[_Caller]] = {}
        # Every handshake-era host connection seen: its own channel is what a request
        # outside any call goes out on. Weak, and holding nothing that refers back to it, so
        # a closed connection goes. (2026-07-28 connections, one a request, carry no requests.)
        self._hosts: weakref.WeakSet[Connection] = weakref.WeakSet()
        self._log_levels: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()

    def seen(self, ctx: ServerRequestContext[Any, Any]) -> bool:
        """Note the host session of a request; True the first time a host that lists
        roots is seen (its upstreams should then ask for them again)."""
        connection = connection_of(ctx.session)
        first = connection not in self._hosts
        self._note(connection)
        caps = ctx.session.client_capabilities
        return first and caps is not None and caps.roots is not None

    def _note(self, connection: Connection) -> None:
        if connection.protocol_version not in MODERN_PROTOCOL_VERSIONS:
            self._hosts.add(connection)

    @asynccontextmanager
    async def calling(
        self, ctx: ServerRequestContext[Any, Any], upstream: str, held: HeldCall | None = None
    ) -> AsyncIterator[None]:
        """While the host's request `ctx` is forwarded to `upstream`. On the way out it lets
        the call's log messages reach the host first: the SDK hands them over in tasks of
        their own, which may still be writing when the result arrives, and a message after
        the result would miss an HTTP call's stream."""
        connection = connection_of(ctx.session)
        caller = _Caller(upstream, ctx.session, connection, ctx.request_id, ctx.meta, held=held)
        self._note(connection)
        calls = self._calls.setdefault(upstream, [])
        calls.append(caller)
        token = _current.set(caller)
        try:
            yield
            if caller.delivering:
                with anyio.move_on_after(_NOTIFY_LIMIT):
                    await caller.delivered.wait()
        finally:
            _current.reset(token)
            calls.remove(caller)
            if not calls:
                del self._calls[upstream]

    def set_log_level(self, ctx: ServerRequestContext[Any, Any], level: str) -> None:
        """A host's `logging/setLevel` (handshake revisions): upstream log messages below it
        are not passed on to that host."""
        self._log_levels[connection_of(ctx.session)] = level

    async def log(self, upstream: str, params: types.LoggingMessageNotificationParams) -> None:
        """An upstream's log message goes to the host whose call it belongs to, on that
        call's stream, at or above the host's level; one that belongs to no call, or to
        one of several, stays in the router's log only."""
        current = _current.get()
        if current is not None and current.upstream == upstream:
            caller = current
        else:
            calls = {id(c.connection): c for c in self._calls.get(upstream, [])}
            if len(calls) != 1:
                return
            caller = next(iter(calls.values()))
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

    def _caller(self, upstream: str, request: HostRequest) -> _Caller | types.ErrorData:
        current = _current.get()
        if current is not None and current.upstream == upstream:
            return current
        calls = self._calls.get(upstream, [])
        connections = {id(c.connection): c for c in reversed(calls)}
        if len(connections) == 1:
            return next(iter(connections.values()))
        if len(connections) > 1:
            return _refusal(
                f"{_method(request)} from '{upstream}' cannot be relayed: calls from "
                f"{len(connections)} clients are in flight to it and the request does not "
                "say which one it belongs to. Retry when fewer calls run at once."
            )
        hosts = list(self._hosts)
        if len(hosts) == 1:
            return _Caller(upstream, None, hosts[0], None)
        reason = "no client is connected" if not hosts else f"{len(hosts)} clients are connected"
        return _refusal(
            f"{_method(request)} from '{upstream}' arrived outside any call and {reason}, "
            "so there is no one client to ask"
        )

    async def ask(
        self, upstream: str, request: HostRequest, result_type: type[_R], limit: float
    ) -> _R | types.ErrorData:
        caller = self._caller(upstream, request)
        if isinstance(caller, types.ErrorData):
            logger.warning("%s", caller.message)
            return caller
        missing = _missing_capability(caller.connection.client_capabilities, request)
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


def _missing_capability(caps: types.ClientCapabilities | None, request: HostRequest) -> str | None:
    """The capability the host would need for `request` and did not declare, if any."""
    if isinstance(request, types.CreateMessageRequest):
        sampling = caps.sampling if caps else None
        if sampling is None:
            return "sampling"
        if request.params.tools and sampling.tools is None:
            return "sampling.tools"
        return None
    if isinstance(request, types.ElicitRequest):
        elicitation = caps.elicitation if caps else None
        if elicitation is None:
            return "elicitation"
        if isinstance(request.params, types.ElicitRequestURLParams):
            return "elicitation.url" if elicitation.url is None else None
        # `elicitation: {}` means form mode, as does `form`; only `url` alone excludes it
        if elicitation.form is None and elicitation.url is not None:
            return "elicitation.form"
        return None
    return "roots" if caps is None or caps.roots is None else None
