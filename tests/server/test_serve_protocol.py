"""`mcp-router serve` on the wire: the handshake of every protocol revision, JSON-RPC error
codes, the SEP-1821 `query` in `tools/list`, and a default listing that is the same bytes
in every session.

The router runs as a child process (`python -m router serve --bm25-only`: ranking is not
under test here) in front of real upstreams; clients are raw JSON-RPC lines and the SDK's
`Client` over stdio.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.support import serving
from tests.support.serving import (
    HANDSHAKE_VERSIONS,
    META_TOOLS,
    Installed,
    RawRouter,
    raw_router,
    router_parameters,
    script,
    until_indexed,
    write_config,
)

pytestmark = pytest.mark.processes

installed = serving.installed

K = 3


def quick_servers(installed: Installed) -> dict[str, dict[str, Any]]:
    """One PyPI and one npm server: fast to start, enough to route between."""
    return {
        "time": installed.pypi("time", "mcp-server-time"),
        "everything": installed.npm("server-everything", "stdio"),
    }


@pytest.fixture(scope="module")
def pinned_config(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("protocol")
    servers = {**quick_servers(installed), "scripted": script("scripted", protocol="legacy")}
    return write_config(directory, servers, k=K, pin=["time/get_current_time"])


@pytest.fixture(scope="module")
async def router(pinned_config: Path) -> AsyncIterator[RawRouter]:
    """One router session shared by the tests that leave its state as they found it."""
    async with raw_router(pinned_config) as session:
        with anyio.fail_after(30):
            await session.initialize()
            await until_indexed(session.search_text)
        yield session


@pytest.fixture(scope="module")
def handshake_config(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("handshake")
    return write_config(directory, {"everything": installed.npm("server-everything", "stdio")})


def tool_names(listing: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in listing["tools"]]


@pytest.mark.parametrize("version", HANDSHAKE_VERSIONS)
async def test_the_initialize_handshake_works_at_each_handshake_revision(
    handshake_config: Path, version: str
) -> None:
    async with raw_router(handshake_config) as session:
        with anyio.fail_after(20):
            result = await session.initialize(version)
            listing = await session.result("tools/list")
            pong = await session.result("ping")

    assert result["protocolVersion"] == version
    assert result["serverInfo"]["name"] == "mcp-router"
    assert "search_tools" in result["instructions"]
    assert set(result["capabilities"]) >= {"tools", "resources", "prompts"}
    assert tool_names(listing) == META_TOOLS
    assert pong == {}


async def test_the_sdk_client_connects_with_the_legacy_handshake(handshake_config: Path) -> None:
    with anyio.fail_after(20):
        async with Client(router_parameters(handshake_config), mode="legacy") as client:
            version, server = client.protocol_version, client.server_info
            listing = await client.list_tools()

    assert version == HANDSHAKE_VERSIONS[-1]
    assert server is not None and server.name == "mcp-router"
    assert [tool.name for tool in listing.tools] == META_TOOLS


@pytest.mark.parametrize("mode", ["auto", "2026-07-28"])
async def test_the_sdk_client_speaks_2026_07_28_with_the_router(
    handshake_config: Path, mode: str
) -> None:
    with anyio.fail_after(20):
        async with Client(router_parameters(handshake_config), mode=mode) as client:
            version = client.protocol_version
            listing = await client.list_tools()
            again = await client.list_tools(cache_mode="bypass")

    assert version == "2026-07-28"
    assert [tool.name for tool in listing.tools] == META_TOOLS
    assert again.tools == listing.tools


async def test_the_default_listing_is_the_same_bytes_in_two_sessions_and_after_queries(
    router: RawRouter, pinned_config: Path
) -> None:
    async def default_listing(session: RawRouter) -> bytes:
        await session.send({"jsonrpc": "2.0", "id": "listing", "method": "tools/list"})
        _, line = await session.answer("listing")
        return line

    async with raw_router(pinned_config) as second:
        with anyio.fail_after(30):
            await second.initialize("2025-06-18")
            await until_indexed(second.search_text)
            first_bytes = await default_listing(router)
            second_bytes = await default_listing(second)
            await router.result("tools/list", {"query": "echo a message"})
            await router.call("search_tools", {"query": "add two numbers"})
            await router.result("tools/list", {"_meta": {"mcp-router/query": "current time"}})
            after_queries = await default_listing(router)

    listing = json.loads(first_bytes)["result"]
    assert tool_names(listing) == ["time__get_current_time", *META_TOOLS]
    assert second_bytes == first_bytes
    assert after_queries == first_bytes


async def test_a_query_in_tools_list_params_lists_exactly_k_tools_and_the_meta_tools(
    router: RawRouter,
) -> None:
    # BM25 alone lists only tools that share a word with the query: this one matches > K.
    query = "return a message"
    with anyio.fail_after(10):
        listing = await router.result("tools/list", {"query": query})
        fewer = await router.result("tools/list", {"query": query, "k": 2})
        search = await router.call("search_tools", {"query": query})

    names = tool_names(listing)
    searched = [tool["name"] for tool in search["structuredContent"]["tools"]]
    # the pinned tool is always listed; the query adds its top k
    assert names[0] == "time__get_current_time"
    assert names[-2:] == META_TOOLS
    assert len(set(names[1:-2])) == K
    assert "everything__echo" in names
    assert names[1:-2] == [name for name in searched if name != names[0]][:K]
    assert len(tool_names(fewer)) == 1 + 2 + 2
    assert all(tool["inputSchema"]["type"] == "object" for tool in listing["tools"])


async def test_a_line_that_is_not_json_gets_a_parse_error(router: RawRouter) -> None:
    with anyio.fail_after(10):
        await router.send_line(b'{"jsonrpc": "2.0", "id": 1, "method": ')
        error = await router.receive()
        still_serving = await router.result("ping")

    assert error["id"] is None
    assert error["error"]["code"] == types.PARSE_ERROR
    assert still_serving == {}


@pytest.mark.parametrize(
    ("line", "request_id"),
    [
        (b'{"jsonrpc": "2.0", "id": 7}', 7),
        (b'{"jsonrpc": "1.0", "id": "old", "method": "ping"}', "old"),
        (b'{"jsonrpc": "2.0", "id": 8, "method": "tools/list", "params": "all"}', 8),
        (b"[1, 2, 3]", None),
        (b'"ping"', None),
    ],
)
async def test_json_that_is_not_a_valid_request_gets_invalid_request(
    router: RawRouter, line: bytes, request_id: object
) -> None:
    with anyio.fail_after(10):
        await router.send_line(line)
        error = await router.receive()

    assert error["id"] == request_id
    assert error["error"]["code"] == types.INVALID_REQUEST


async def test_an_unknown_method_gets_method_not_found(router: RawRouter) -> None:
    with anyio.fail_after(10):
        response = await router.request("tools/explode", {})

    assert response["error"]["code"] == types.METHOD_NOT_FOUND


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("time__get_current_time", {}, "timezone"),
        ("time__get_current_time", {"timezone": 9}, "timezone"),
        ("everything__get-sum", {"a": 1, "b": "two"}, "b"),
        ("call_tool", {"name": "time__get_current_time", "arguments": {"zone": "UTC"}}, "timezone"),
        ("call_tool", {"arguments": {}}, "name"),
        ("search_tools", {"k": 3}, "query"),
    ],
)
async def test_bad_arguments_get_invalid_params_naming_the_field(
    router: RawRouter, name: str, arguments: dict[str, Any], field: str
) -> None:
    with anyio.fail_after(10):
        response = await router.request("tools/call", {"name": name, "arguments": arguments})

    assert response["error"]["code"] == types.INVALID_PARAMS
    assert f"'{field}'" in response["error"]["message"]


async def test_an_unknown_tool_gets_invalid_params_with_the_closest_names(
    router: RawRouter,
) -> None:
    with anyio.fail_after(10):
        response = await router.request(
            "tools/call", {"name": "time__get_curent_time", "arguments": {"timezone": "UTC"}}
        )

    assert response["error"]["code"] == types.INVALID_PARAMS
    assert "time__get_current_time" in response["error"]["data"]["suggestions"]


async def test_an_upstream_json_rpc_error_comes_back_with_its_code(router: RawRouter) -> None:
    with anyio.fail_after(10):
        response = await router.request("tools/call", {"name": "scripted__fail", "arguments": {}})

    assert response["error"]["code"] == -32042  # the scripted upstream's own code
    assert response["error"]["message"] == "scripted failure"
