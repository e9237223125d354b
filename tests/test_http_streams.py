"""The streamable-HTTP front's SSE streams open with a priming event (an id, empty data and a
`retry`), as the 2025-11-25 revision recommends, and a client that lost one resumes it with
`Last-Event-ID`; the event store that makes this work stays bounded."""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import mcp_types as types

from router.server.http.event_store import RETRY_MS, BoundedEventStore
from tests.http_serving import MCP_ACCEPT, config, http_front, until_indexed
from tests.test_upstream_pool import script

INITIALIZE: dict[str, Any] = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "raw-sse-test", "version": "0"},
    },
}


def _events(text: str) -> list[dict[str, str]]:
    """The SSE events of a response body, each as its fields."""
    events = []
    for block in text.replace("\r\n", "\n").strip().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, _, value = line.partition(":")
            fields[name] = value.strip()
        events.append(fields)
    return events


async def _first_data(http: httpx2.AsyncClient, url: str, headers: dict[str, str]) -> str:
    """The first event with data on a resumed (long-lived) GET stream; then it is closed."""
    async with http.stream("GET", url, headers=headers) as stream:
        assert stream.status_code == 200
        async for line in stream.aiter_lines():
            if line.startswith("data:") and line[5:].strip():
                return line[5:].strip()
    raise AssertionError("the resumed stream ended without an event")


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
            priming, answer = _events(listed.text)[:2]
            replayed = await _first_data(
                http,
                front.mcp,
                {**session, "mcp-protocol-version": "2025-11-25", "last-event-id": priming["id"]},
            )
    assert listed.headers["content-type"].startswith("text/event-stream")
    assert priming["id"] and priming["data"] == "" and priming["retry"] == str(RETRY_MS)
    assert '"id":2' in answer["data"].replace(" ", "")
    assert replayed == answer["data"]


async def test_the_event_store_keeps_the_newest_events_and_never_another_streams() -> None:
    store = BoundedEventStore(limit=3)
    ping = types.JSONRPCNotification(jsonrpc="2.0", method="notifications/progress")
    first = await store.store_event("a", None)
    await store.store_event("b", ping)
    kept = await store.store_event("a", ping)
    await store.store_event("a", ping)
    await store.store_event("a", ping)  # pushes out `first` and b's event
    sent: list[str | None] = []

    async def send(event: Any) -> None:
        sent.append(event.event_id)

    assert await store.replay_events_after(first, send) is None  # too old: nothing to replay
    assert await store.replay_events_after(kept, send) == "a"
    assert len(sent) == 2 and kept not in sent
