"""The listing as a host that defers MCP tools behind its own tool search reads it (Claude
Code): the router's own tools and the pins carry `_meta["anthropic/alwaysLoad"]: true`, so
they are never deferred, on every revision; query results and a session's searched tools
stay deferrable; `router.always_load: false` marks nothing; dynamic mode advertises
`tools.listChanged`, which Claude Code needs before it re-reads the list.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client

from tests.support.serving import (
    META_TOOLS,
    raw_router,
    router_parameters,
    script,
    until_indexed,
    write_config,
)

pytestmark = pytest.mark.processes

ALWAYS_LOAD = "anthropic/alwaysLoad"
PIN = "scripted__env"


def config(directory: Path, **router: Any) -> Path:
    servers = {"scripted": script("scripted", protocol="legacy")}
    return write_config(directory, servers, k=2, pin=["scripted/env"], **router)


def kept_loaded(listing: dict[str, Any]) -> dict[str, bool]:
    """Each listed tool, by name: whether it is marked keep-loaded."""
    return {
        tool["name"]: (tool.get("_meta") or {}).get(ALWAYS_LOAD) is True
        for tool in listing["tools"]
    }


async def test_meta_tools_and_pins_are_marked_keep_loaded_and_searched_tools_are_not(
    tmp_path: Path,
) -> None:
    async with raw_router(config(tmp_path, mode="dynamic")) as router:
        with anyio.fail_after(30):
            opened = await router.initialize("2025-11-25")
            await until_indexed(router.search_text)
            default = await router.result("tools/list")
            queried = await router.result("tools/list", {"query": "the extra_1 tool"})
            await router.call("search_tools", {"query": "the extra_2 tool"})
            session = await router.result("tools/list")

    assert opened["capabilities"]["tools"]["listChanged"] is True
    assert kept_loaded(default) == {PIN: True, **dict.fromkeys(META_TOOLS, True)}
    marks = kept_loaded(queried)
    assert "scripted__extra_1" in marks
    assert {name for name, kept in marks.items() if kept} == {PIN, *META_TOOLS}
    marks = kept_loaded(session)
    assert "scripted__extra_2" in marks  # dynamic mode listed the session's search
    assert {name for name, kept in marks.items() if kept} == {PIN, *META_TOOLS}


async def test_a_2026_07_28_host_reads_the_same_marks(tmp_path: Path) -> None:
    async with Client(router_parameters(config(tmp_path)), mode="2026-07-28") as client:
        with anyio.fail_after(30):
            listing = await client.list_tools()

    assert [tool.name for tool in listing.tools] == [PIN, *META_TOOLS]
    assert all(tool.meta is not None and tool.meta[ALWAYS_LOAD] is True for tool in listing.tools)


async def test_always_load_false_marks_nothing(tmp_path: Path) -> None:
    async with raw_router(config(tmp_path, always_load=False)) as router:
        with anyio.fail_after(30):
            await router.initialize("2025-06-18")
            listing = await router.result("tools/list")

    assert kept_loaded(listing) == {PIN: False, **dict.fromkeys(META_TOOLS, False)}
