"""What the router relays besides results, over stdio and streamable HTTP: an upstream's
progress goes to the host that asked for it, under the host's own token, and a host that
cancels a call cancels the upstream's handler.

The upstream is `tests/upstreams/relay.py` (the mcp SDK's server): `steps` reports progress,
`block` runs until cancelled, `started` and `outcome` say, from inside that upstream process,
whether `block` is running and whether it was cancelled. The router is BM25 only (ranking is
not what these tests are about): a child process over stdio, in-process on uvicorn over HTTP.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client

from tests.support.http_serving import (
    config,
    http_front,
    open_session,
    sse_data,
    streamable_client,
    until_indexed,
)
from tests.support.serving import RawRouter, raw_router, router_parameters, write_config
from tests.upstream.test_upstream_pool import first_text, script

pytestmark = pytest.mark.processes

RELAY = {"relay": script("relay")}
PROGRESS = "notifications/progress"
ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}
"""The protocol revision the SDK client negotiates with the router in each mode."""
STEPS = [(1.0, 3.0, "step 1"), (2.0, 3.0, "step 2"), (3.0, 3.0, "step 3")]


def relayed(notifications: list[dict[str, Any]]) -> list[tuple[Any, float, float, str]]:
    """The progress notifications among `notifications`: (token, progress, total, message)."""
    return [
        (p["progressToken"], p["progress"], p["total"], p["message"])
        for n in notifications
        if n.get("method") == PROGRESS
        for p in [n["params"]]
    ]


def tagged(token: object) -> list[tuple[Any, float, float, str]]:
    return [(token, *step) for step in STEPS]


def text_of(result: dict[str, Any]) -> str:
    text: str = result["content"][0]["text"]
    return text


@asynccontextmanager
async def stdio_router(tmp_path: Path) -> AsyncIterator[RawRouter]:
    async with raw_router(write_config(tmp_path, RELAY)) as router:
        with anyio.fail_after(30):
            await router.initialize()
        yield router


# -- progress ---------------------------------------------------------------------------------


async def test_progress_is_relayed_with_the_hosts_token_over_stdio(tmp_path: Path) -> None:
    steps = {"name": "relay__steps", "arguments": {"count": 3}}
    async with stdio_router(tmp_path) as router:
        with anyio.fail_after(30):
            await router.result("tools/call", {**steps, "_meta": {"progressToken": "host-7"}})
            direct = list(router.notifications)
            router.notifications.clear()
            routed_call = {"name": "call_tool", "arguments": steps, "_meta": {"progressToken": 41}}
            await router.result("tools/call", routed_call)
            routed = list(router.notifications)
            router.notifications.clear()
            unasked = await router.result("tools/call", steps)
            lines = await router.finish()  # everything it wrote to stdout

    assert relayed(direct) == tagged("host-7")
    assert relayed(routed) == tagged(41)
    assert text_of(unasked) == "3 steps"
    # No progress for the call that did not ask, neither before its answer nor after it.
    assert relayed([json.loads(line) for line in lines]) == tagged("host-7") + tagged(41)


async def test_progress_is_relayed_with_the_hosts_token_over_streamable_http() -> None:
    """A 2025-06-18 session: the progress comes on the stream that answers the POST."""
    steps = {"name": "relay__steps", "arguments": {"count": 3}}

    def call(request_id: int, params: dict[str, Any]) -> dict[str, Any]:
        return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}

    async with http_front(config(RELAY)) as front, httpx2.AsyncClient() as http:
        with anyio.fail_after(30):
            await until_indexed(front.state)
            session = await open_session(http, front.mcp)
            asked = call(2, {**steps, "_meta": {"progressToken": "host-7"}})
            direct = await http.post(front.mcp, json=asked, headers=session)
            routed_call = {"name": "call_tool", "arguments": steps, "_meta": {"progressToken": 41}}
            routed = await http.post(front.mcp, json=call(3, routed_call), headers=session)
            unasked = await http.post(front.mcp, json=call(4, steps), headers=session)

    for answer in (direct, routed, unasked):
        assert answer.status_code == 200, answer.text
    assert relayed(sse_data(direct.text)) == tagged("host-7")
    assert relayed(sse_data(routed.text)) == tagged(41)
    plain = sse_data(unasked.text)
    assert [m.get("id") for m in plain] == [4]  # the answer, and no progress before it
    assert text_of(plain[0]["result"]) == "3 steps"


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_sdk_host_gets_the_upstreams_progress(
    tmp_path: Path, transport: str, mode: str
) -> None:
    """The SDK client of both eras (2025-11-25 and 2026-07-28), on both transports."""
    seen: list[tuple[float, float | None, str | None]] = []

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, total, message))

    with anyio.fail_after(60):
        async with sdk_host(tmp_path, transport, mode) as client:
            result = await client.call_tool(
                "relay__steps", {"count": 3}, progress_callback=on_progress
            )

    assert first_text(result) == "3 steps"
    assert seen == STEPS


# -- cancellation -------------------------------------------------------------------------


async def test_a_host_cancelling_a_call_over_stdio_cancels_the_upstream_handler(
    tmp_path: Path,
) -> None:
    """The host sends `notifications/cancelled` for its in-flight `tools/call`."""
    block = {"name": "relay__block", "arguments": {"tag": "one"}}
    async with stdio_router(tmp_path) as router:
        with anyio.fail_after(30):
            await router.send(
                {"jsonrpc": "2.0", "id": "blocked", "method": "tools/call", "params": block}
            )
            running = await router.call("relay__started", {"tag": "one"})
            cancel = {"requestId": "blocked", "reason": "the host gave up"}
            await router.send(
                {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": cancel}
            )
            outcome = await router.call("relay__outcome", {"tag": "one"})
            after = await router.call("relay__echo", {"text": "still here"})
            lines = await router.finish()

    assert text_of(running) == "started"
    assert text_of(outcome) == "cancelled"  # said by the upstream process that ran `block`
    assert text_of(after) == "still here"
    assert not [line for line in lines if b'"blocked"' in line]  # a cancelled call gets no answer


@pytest.mark.parametrize("mode", ["legacy", "auto"])
@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_an_sdk_host_cancelling_a_call_cancels_the_upstream_handler(
    tmp_path: Path, transport: str, mode: str
) -> None:
    """Cancelling the scope around `call_tool`: a 2025-11-25 client sends
    `notifications/cancelled`; a 2026-07-28 client over HTTP drops the request's stream."""

    async def call_block(client: Client, scope: anyio.CancelScope) -> None:
        with scope:
            await client.call_tool("relay__block", {"tag": "one"})

    with anyio.fail_after(60):
        async with sdk_host(tmp_path, transport, mode) as client:
            async with anyio.create_task_group() as group:  # its end waits for the cancel
                scope = anyio.CancelScope()
                group.start_soon(call_block, client, scope)
                running = await client.call_tool("relay__started", {"tag": "one"})
                scope.cancel()
            outcome = await client.call_tool("relay__outcome", {"tag": "one"})
            after = await client.call_tool("relay__echo", {"text": "still here"})

    assert first_text(running) == "started"
    assert first_text(outcome) == "cancelled"  # said by the upstream process that ran `block`
    assert first_text(after) == "still here"


@asynccontextmanager
async def sdk_host(tmp_path: Path, transport: str, mode: str) -> AsyncIterator[Client]:
    """The SDK client in `mode` on a router in front of the relay upstream (a call made
    while that upstream starts waits for it). Bound it with `anyio.fail_after` around."""
    if transport == "stdio":
        parameters = router_parameters(write_config(tmp_path, RELAY))
        async with Client(parameters, mode=mode) as client:
            assert client.protocol_version == ERAS[mode]
            yield client
        return
    async with (
        http_front(config(RELAY)) as front,
        streamable_client(front.mcp, mode=mode) as client,
    ):
        assert client.protocol_version == ERAS[mode]
        yield client
