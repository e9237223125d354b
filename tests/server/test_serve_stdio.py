"""`mcp-router serve` over stdio in front of the example servers, with the real model.

One router child process (time, git, fetch from PyPI; everything, memory, filesystem from
npm) serves the SDK's `Client` for the whole module: routing a task in plain words, calling
through `call_tool` and directly, the query-scoped listing, and the upstreams' resources
and prompts.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio
import mcp_types as types
import pytest
from mcp import Client

from tests.support import serving
from tests.support.serving import (
    META_TOOLS,
    Installed,
    example_servers,
    first_text,
    raw_router,
    router_parameters,
    search_text,
    searched_names,
    until_indexed,
    write_config,
)

installed = serving.installed

pytestmark = [pytest.mark.model, pytest.mark.processes]

SERVERS = {"time", "git", "fetch", "everything", "memory", "filesystem"}


@pytest.fixture(scope="module")
async def client(
    installed: Installed, tmp_path_factory: pytest.TempPathFactory
) -> AsyncIterator[Client]:
    directory = tmp_path_factory.mktemp("examples")
    config = write_config(directory, example_servers(installed, directory), k=5)
    async with Client(router_parameters(config, bm25_only=False), mode="legacy") as session:
        # loading the model and embedding ~60 tools takes ~15 s on two cores
        with anyio.fail_after(90):
            await until_indexed(lambda: search_text(session))
        yield session


def query_meta(query: str, k: int | None = None) -> types.RequestParamsMeta:
    """The router's query-scoped listing, asked through `_meta` (SDK clients can send it)."""
    meta: dict[str, Any] = {"mcp-router/query": query}
    if k is not None:
        meta["mcp-router/k"] = k
    # RequestParamsMeta allows extra keys at runtime; mypy does not read `extra_items` yet
    return cast(types.RequestParamsMeta, meta)


async def test_search_tools_puts_get_current_time_first_for_what_time_is_it_in_tokyo(
    client: Client,
) -> None:
    with anyio.fail_after(10):
        result = await client.call_tool("search_tools", {"query": "what time is it in Tokyo"})

    names = searched_names(result)
    assert names[0] == "time__get_current_time", names
    assert len(names) == 5
    # the compact text carries the same ranking and each tool's parameters
    assert "1. time__get_current_time" in first_text(result)
    assert "timezone (string, required)" in first_text(result)


async def test_search_tools_says_when_no_tool_fits_and_names_the_nearest_servers(
    client: Client,
) -> None:
    with anyio.fail_after(10):
        weak = await client.call_tool("search_tools", {"query": "sing me a lullaby"})
        good = await client.call_tool("search_tools", {"query": "what time is it in Tokyo"})

    match = (weak.structured_content or {})["match"]
    assert match["fits"] is False and match["bestSimilarity"] < match["floor"]
    servers = [s["name"] for s in match["servers"]]
    assert servers and set(servers) <= SERVERS
    text = first_text(weak)
    assert "No tool matches this request well" in text and "in other words" in text
    assert all(name in text for name in servers[:3])
    assert len(searched_names(weak)) == 5  # the nearest candidates are still listed
    assert (good.structured_content or {})["match"]["fits"] is True
    assert "No tool matches" not in first_text(good)


async def test_call_tool_and_a_direct_call_return_the_time_servers_real_result(
    client: Client,
) -> None:
    arguments = {"timezone": "Asia/Tokyo"}
    with anyio.fail_after(10):
        through = await client.call_tool(
            "call_tool", {"name": "time__get_current_time", "arguments": arguments}
        )
        direct = await client.call_tool("time__get_current_time", arguments)

    for result in (through, direct):
        assert result.is_error is False
        assert json.loads(first_text(result))["timezone"] == "Asia/Tokyo"
        assert result.structured_content is not None
        assert result.structured_content["timezone"] == "Asia/Tokyo"
        assert result.structured_content["datetime"].endswith("+09:00")


async def test_an_upstream_error_result_passes_through_unchanged(client: Client) -> None:
    with anyio.fail_after(10):
        result = await client.call_tool("time__get_current_time", {"timezone": "Nowhere/Bogus"})

    assert result.is_error is True
    assert "Nowhere/Bogus" in first_text(result)


