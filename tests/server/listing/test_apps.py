"""MCP Apps through the router (`router.core.apps`), with real processes: two SDK-written
Apps upstreams (`tests/upstreams/charts.py`, `tests/upstreams/maps.py`) that both serve
their app at `ui://widget/app.html`, with their own HTML, CSP and permissions, and `charts`
also a tool only its app calls (`visibility: ["app"]`). The hosts are SDK clients over stdio,
one declaring the `io.modelcontextprotocol/ui` extension and one not.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.extension import advertise
from mcp.shared.exceptions import MCPError

from tests.support.serving import (
    raw_router,
    router_parameters,
    script,
    search_text,
    until_indexed,
    write_config,
)

pytestmark = pytest.mark.processes

LIMIT = 60
WIDGET = "ui://widget/app.html"
MAPS_WIDGET = "ui://mcp-router/maps/widget/app.html"
"""`maps` comes after `charts` in name order: its app gets the server-qualified form."""
APPS_ID = "io.modelcontextprotocol/ui"
APPS_SETTINGS = {"mimeTypes": ["text/html;profile=mcp-app"]}
APPS = advertise(APPS_ID, APPS_SETTINGS)


def configure(directory: Path, **router: Any) -> Path:
    return write_config(directory, {"charts": script("charts"), "maps": script("maps")}, **router)


@asynccontextmanager
async def host(config: Path, *, apps: bool = True, mode: str = "legacy") -> AsyncIterator[Client]:
    """A host over stdio that declares MCP Apps support, or not; the upstreams indexed."""
    extensions = [APPS] if apps else None
    with anyio.fail_after(LIMIT):
        async with Client(router_parameters(config), mode=mode, extensions=extensions) as client:
            await until_indexed(lambda: search_text(client))
            yield client


async def searched(client: Client, query: str) -> dict[str, dict[str, Any]]:
    result = await client.call_tool("search_tools", {"query": query, "k": 10})
    assert result.structured_content is not None
    return {tool["name"]: tool for tool in result.structured_content["tools"]}


def text_of(result: types.CallToolResult) -> str:
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


async def read(client: Client, uri: str) -> types.TextResourceContents:
    found = await client.read_resource(uri)
    (contents,) = found.contents
    assert isinstance(contents, types.TextResourceContents)
    return contents


async def test_two_upstreams_apps_under_one_ui_uri_are_both_reachable_with_their_own_html(
    tmp_path: Path,
) -> None:
    async with host(configure(tmp_path)) as client:
        tools = await searched(client, "chart the sales of a quarter, show a place on a map")
        listed = {str(r.uri): r for r in (await client.list_resources()).resources}
        charts, maps = await read(client, WIDGET), await read(client, MAPS_WIDGET)

    # each tool points at its own upstream's app, under the URI the router lists it by
    assert tools["charts__sales_chart"]["_meta"]["ui"] == {"resourceUri": WIDGET}
    assert tools["maps__show_map"]["_meta"]["ui"] == {"resourceUri": MAPS_WIDGET}
    assert set(listed) == {WIDGET, MAPS_WIDGET}
    assert listed[MAPS_WIDGET].mime_type == "text/html;profile=mcp-app"
    assert listed[MAPS_WIDGET].meta == {
        "ui": {
            "csp": {"connectDomains": ["https://maps.example"]},
            "permissions": {"geolocation": {}},
        }
    }
    # read from its owner, HTML and `_meta.ui` (csp, permissions) intact
    assert "charts app" in charts.text and str(charts.uri) == WIDGET
    assert charts.meta == {"ui": {"csp": {"connectDomains": ["https://charts.example"]}}}
    assert "maps app" in maps.text and str(maps.uri) == MAPS_WIDGET
    assert maps.mime_type == "text/html;profile=mcp-app"
    assert maps.meta is not None and maps.meta["ui"]["permissions"] == {"geolocation": {}}


async def test_the_pass_through_listing_points_each_tool_at_its_own_app(tmp_path: Path) -> None:
    async with host(configure(tmp_path, mode="all")) as client:
        listed = {t.name: t for t in (await client.list_tools(cache_mode="bypass")).tools}

    assert listed["charts__sales_chart"].meta == {"ui": {"resourceUri": WIDGET}}
    assert listed["maps__show_map"].meta == {"ui": {"resourceUri": MAPS_WIDGET}}
    assert "charts__refresh_chart" not in listed  # for the app alone


@pytest.mark.parametrize("mode", ["search", "all"])
async def test_an_app_only_tool_is_never_listed_or_searched_yet_the_host_calls_it(
    tmp_path: Path, mode: str
) -> None:
    async with host(configure(tmp_path, mode=mode)) as client:
        listed = [t.name for t in (await client.list_tools(cache_mode="bypass")).tools]
        found = await searched(client, "refresh the chart app's figures for a quarter")
        called = await client.call_tool("charts__refresh_chart", {"quarter": "Q3"})
        wrapped = (
            await client.call_tool(
                "call_tool", {"name": "charts__refresh_chart", "arguments": {"quarter": "Q4"}}
            )
            if mode == "search"
            else None
        )

    assert "charts__refresh_chart" not in listed
    assert "charts__refresh_chart" not in found and "charts__sales_chart" in found
    assert not called.is_error and text_of(called) == "refreshed Q3: north 11, south 21"
    if wrapped is not None:
        assert text_of(wrapped) == "refreshed Q4: north 11, south 21"


async def test_a_misspelt_name_never_suggests_an_app_only_tool_nor_does_the_count_hold_one(
    tmp_path: Path,
) -> None:
    """The model learns of a tool for the app alone from no suggestion, no `indexed` count of
    `search_tools` and no line of the servers' directory (charts has one tool for the model,
    one for its app; maps one)."""
    async with host(configure(tmp_path)) as client:
        suggested = {}
        for misspelt in ("charts__refresh_charts", "refresh_chart", "charts__sales_charts"):
            with pytest.raises(MCPError) as unknown:
                await client.call_tool(misspelt, {"quarter": "Q1"})
            data = unknown.value.error.data
            suggested[misspelt] = data["suggestions"] if data else []
        search = await client.call_tool("search_tools", {"query": "refresh a chart"})
        listed = (await client.list_tools(cache_mode="bypass")).tools
        described = next(t.description or "" for t in listed if t.name == "search_tools")

    assert all("charts__refresh_chart" not in names for names in suggested.values()), suggested
    # nor does the directory of servers behind the router, in search_tools' description
    charts = next(line for line in described.splitlines() if line.startswith("- charts"))
    assert charts.startswith("- charts (1 tool)") and "refresh_chart" not in charts, charts
    assert suggested["charts__sales_charts"] == ["charts__sales_chart"]  # the model's tool is
    assert search.structured_content is not None
    assert search.structured_content["indexed"] == 2


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_host_without_the_extension_reads_text_and_the_upstream_sees_no_apps(
    tmp_path: Path, mode: str
) -> None:
    async with host(configure(tmp_path), apps=False, mode=mode) as client:
        called = await client.call_tool("charts__sales_chart", {"quarter": "Q1"})
        found = await searched(client, "chart the sales of a quarter")

    assert text_of(called) == "sales for Q1 as text: north 10, south 20"
    assert "charts__sales_chart" in found  # the tool itself is there, UI or not


async def test_a_2026_host_with_the_extension_is_told_apart_per_request(tmp_path: Path) -> None:
    config = configure(tmp_path)
    async with host(config, mode="2026-07-28") as client:
        with_apps = await client.call_tool("charts__sales_chart", {"quarter": "Q1"})
    async with host(config, apps=False, mode="2026-07-28") as client:
        without = await client.call_tool("charts__sales_chart", {"quarter": "Q1"})

    assert text_of(with_apps) == "sales chart for Q1: shown in the app"
    assert text_of(without) == "sales for Q1 as text: north 10, south 20"


async def test_a_handshake_era_host_s_apps_reach_its_upstream_at_initialize(
    tmp_path: Path,
) -> None:
    """A handshake-era upstream hears a client's capabilities only at `initialize`: with one
    host (stdio) the router declares there what that host declared of MCP Apps, so charts'
    tool renders for a host with apps and answers one without with text."""
    config = configure(tmp_path)
    async with host(config, apps=False) as client:
        without = await client.call_tool("charts__sales_chart", {"quarter": "Q2"})
    async with host(config) as client:  # charts, lazy now, connects for the call
        with_apps = await client.call_tool("charts__sales_chart", {"quarter": "Q2"})

    assert text_of(with_apps) == "sales chart for Q2: shown in the app"
    assert text_of(without) == "sales for Q2 as text: north 10, south 20"


async def test_a_2026_host_s_apps_reach_an_upstream_held_to_a_handshake_revision(
    tmp_path: Path,
) -> None:
    """charts held to 2025-11-25 never gets per-request capabilities: its `initialize` carries
    the 2026-07-28 host's declaration instead, learned from the host's first request (here its
    `server/discover`; charts, lazy once its listing is cached, connects for the call)."""
    config = write_config(
        tmp_path, {"charts": script("charts", protocol="2025-11-25"), "maps": script("maps")}
    )
    async with host(config, apps=False, mode="auto") as client:
        without = await client.call_tool("charts__sales_chart", {"quarter": "Q3"})
    async with host(config, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        with_apps = await client.call_tool("charts__sales_chart", {"quarter": "Q3"})

    assert text_of(with_apps) == "sales chart for Q3: shown in the app"
    assert text_of(without) == "sales for Q3 as text: north 10, south 20"


async def test_the_router_advertises_the_apps_extension_and_no_other(tmp_path: Path) -> None:
    """In `server/discover` (2026-07-28); the SDK sends no extensions on the handshake
    revisions, where a host finds the apps through the tools' `_meta.ui` alone."""
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"extensions": {APPS_ID: APPS_SETTINGS}},
    }
    async with raw_router(configure(tmp_path)) as router:
        with anyio.fail_after(LIMIT):
            discovered = await router.result("server/discover", {"_meta": envelope})

    extensions = discovered["capabilities"]["extensions"]
    assert APPS_ID in extensions
    # the upstreams' own are not passed on; the router's tasks extension may be there
    assert set(extensions) <= {APPS_ID, "io.modelcontextprotocol/tasks"}
