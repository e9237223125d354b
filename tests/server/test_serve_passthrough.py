"""Pass-through mode (`"router": {"mode": "all"}`) and `"prefix": false`, end to end through
`mcp-router serve` over stdio, and the HTTP front's streamable HTTP.

Two small upstreams: `growing` (the SDK's MCPServer; its `grow` tool adds a tool and
announces it) keeps its names, `scripted` (hand-written, handshake only) is prefixed.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage

from tests.support.http_serving import config as http_config
from tests.support.http_serving import http_front, streamable_client
from tests.support.serving import META_TOOLS, raw_router, router_parameters, script, write_config

pytestmark = pytest.mark.processes

SCRIPTED_TOOLS = ["env", "fail", "hang", "cancelled", "extra_1", "extra_2"]


@pytest.fixture
def passthrough_config(tmp_path: Path) -> Path:
    servers = {
        "growing": script("growing", prefix=False),
        "scripted": script("scripted", protocol="legacy"),
    }
    return write_config(tmp_path, servers, mode="all")


def first_text(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


@pytest.mark.parametrize("mode", ["legacy", "auto"])  # a handshake revision and 2026-07-28
async def test_mode_all_lists_every_tool_in_a_fixed_order_unprefixed_where_configured(
    passthrough_config: Path, mode: str
) -> None:
    async with Client(router_parameters(passthrough_config), mode=mode) as client:
        with anyio.fail_after(30):
            first = [tool.name for tool in (await client.list_tools(cache_mode="bypass")).tools]
            again = [tool.name for tool in (await client.list_tools(cache_mode="bypass")).tools]

    # upstreams in name order, each in its own order; no meta-tools: nothing to search for
    assert first == ["grow", *(f"scripted__{name}" for name in SCRIPTED_TOOLS)]
    assert again == first
    assert not set(META_TOOLS) & set(first)


async def test_an_unprefixed_tool_is_called_by_its_upstream_name(passthrough_config: Path) -> None:
    async with Client(router_parameters(passthrough_config), mode="legacy") as client:
        with anyio.fail_after(30):
            await client.list_tools()
            grown = await client.call_tool("grow", {})
            env = await client.call_tool("scripted__env", {})

    assert not grown.is_error and first_text(grown) == "added"
    assert not env.is_error


async def test_mode_all_announces_an_upstreams_new_tool_with_list_changed(
    passthrough_config: Path,
) -> None:
    changed = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    parameters = router_parameters(passthrough_config)
    async with Client(parameters, mode="legacy", message_handler=on_message) as client:
        with anyio.fail_after(30):
            capabilities = client.server_capabilities
            before = [tool.name for tool in (await client.list_tools()).tools]
            await client.call_tool("grow", {})  # the upstream adds `grown` and says so
            await changed.wait()
            after = [tool.name for tool in (await client.list_tools()).tools]

    assert capabilities.tools is not None and capabilities.tools.list_changed is True
    assert "grown" not in before
    assert after == ["grow", "grown", *(f"scripted__{name}" for name in SCRIPTED_TOOLS)]


async def test_two_unprefixed_servers_with_one_tool_name_log_the_clash_and_keep_both(
    tmp_path: Path,
) -> None:
    servers = {"beta": script("growing", prefix=False), "alpha": script("growing", prefix=False)}
    config = write_config(tmp_path, servers, mode="all")
    async with raw_router(config) as router:
        with anyio.fail_after(30):
            await router.initialize()
            listed = await router.result("tools/list")
            called = await router.call("beta__grow", {})

    assert [tool["name"] for tool in listed["tools"]] == ["grow", "beta__grow"]
    assert called["content"][0]["text"] == "added"
    log = (tmp_path / "router.log").read_text(encoding="utf-8")
    assert "tool name clash: servers 'alpha' and 'beta' both list a tool named 'grow'" in log
    assert "listed as 'beta__grow'" in log


async def test_mode_all_announces_list_changed_over_streamable_http(tmp_path: Path) -> None:
    changed = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    servers = {"growing": script("growing", prefix=False)}
    cfg = http_config(servers, mode="all", cache_dir=str(tmp_path / "cache"))
    async with (
        http_front(cfg) as front,
        streamable_client(front.mcp, mode="legacy", message_handler=on_message) as client,
    ):
        with anyio.fail_after(30):
            before = [tool.name for tool in (await client.list_tools()).tools]
            await client.call_tool("grow", {})
            await changed.wait()
            after = [tool.name for tool in (await client.list_tools()).tools]

    assert before == ["grow"]
    assert after == ["grow", "grown"]