async def test_a_query_in_the_list_tools_meta_lists_exactly_k_tools_and_the_meta_tools(
    client: Client,
) -> None:
    query = "echo a message back"
    with anyio.fail_after(10):
        listing = await client.list_tools(meta=query_meta(query))
        three = await client.list_tools(meta=query_meta(query, k=3))
        search = await client.call_tool("search_tools", {"query": query})

    names = [tool.name for tool in listing.tools]
    assert names[-2:] == META_TOOLS
    assert names[:-2] == searched_names(search)
    assert len(names) == 5 + 2
    assert "everything__echo" in names
    listed_three = [tool.name for tool in three.tools]
    assert listed_three[-2:] == META_TOOLS and len(listed_three) == 3 + 2
    assert listed_three[0] == names[0]  # the best first; then no server past its share of k
    assert sum(name.startswith("everything__") for name in listed_three[:3]) <= 2
    assert all(tool.input_schema.get("type") == "object" for tool in listing.tools)


async def test_the_default_listing_is_identical_before_and_after_queries(client: Client) -> None:
    def as_json(listing: types.ListToolsResult) -> str:
        return listing.model_dump_json(by_alias=True, exclude_none=True)

    with anyio.fail_after(10):
        before = await client.list_tools()
        await client.list_tools(meta=query_meta("read a file"))
        await client.call_tool("search_tools", {"query": "commit my changes to git"})
        after = await client.list_tools()

    assert [tool.name for tool in before.tools] == META_TOOLS
    assert as_json(after) == as_json(before)


async def test_upstream_resources_are_listed_under_their_server_and_readable(
    client: Client,
) -> None:
    with anyio.fail_after(10):
        resources = (await client.list_resources()).resources
        templates = (await client.list_resource_templates()).resource_templates
        static = next(r for r in resources if r.name == "everything__architecture.md")
        read = await client.read_resource(str(static.uri))
        templated = await client.read_resource("demo://resource/dynamic/text/1")

    assert all(r.name.split("__")[0] in SERVERS for r in resources)
    assert "memory__knowledge-graph" in {r.name for r in resources}
    assert any(t.name.startswith("everything__") for t in templates)
    assert read.contents and str(read.contents[0].uri) == str(static.uri)
    assert isinstance(read.contents[0], types.TextResourceContents)
    assert read.contents[0].text
    assert templated.contents


async def test_upstream_prompts_are_listed_under_their_server_and_served(client: Client) -> None:
    with anyio.fail_after(10):
        prompts = (await client.list_prompts()).prompts
        prompt = await client.get_prompt("everything__args-prompt", {"city": "Tokyo"})

    names = {p.name for p in prompts}
    assert {"everything__simple-prompt", "everything__args-prompt", "fetch__fetch"} <= names
    assert all(name.split("__")[0] in SERVERS for name in names)
    content = prompt.messages[0].content
    assert isinstance(content, types.TextContent)
    assert "Tokyo" in content.text


async def test_progress_reaches_the_host_only_when_it_asks_for_it(
    installed: Installed, tmp_path: Path
) -> None:
    config = write_config(tmp_path, {"everything": installed.npm("server-everything", "stdio")})
    name = "everything__trigger-long-running-operation"
    arguments = {"duration": 0.2, "steps": 2}
    async with raw_router(config) as router:
        with anyio.fail_after(60):
            await router.initialize()
            await router.call("search_tools", {"query": "long running operation"})
            asked = await router.result(
                "tools/call",
                {"name": name, "arguments": arguments, "_meta": {"progressToken": "p-1"}},
            )
            progress = [n for n in router.notifications if n["method"] == "notifications/progress"]
            router.notifications.clear()
            silent = await router.call(name, arguments)
            unasked = [n for n in router.notifications if n["method"] == "notifications/progress"]
            await router.finish()
    assert asked["isError"] is False and silent["isError"] is False
    assert [(n["params"]["progressToken"], n["params"]["progress"]) for n in progress] == [
        ("p-1", 1),
        ("p-1", 2),
    ]
    assert unasked == []
