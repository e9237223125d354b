"""The relay never guesses across users: what an upstream asks reaches no session but its own.

A 2025-11-25 upstream over stdio asks out of band: its sampling, elicitation and `roots/list`
name no call. Two ways such a question used to reach another user, tried as an attacker
would, through an HTTP front with real sessions (the SDK client) and real upstream processes:
- session A's call times out (or A cancels it) while the upstream works on; session B then
  calls the same upstream, and the upstream's late question, meant for A, comes while B's is
  the only call in flight (`tests/upstreams/late_asking.py`: it asks once `conclude` runs);
- one session is connected and no call is in flight when the upstream asks for `roots/list`
  on its own (after the session's roots change): that session's roots used to go to it
  (`tests/upstreams/asking.py`).
Either way the upstream gets the router's error, and no host is asked. In process, with the
relay alone: what it remembers of ended calls expires and stays bounded, however many sessions
end calls.
"""

from __future__ import annotations

import gc
import logging
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.server.connection import Connection
from mcp.server.session import ServerSession
from pydantic import FileUrl

from router.core.errors import UpstreamTimeout
from router.server.calls.relay import LINGER, LINGER_LIMIT, HostRelay
from tests.support.http_serving import Front, config, http_front, streamable_client, until_indexed
from tests.upstream.test_upstream_pool import first_text, script

CALL_TIMEOUT = 2.0
"""The late upstream's call timeout: A's call ends after it, B's round trip fits well in it."""
LATE = {"late": script("late_asking", protocol="legacy", timeouts={"call": CALL_TIMEOUT})}
ASKING = {"asking": script("asking", protocol="legacy")}
REFUSED_CODE = types.INVALID_REQUEST


class Host:
    """One user's host: every question the router put to it."""

    def __init__(self, name: str) -> None:
        self.roots = [types.Root(uri=FileUrl(f"file:///home/{name}/secret"), name=name)]
        self.asked: list[str] = []
        self.progressed = anyio.Event()

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(f"elicitation: {params.message}")
        return types.ElicitResult(action="accept", content={"answer": "yes"})

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        self.asked.append("roots/list")
        return types.ListRootsResult(roots=self.roots)

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progressed.set()

    def callbacks(self) -> dict[str, Any]:
        return {"elicitation_callback": self.elicitation, "list_roots_callback": self.list_roots}


@asynccontextmanager
async def session(front: Front, transport: str, host: Host) -> AsyncIterator[Client]:
    """A 2025-11-25 session of `host` on the front (streamable HTTP or legacy HTTP+SSE)."""
    if transport == "sse":
        async with Client(sse_client(front.sse), mode="legacy", **host.callbacks()) as client:
            yield client
        return
    async with streamable_client(front.mcp, mode="legacy", **host.callbacks()) as client:
        yield client


