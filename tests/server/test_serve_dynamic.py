"""Dynamic mode (`"router": {"mode": "dynamic"}`): after `search_tools`, a handshake-era
session's `tools/list` holds the searched tools, announced with
`notifications/tools/list_changed`; a 2026-07-28 session's listing never changes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage

from tests.support import serving
from tests.support.serving import (
    META_TOOLS,
    Installed,
    router_parameters,
    search_text,
    searched_names,
    until_indexed,
    write_config,
)

pytestmark = pytest.mark.processes

installed = serving.installed


def quick_servers(installed: Installed) -> dict[str, dict[str, Any]]:
    return {
        "time": installed.pypi("time", "mcp-server-time"),
        "everything": installed.npm("server-everything", "stdio"),
    }


@pytest.fixture(scope="module")
def dynamic_config(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("dynamic")
    return write_config(directory, quick_servers(installed), k=3, mode="dynamic")


async def test_dynamic_mode_announces_list_changed_and_then_lists_the_searched_tools(
    dynamic_config: Path,
) -> None:
    changed = anyio.Event()

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    parameters = router_parameters(dynamic_config)
    async with Client(parameters, mode="legacy", message_handler=on_message) as client:
        with anyio.fail_after(30):
            capabilities = client.server_capabilities
            await until_indexed(lambda: search_text(client))
            # the readiness searches above already changed the session's tools
            before = [tool.name for tool in (await client.list_tools()).tools]
            changed = anyio.Event()
            search = await client.call_tool("search_tools", {"query": "add two numbers"})
            await changed.wait()
            after = [tool.name for tool in (await client.list_tools()).tools]

    assert capabilities.tools is not None and capabilities.tools.list_changed is True
    assert after == [*searched_names(search), *META_TOOLS]
    assert "everything__get-sum" in after
    assert after != before


async def test_dynamic_mode_keeps_the_listing_fixed_under_2026_07_28(
    dynamic_config: Path,
) -> None:
    async with Client(router_parameters(dynamic_config), mode="auto") as client:
        with anyio.fail_after(30):
            version = client.protocol_version
            await until_indexed(lambda: search_text(client, "add two numbers"))
            listing = await client.list_tools(cache_mode="bypass")

    assert version == "2026-07-28"
    assert [tool.name for tool in listing.tools] == META_TOOLS
