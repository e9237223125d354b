"""Remote upstreams through the HTTP front: a server that goes away and comes back, and
header credentials from the environment.

npm server-everything runs in its streamable-HTTP or SSE mode behind a router (in-process);
a client stays connected to the router the whole time.
"""

from __future__ import annotations

import logging
import socket

import anyio
import httpx2
import pytest

from router.config import parse_config
from router.core.errors import UpstreamUnavailable
from router.server.http.auth.security import SecurityPolicy
from router.upstream import UpstreamPool, UpstreamState
from tests.support.http_serving import (
    MODE_PATHS,
    config,
    http_front,
    start_everything,
    stop,
    streamable_client,
    until_indexed,
)
from tests.support.ports import free_port
from tests.upstream import test_upstream_pool as upstream_tests
from tests.upstream.test_upstream_pool import Installed, first_text

pytestmark = pytest.mark.processes

installed = upstream_tests.installed


@pytest.mark.parametrize("mode", ["streamableHttp", "sse"])
async def test_a_remote_upstream_that_goes_down_fails_fast_and_is_reconnected(
    installed: Installed, mode: str
) -> None:
    port = free_port()
    server = await start_everything(installed, mode, port)
    remote = {
        "url": f"http://127.0.0.1:{port}{MODE_PATHS[mode]}",
        "timeouts": {"ping": 0.3},  # an idle streamable-HTTP link notices nothing without it
    }
    cfg = config({"remote": remote, "time": upstream_tests.time_server(installed)})
    try:
        async with http_front(cfg) as front, streamable_client(front.mcp, mode="legacy") as client:
            upstream = front.state.pool.upstream("remote")
            with anyio.fail_after(30):
                await until_indexed(front.state)
                before = await client.call_tool("remote__echo", {"message": "before"})
                await stop(server)
                await upstream.wait_for(UpstreamState.UNHEALTHY)
                began = anyio.current_time()
                down = await client.call_tool("remote__echo", {"message": "while down"})
                took = anyio.current_time() - began
                other = await client.call_tool("time__get_current_time", {"timezone": "UTC"})
                async with httpx2.AsyncClient(base_url=front.url) as http:
                    catalog = (await http.get("/v1/tools")).json()
                server = await start_everything(installed, mode, port)
                await upstream.wait_for(UpstreamState.HEALTHY)
                after = await client.call_tool("remote__echo", {"message": "after"})
    finally:
        await stop(server)

    assert first_text(before) == "Echo: before"
    assert down.is_error is True and took < 1.0
    assert first_text(down).startswith("upstream 'remote': down (")
    assert other.is_error is False
    health = {u["name"]: u for u in catalog["upstreams"]}["remote"]
    assert health["state"] == "unhealthy" and health["last_error"]
    echo = next(t for t in catalog["tools"] if t["name"] == "remote__echo")
    assert echo["healthy"] is False  # still listed while down, marked as such
    assert first_text(after) == "Echo: after"
    assert upstream.status.attempts >= 2


@pytest.mark.parametrize("path", ["/mcp", "/sse"])
async def test_a_remote_upstream_that_never_answers_times_out_and_is_reported(path: str) -> None:
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen()  # connections queue; nothing ever answers them
        port = silent.getsockname()[1]
        remote = {"url": f"http://127.0.0.1:{port}{path}", "timeouts": {"connect": 1}}
        async with UpstreamPool(config({"remote": remote})) as pool:
            with anyio.fail_after(10):
                status = await pool.upstream("remote").wait_settled()
                with pytest.raises(UpstreamUnavailable) as down:
                    await pool.call_tool("remote", "echo", {"message": "anyone?"})

    assert status.state is UpstreamState.UNHEALTHY
    assert status.last_error == "no answer (handshake) within the 1s connect timeout"
    assert "down (no answer" in str(down.value)


async def test_remote_headers_come_from_the_environment_and_never_reach_the_log(
    installed: Installed, caplog: pytest.LogCaptureFixture
) -> None:
    token = "remote-secret-5678"
    servers = {"time": upstream_tests.time_server(installed)}
    caplog.set_level(logging.DEBUG)
    async with http_front(config(servers), SecurityPolicy(token=token)) as front:
        entry = {"url": front.mcp, "headers": {"Authorization": "Bearer ${ROUTER_UPSTREAM_TOKEN}"}}
        good = parse_config(
            {"mcpServers": {"front": entry}}, environ={"ROUTER_UPSTREAM_TOKEN": token}
        )
        bad = parse_config(
            {"mcpServers": {"front": entry}}, environ={"ROUTER_UPSTREAM_TOKEN": "wrong-9999"}
        )
        with anyio.fail_after(30):
            await until_indexed(front.state)
            async with UpstreamPool(good) as pool:
                status = await pool.upstream("front").wait_for(UpstreamState.HEALTHY)
                found = await pool.call_tool("front", "search_tools", {"query": "time"})
            async with UpstreamPool(bad) as pool:
                refused = await pool.upstream("front").wait_for(UpstreamState.UNHEALTHY)

    assert status.tool_count == 2  # the front's meta-tools
    assert "time__get_current_time" in first_text(found)
    assert refused.last_error == (
        "error -32600: missing or wrong bearer token (Authorization: Bearer ...)"
    )
    assert token not in repr(good) and "wrong-9999" not in repr(bad)
    assert token not in caplog.text and "wrong-9999" not in caplog.text
