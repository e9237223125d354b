"""How failures at the upstream boundary become the router's upstream errors.

What the SDK, pydantic and anyio raise while the router waits on an upstream is mapped once,
here, to the most specific `UpstreamError` (`router.core.errors`): `UpstreamTimeout` for no answer
in time, `UpstreamUnavailable` for a connection that is gone, `UpstreamProtocolError` for an
answer that is not valid MCP. An `MCPError` the upstream itself sent passes through with
its code kept. `describe` turns whatever ended a connection into the one line the log and
the status show.

Foreign text is redacted here, where it enters (`router.core.redaction`): the messages built from
an exception, the upstream's own error message and data, and `describe`'s line hold no
configured secret, no URL query or userinfo (httpx names the URL it failed on, and a query
string is where API keys live) and no bearer credential an upstream echoes back.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Callable
from typing import TypeVar

import anyio
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from router.core.errors import (
    SignInNeeded,
    UpstreamError,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from router.core.redaction import redact, redact_data

_T = TypeVar("_T")
_PROTOCOL_FAILURES = (MCPError, ValidationError, RuntimeError, UpstreamProtocolError)


async def send_mapped(
    upstream: str,
    what: str,
    send: Callable[[], Awaitable[_T]],
    *,
    limit: float,
    ended: anyio.Event,
    replaced: Callable[[], bool],
    clock: ProgressClock | None = None,
) -> _T:
    """Await `send()` within `limit` seconds; map its failures to `UpstreamError`s.

    `what` names the request in the messages; `ended` is the end of the connection the
    request went out on, and `replaced()` says whether the owner task has let go of that
    connection since. With a `clock`, each progress notification starts the `limit` again,
    up to the clock's total.
    """
    with anyio.CancelScope(deadline=anyio.current_time() + limit) as scope:
        if clock is not None:
            clock.start(scope, limit)
        try:
            return await send()
        except TimeoutError:
            raise UpstreamTimeout(upstream, f"{what}: timed out") from None
        except MCPError as exc:
            # The SDK synthesizes CONNECTION_CLOSED when the pipe ends; an upstream may also
            # send that code itself, so only a connection we saw end counts as "down".
            if exc.code == types.CONNECTION_CLOSED and (ended.is_set() or replaced()):
                raise UpstreamUnavailable(upstream, f"{what}: connection lost") from exc
            clean = redacted_error(exc)
            if clean is exc:
                raise
            raise clean from exc  # a traceback is redacted where it is logged
        except ValidationError as exc:
            raise UpstreamProtocolError(upstream, redact(f"{what}: invalid result: {exc}")) from exc
        except RuntimeError as exc:
            if replaced():
                raise UpstreamUnavailable(upstream, f"{what}: connection lost") from exc
            raise UpstreamProtocolError(upstream, redact(f"{what}: {exc}")) from exc
    if clock is not None and clock.progressed:
        raise UpstreamTimeout(upstream, clock.why(what))
    raise UpstreamTimeout(upstream, f"{what}: no answer within {limit:g}s")


def push_back(scope: anyio.CancelScope) -> Callable[[float], None]:
    """`extend(seconds)`: `scope`'s deadline no sooner than `seconds` from then (a person
    signing in during a connection attempt, which its connect timeout is not meant to cut)."""

    def extend(seconds: float) -> None:
        if scope.deadline != math.inf:
            scope.deadline = max(scope.deadline, anyio.current_time() + seconds)

    return extend


class ProgressClock:
    """A call's deadline that the upstream's progress pushes back: `limit` seconds after the
    latest notification, never past `total` seconds after the start. Wrap the call's
    progress callback with `callback`."""

    def __init__(self, total: float, forward: ProgressFnT | None = None) -> None:
        self.total = total
        self._forward = forward
        self._scope: anyio.CancelScope | None = None
        self._limit = 0.0
        self._started = 0.0
        self.progressed = False

    def start(self, scope: anyio.CancelScope, limit: float) -> None:
        self._scope, self._limit, self._started = scope, limit, anyio.current_time()

    async def callback(self, progress: float, total: float | None, message: str | None) -> None:
        if self._scope is not None:
            self.progressed = True
            now = anyio.current_time()
            self._scope.deadline = min(now + self._limit, self._started + self.total)
        if self._forward is not None:
            await self._forward(progress, total, message)

    def why(self, what: str) -> str:
        assert self._scope is not None
        if self._scope.deadline >= self._started + self.total:
            return f"{what}: still running after {self.total:g}s in all (timeouts.call_max)"
        return f"{what}: no answer or progress for {self._limit:g}s"


def redacted_error(error: MCPError) -> MCPError:
    """An upstream's JSON-RPC error with its message and data redacted, its code kept; the
    same error when there was nothing to redact. The URLs a URL-elicitation error asks the
    user to open keep their query (their `state`), only known secrets masked in them."""
    message, data = error.error.message, error.error.data
    urls = error.code != types.URL_ELICITATION_REQUIRED
    clean_message, clean_data = redact(message), redact_data(data, urls=urls)
    if clean_message == message and clean_data == data:
        return error
    return MCPError(error.code, clean_message, clean_data)


def connect_timeout(upstream: str, phase: str, limit: float) -> UpstreamTimeout:
    """No answer in `phase` (handshake, server/discover, listing) within the connect timeout."""
    return UpstreamTimeout(upstream, f"no answer ({phase}) within the {limit:g}s connect timeout")


def is_protocol_failure(error: BaseException) -> bool:
    """Whether a failed connect looks like the upstream not speaking the mode it was asked
    in (rather than a process or network failure)."""
    return isinstance(error, _PROTOCOL_FAILURES)


def sign_in_needed(error: BaseException) -> SignInNeeded | None:
    """The `SignInNeeded` that ended a connection, wherever the SDK's task groups and the
    httpx auth flow wrapped it."""
    seen: set[int] = set()
    pending: list[BaseException] = [error]
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        if isinstance(current, SignInNeeded):
            return current
        if isinstance(current, BaseExceptionGroup):
            pending.extend(current.exceptions)
        for linked in (current.__cause__, current.__context__):
            if linked is not None:
                pending.append(linked)
    return None


def describe(error: BaseException) -> str:
    """A one-line reason for the log and the status, redacted; unwraps single-error
    groups."""
    return redact(_describe(error))


def _describe(error: BaseException) -> str:
    needed = sign_in_needed(error)
    if needed is not None:
        return str(needed).split(": ", 1)[-1]
    while isinstance(error, BaseExceptionGroup) and len(error.exceptions) == 1:
        error = error.exceptions[0]
    if isinstance(error, UpstreamError):
        return str(error).split(": ", 1)[-1]
    if isinstance(error, FileNotFoundError):
        return f"cannot start: {error.strerror}: {error.filename}"
    if isinstance(error, MCPError):
        return f"error {error.code}: {error.error.message}"
    return f"{type(error).__name__}: {error}" if str(error) else type(error).__name__
