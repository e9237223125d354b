"""A server denied whole is denied on every surface (`Visibility.permits_server`): whether
`router.policy`, an endpoint's policy or an endpoint's `tools` globs leave none of its tools,
its resources, templates, prompts, completions and subscriptions are unknown (-32602, as
ones that never existed), not listed, and never reach it. The upstream is
tests/upstreams/storeroom.py under the name `shop` (its config resource holds a password),
beside tests/upstreams/counting.py as `other`, behind a real HTTP front.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from tests.support.http_serving import (
    SCRIPTS,
    config,
    counting_upstream,
    http_front,
    streamable_client,
    until_ready,
)
from tests.upstream.test_upstream_pool import script

CASES: dict[str, tuple[dict[str, Any], str]] = {
    "nothing denied": ({}, ""),
    "router.policy.deny": ({"policy": {"deny": ["shop/*"]}}, ""),
    "router.policy.allow": ({"policy": {"allow": ["other/*"]}}, ""),
    "endpoint policy.deny": ({"endpoints": {"desk": {"policy": {"deny": ["shop/**"]}}}}, "/desk"),
    "endpoint tools": ({"endpoints": {"desk": {"tools": ["other/touch"]}}}, "/desk"),
}
REACHING = ("resources/read", "prompts/get", "completion/complete", "resources/subscribe")


def storeroom(log: Path) -> dict[str, Any]:
    return script("storeroom") | {"args": [str(SCRIPTS / "storeroom.py"), str(log)]}


async def outcome(call: Any) -> Any:
    """What a request answered, or the `MCPError` it was refused with."""
    try:
        return await call
    except MCPError as refused:
        return refused


async def everything_of_shop(client: Client) -> dict[str, Any]:
    restock = types.PromptReference(name="shop__restock")
    item = types.ResourceTemplateReference(uri="shop://items/{sku}")
    return {
        "resources": [str(r.uri) for r in (await client.list_resources()).resources],
        "templates": [
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        ],
        "prompts": [p.name for p in (await client.list_prompts()).prompts],
        "call": await outcome(client.call_tool("shop__count_stock", {})),
        "read": await outcome(client.read_resource("shop://config")),
        "get": await outcome(client.get_prompt("shop__restock", {"sku": "x"})),
        "complete": await outcome(client.complete(restock, {"name": "sku", "value": ""})),
        "complete template": await outcome(client.complete(item, {"name": "sku", "value": ""})),
        "subscribe": await outcome(client.subscribe_resource("shop://config")),
        "never existed": await outcome(client.read_resource("shop://no/such/thing")),
    }


@pytest.mark.processes
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
@pytest.mark.parametrize("case", list(CASES))
async def test_a_server_denied_whole_has_no_resources_prompts_or_completions(
    tmp_path: Path, case: str
) -> None:
    router, path = CASES[case]
    log = tmp_path / "shop.log"
    cfg = config(
        {"shop": storeroom(log), "other": counting_upstream(tmp_path / "other.log")}, **router
    )
    async with http_front(cfg) as front:
        with anyio.fail_after(60):
            await until_ready(front.state)
            async with streamable_client(front.mcp + path, mode="legacy") as client:
                seen = await everything_of_shop(client)
    received = log.read_text("utf-8").splitlines()

    if case == "nothing denied":  # shop is there to be denied
        assert seen["resources"] == ["shop://config"] and seen["prompts"] == ["shop__restock"]
        assert "hunter2" in seen["read"].contents[0].text
        assert seen["complete"].completion.values == ["sku-1", "sku-2"]
        assert seen["complete template"].completion.values == ["sku-1", "sku-2"]
        assert not isinstance(seen["get"], MCPError)
        assert not isinstance(seen["subscribe"], MCPError)
        assert {"resources/read shop://config", "prompts/get restock"} <= set(received)
        return
    assert (seen["resources"], seen["templates"], seen["prompts"]) == ([], [], [])
    assert isinstance(seen["call"], MCPError)  # its tools were denied before: the same intent
    for refused in ("read", "get", "complete", "complete template", "subscribe"):
        error = seen[refused]
        assert isinstance(error, MCPError), refused
        assert error.error.code == types.INVALID_PARAMS and "unknown" in error.error.message
    never = seen["never existed"]
    assert seen["read"].error.message.replace("shop://config", "URI") == (
        never.error.message.replace("shop://no/such/thing", "URI")
    )
    assert not [line for line in received if line.startswith(REACHING)]
