"""Tool pinning holds an MCP Apps tool whose `_meta.ui` changed (`router.pinning.decide`):
which UI a tool renders is part of what a person approved. The upstream is
`tests/upstreams/charts.py`; `CHARTS_UI_URI` points its chart at another app while its
command line, and so its pins, stay the same."""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from tests.support.serving import router_parameters, script, search_text, until_indexed
from tests.support.serving import write_config as configure

pytestmark = pytest.mark.processes

LIMIT = 60
CHART = "charts__sales_chart"


async def chart_call(config: Path) -> types.CallToolResult | MCPError:
    """The chart, called once the upstream is indexed: its result, or the router's refusal."""
    with anyio.fail_after(LIMIT):
        async with Client(router_parameters(config), mode="legacy") as client:
            await until_indexed(lambda: search_text(client))
            try:
                return await client.call_tool(CHART, {"quarter": "Q1"})
            except MCPError as error:
                return error


async def test_a_tool_whose_app_changed_is_held_until_approved(tmp_path: Path) -> None:
    first = await chart_call(configure(tmp_path, {"charts": script("charts")}))
    moved = script("charts", env={"CHARTS_UI_URI": "ui://elsewhere/app.html"})
    second = await chart_call(configure(tmp_path, {"charts": moved}))

    assert isinstance(first, types.CallToolResult) and not first.is_error
    assert isinstance(second, MCPError)
    assert second.code == types.INVALID_PARAMS and "changed since it was approved" in second.message
