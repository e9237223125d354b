"""The streamable-HTTP front's SSE streams open with a priming event (an id, empty data and a
`retry`), as the 2025-11-25 revision recommends, and a client that lost one resumes it with
`Last-Event-ID`; the event store that makes this work keeps each session's events apart,
bounded in bytes (the attacks over HTTP: tests/server/http/test_http_private_streams.py)."""

from __future__ import annotations

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.server.auth.middleware.auth_context import auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http import EventMessage, EventStore

from router.policy.profiles import Principal
from router.server.http.event_store import EVENT_OVERHEAD, RETRY_MS, BoundedEventStore
from tests.support.http_serving import MCP_ACCEPT, config, http_front, sse_events, until_indexed
from tests.support.serving import initialize_request
from tests.upstream.test_upstream_pool import script

INITIALIZE = initialize_request("raw-sse-test")


async def _first_data(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> str:
    """The first event with data on a resumed (long-lived) GET stream; then it is closed."""
    async with http.stream("GET", url, headers=headers) as stream:
        assert stream.status_code == 200
        async for line in stream.aiter_lines():
            if line.startswith("data:") and line[5:].strip():
                return line[5:].strip()
    raise AssertionError("the resumed stream ended without an event")


@pytest.mark.processes
async def test_a_post_stream_opens_with_a_priming_event_and_resumes_after_it() -> None:
    servers = {"scripted": script("scripted")}
    async with http_front(config(servers)) as front, httpx2.AsyncClient() as http:
        with anyio.fail_after(30):
            await until_indexed(front.state)
            opened = await http.post(front.mcp, json=INITIALIZE, headers=MCP_ACCEPT)
            session = {**MCP_ACCEPT, "mcp-session-id": opened.headers["mcp-session-id"]}
            await http.post(
                front.mcp,
                json={"jsonrpc": "2.0", "method": "notifications/initialized"},
                headers={**session, "mcp-protocol-version": "2025-11-25"},
            )
            listed = await http.post(
                front.mcp,
                json={"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}},
                headers={**session, "mcp-protocol-version": "2025-11-25"},
            )
            priming, answer = sse_events(listed.text)[:2]
            replayed = await _first_data(
                http,
                front.mcp,
                {**session, "mcp-protocol-version": "2025-11-25", "last-event-id": priming["id"]},
            )
    assert listed.headers["content-type"].startswith("text/event-stream")
    assert priming["id"] and priming["data"] == "" and priming["retry"] == str(RETRY_MS)
    assert '"id":2' in answer["data"].replace(" ", "")
    assert replayed == answer["data"]


def _note(size: int) -> types.JSONRPCNotification:
    """A notification whose JSON is `size` bytes and a little more."""
    return types.JSONRPCNotification(
        jsonrpc="2.0", method="notifications/message", params={"data": "x" * size}
    )


async def _replayed(events: EventStore, last_event_id: str) -> tuple[str | None, list[str]]:
    sent: list[str] = []

    async def send(event: EventMessage) -> None:
        assert event.event_id is not None
        sent.append(event.event_id)

    return await events.replay_events_after(last_event_id, send), sent


async def test_a_sessions_events_are_bounded_in_bytes_and_replayed_without_gaps() -> None:
    """One session's big events push out only its own oldest ones, never another
    session's; what a session keeps is its newest events, so a resume replays every later
    event of its stream or nothing at all; an event over the session's bound is not kept."""
    store = BoundedEventStore(session_bytes=10 * EVENT_OVERHEAD, total_bytes=100 * EVENT_OVERHEAD)
    loud = store.for_session("loud", owner="")
    quiet = store.for_session("quiet", owner="")
    quiet_first = await quiet.store_event("2", None)
    quiet_answer = await quiet.store_event("2", _note(10))
    loud_ids = [await loud.store_event("2", _note(EVENT_OVERHEAD)) for _ in range(20)]

    assert len(set(loud_ids)) == 20 and all(len(i) >= 22 for i in loud_ids)  # random ids
    assert store.replayable("loud", loud_ids[0], "") is False  # pushed out by its own
    stream, sent = await _replayed(loud, loud_ids[-3])
    assert stream == "2" and sent == loud_ids[-2:]
    assert await _replayed(quiet, quiet_first) == ("2", [quiet_answer])
    assert await _replayed(quiet, loud_ids[-3]) == (None, [])  # not quiet's event
    assert store.cost <= store.session_bytes + 2 * EVENT_OVERHEAD + 200

    await loud.store_event("2", _note(20 * EVENT_OVERHEAD))  # over the session's bound
    assert store.replayable("loud", loud_ids[-1], "") is False  # a resume would skip it
    assert store.replayable("quiet", quiet_first, "") is True


async def test_past_the_total_the_largest_sessions_oldest_events_go_first() -> None:
    store = BoundedEventStore(session_bytes=8 * EVENT_OVERHEAD, total_bytes=12 * EVENT_OVERHEAD)
    small = store.for_session("small", owner="")
    kept = await small.store_event("1", _note(10))
    floods = [store.for_session(f"flood-{n}", owner="") for n in range(3)]
    for _ in range(8):
        for flood in floods:
            await flood.store_event("1", _note(10))
    assert store.cost <= store.total_bytes
    assert store.replayable("small", kept, "") is True


async def test_a_replay_for_another_principal_or_after_the_session_ended_sends_nothing() -> None:
    store = BoundedEventStore()
    events = store.for_session("s", owner=Principal("alice", issuer="https://idp").key)
    first = await events.store_event("3", None)
    await events.store_event("3", _note(10))
    mallory = AccessToken(
        token="t", client_id="c", scopes=[], subject="mallory", claims={"iss": "https://idp"}
    )
    alice = mallory.model_copy(update={"subject": "alice"})

    async def replay_as(token: AccessToken) -> tuple[str | None, list[str]]:
        reset = auth_context_var.set(AuthenticatedUser(token))
        try:
            return await _replayed(events, first)
        finally:
            auth_context_var.reset(reset)

    assert await replay_as(mallory) == (None, [])
    assert (await replay_as(alice))[0] == "3"
    assert await _replayed(events, first) == (None, [])  # no principal: not alice
    assert store.sessions_of(Principal("alice", issuer="https://idp").key) == 1
    store.forget("s")
    assert await replay_as(alice) == (None, []) and store.cost == 0
    await events.store_event("3", _note(10))  # a late event of an ended session
    assert store.cost == 0 and store.sessions_of("") == 0