@contextmanager
def logged(logger: str, needle: str) -> Iterator[anyio.Event]:
    """An event set when `logger` records a line with `needle`: the router's log is how the
    test knows a request was refused while nothing else is in flight."""
    seen = anyio.Event()

    class _Watch(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if needle in record.getMessage():
                seen.set()

    handler = _Watch(logging.WARNING)
    watched = logging.getLogger(logger)
    watched.addHandler(handler)
    try:
        yield seen
    finally:
        watched.removeHandler(handler)


@pytest.mark.processes
@pytest.mark.parametrize("ended", ["timed out", "cancelled"])
async def test_a_late_question_for_one_session_never_reaches_the_next(ended: str) -> None:
    """A's call ends without its answer; B's call to the same upstream is then the only one
    in flight there when the upstream asks A's question. B is not asked; the upstream hears
    the router's refusal (and, for the record, A is not asked either: its call is over)."""
    alice, bob = Host("alice"), Host("bob")
    with anyio.fail_after(60):
        async with http_front(config(LATE)) as front:
            await until_indexed(front.state)
            async with session(front, "http", alice) as a, session(front, "http", bob) as b:
                if ended == "timed out":
                    gave_up = await a.call_tool("late__deliberate", {"topic": "alice's plans"})
                    assert gave_up.is_error
                    # "no answer within 2s", or "no answer or progress for 2s" once the
                    # upstream reported progress (which restarts the call timeout)
                    assert "no answer" in first_text(gave_up)
                    assert f"{CALL_TIMEOUT:g}s" in first_text(gave_up)
                else:
                    async with anyio.create_task_group() as group:
                        scope = anyio.CancelScope()

                        async def deliberate() -> None:
                            with scope:
                                await a.call_tool(
                                    "late__deliberate",
                                    {"topic": "alice's plans"},
                                    progress_callback=alice.progress,
                                )

                        group.start_soon(deliberate)
                        await alice.progressed.wait()  # the upstream is working on it
                        scope.cancel()
                concluded = await b.call_tool("late__conclude", {})

    assert bob.asked == [] and alice.asked == []
    outcome = first_text(concluded)
    assert outcome.startswith(f"error {REFUSED_CODE}: mcp-router: elicitation/create"), outcome
    assert f"ended there within {LINGER:g}s" in outcome


@pytest.mark.processes
@pytest.mark.parametrize("transport", ["http", "sse"])
async def test_an_unprompted_roots_request_over_http_gets_no_sessions_roots(
    transport: str,
) -> None:
    """The one session connected, no call in flight: the upstream asks for `roots/list` on
    its own (its answer to the session's `roots/list_changed`). Over HTTP being the only
    session connected says nothing about whose roots the upstream wants: it gets an error
    naming why, and the session is never asked."""
    alice = Host("alice")
    needle = "roots/list from 'asking' arrived outside any call"
    with anyio.fail_after(60):
        async with http_front(config(ASKING)) as front:
            await until_indexed(front.state)
            async with session(front, transport, alice) as a:
                with logged("router.server.calls.relay", needle) as refused:
                    await a.session.send_notification(types.RootsListChangedNotification())
                    with anyio.fail_after(10):
                        await refused.wait()
                await a.call_tool("asking__roots_changes", {"at_least": 1})  # it has heard
                heard = await a.call_tool("asking__roots_heard", {})

    assert alice.asked == []
    assert first_text(heard).startswith(
        f"error {REFUSED_CODE}: mcp-router: {needle}, and over HTTP"
    )


# -- the relay's memory of ended calls, in process ---------------------------------------------


class _NoChannel:
    """A host connection's channel that has nothing to carry (these tests never send)."""

    can_send_request = False


def _request() -> Any:
    """What `HostRelay.calling` reads of a request context: a 2025-11-25 session's request,
    on a connection of its own (no capabilities declared, so a host picked says so)."""
    connection = Connection.for_loop(_NoChannel(), protocol_version_hint="2025-11-25")  # type: ignore[arg-type]
    session = ServerSession(_NoChannel(), connection)  # type: ignore[arg-type]
    return type("Request", (), {"session": session, "request_id": 1, "meta": None})()


async def _timed_out(relay: HostRelay, request: Any) -> None:
    with pytest.raises(UpstreamTimeout):
        async with relay.calling(request, "late"):
            raise UpstreamTimeout("late", "no answer")


async def _asked_during(relay: HostRelay, request: Any) -> str:
    """The relay's answer to a `roots/list` from `late` while `request`'s call is in flight
    there, asked outside that call's context (as an upstream's receive loop asks)."""
    messages: list[str] = []
    inside, done = anyio.Event(), anyio.Event()

    async def ask() -> None:
        await inside.wait()
        answer = await relay.ask("late", types.ListRootsRequest(), types.ListRootsResult, 1.0)
        assert isinstance(answer, types.ErrorData)
        messages.append(answer.message)
        done.set()

    with anyio.fail_after(5):
        async with anyio.create_task_group() as group:
            group.start_soon(ask)  # before the call: its task has no call's context
            async with relay.calling(request, "late"):
                inside.set()
                await done.wait()
    return messages[0]


async def test_an_ended_call_counts_until_its_grace_expires() -> None:
    """While the grace lasts, B's call in flight is one of two candidates; once it is over
    (a grace of 0 here), B's call is the one (which then says B cannot list roots)."""
    bob = _request()
    for linger, refused in ((LINGER, True), (0.0, False)):
        relay = HostRelay(linger=linger)
        await _timed_out(relay, _request())
        message = await _asked_during(relay, bob)
        assert ("calls from 2 clients" in message) is refused, message
        assert ("did not declare the roots capability" in message) is not refused, message


async def test_what_the_relay_keeps_of_ended_calls_is_bounded() -> None:
    """More sessions than `LINGER_LIMIT` end calls: their connections are let go, and the
    upstream still counts as asked by several (B is not picked)."""
    relay = HostRelay()
    ended: list[weakref.ref[Connection]] = []
    for _ in range(LINGER_LIMIT * 2):
        request = _request()
        ended.append(weakref.ref(request.session._connection))
        await _timed_out(relay, request)
        del request
    gc.collect()
    assert sum(ref() is not None for ref in ended) <= LINGER_LIMIT
    message = await _asked_during(relay, _request())
    assert "calls from several clients" in message, message
