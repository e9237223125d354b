"""Virtual endpoints (`router.endpoints`) with real processes: three upstreams
(`tests/upstreams/tracker.py`, `shop.py`, `toolbox.py`) behind one in-process HTTP front,
served at `/mcp`, `/mcp/support` and `/mcp/ops` (and `/sse/NAME`, `?endpoint=NAME` on the
REST API), and `mcp-router serve --endpoint NAME` over stdio as a host starts it.

Each endpoint is a view: the tools are embedded once (the real model, counted by the store)
and each upstream runs once, whichever endpoint calls it. Every wait is bounded."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from router.embedding.base import Embedder
from tests.pinning.test_pinning import refused
from tests.support.http_serving import (
    MCP_ACCEPT,
    Front,
    config,
    http_front,
    open_session,
    sse_data,
    sse_sdk_client,
    streamable_client,
    until_indexed,
)
from tests.support.serving import ROOT, User, router_command, write_config
from tests.upstream.test_upstream_pool import first_text, script

pytestmark = pytest.mark.processes

LIMIT = 60
SERVERS = {"tracker": script("tracker"), "shop": script("shop"), "toolbox": script("toolbox")}
ENDPOINTS: dict[str, Any] = {
    "support": {
        "servers": ["tracker", "shop"],
        "k": 3,
        "pin": ["tracker/tkt_new"],
        "policy": {"deny": ["shop/refund_order"]},
    },
    "ops": {
        "servers": ["tracker", "toolbox"],
        "tools": ["tracker/tkt_*", "toolbox/*"],
        "mode": "all",
        "policy": {"confirm": ["tracker/tkt_upd"], "deny": ["tracker/tkt_rm"]},
    },
}
OPS_TOOLS = {
    "tracker__tkt_new",
    "tracker__tkt_ls",
    "tracker__tkt_upd",
    "toolbox__get_forecast",
    "toolbox__convert_currency",
    "toolbox__translate_text",
    "toolbox__search_notes",
}


def served(**router: Any) -> Any:
    return config(SERVERS, endpoints=ENDPOINTS, **router)


@pytest.fixture(scope="module")
async def front(real_embedder: Embedder) -> AsyncIterator[Front]:
    cfg = served(policy={"confirm": ["tracker/tkt_rm"]})
    async with http_front(cfg, embedder=real_embedder) as running:
        with anyio.fail_after(LIMIT):
            await until_indexed(running.state)
        yield running


async def names(url: str, **options: Any) -> list[str]:
    async with streamable_client(url, **options) as client:
        return [tool.name for tool in (await client.list_tools()).tools]


async def searched(client: Client, query: str) -> list[str]:
    """The names `search_tools` ranks, at the endpoint's own `k`."""
    result = await client.call_tool("search_tools", {"query": query})
    assert result.structured_content is not None
    return [tool["name"] for tool in result.structured_content["tools"]]


async def tracker_calls(front: Front) -> list[str]:
    async with streamable_client(front.mcp) as client:
        text = first_text(await client.call_tool("tracker__calls", {}))
    return [json.loads(line)["tool"] for line in text.splitlines()]


# -- one index, one connection, views of it -----------------------------------------------


async def test_two_endpoints_serve_their_own_servers_from_one_index_and_one_connection(
    front: Front,
) -> None:
    with anyio.fail_after(LIMIT):
        root = await names(front.mcp)
        support = await names(f"{front.mcp}/support")
        ops = await names(f"{front.mcp}/ops")
        async with streamable_client(f"{front.mcp}/support") as client:
            support_found = await searched(client, "refund an order and email the customer")
            made = await client.call_tool(
                "tracker__tkt_new", {"proj": "SUP", "ttl": "Refund failed"}
            )
            hidden = await refused(client, "toolbox__get_forecast", {"city": "Oslo"})
        async with streamable_client(f"{front.mcp}/ops") as client:
            listed = await client.call_tool("tracker__tkt_ls", {"proj": "OPS"})
        calls = await tracker_calls(front)
    async with httpx2.AsyncClient(base_url=front.url, timeout=30) as http:
        health = (await http.get("/healthz")).json()

    assert root == ["search_tools", "call_tool"]  # the router itself pins nothing
    assert support == ["tracker__tkt_new", "search_tools", "call_tool"]  # its own pin
    assert set(ops) == OPS_TOOLS  # pass-through: its tools, no meta-tools
    assert support_found and all(n.split("__")[0] in ("tracker", "shop") for n in support_found)
    assert "shop__send_email" in support_found
    assert "shop__refund_order" not in support_found  # its policy denies it
    assert len(support_found) <= 3  # its own k
    assert not made.is_error and not listed.is_error
    assert "unknown tool" in hidden.message  # another endpoint's server does not exist here
    # one tracker process served both endpoints' calls
    assert calls == ["tkt_new", "tkt_ls"]
    assert sorted(front.state.pool.upstreams) == ["shop", "toolbox", "tracker"]
    # one index: every tool embedded once, however many endpoints view it
    catalog = len(front.state.snapshot.catalog)
    assert health["store"]["embedded"] == catalog and catalog == 6 + 6 + 4


async def test_an_endpoint_lists_the_same_bytes_in_every_session(front: Front) -> None:
    listing = {"jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {}}
    bodies = []
    async with httpx2.AsyncClient(timeout=30) as http:
        for path in ("ops", "support", "ops", "support"):
            url = f"{front.mcp}/{path}"
            with anyio.fail_after(LIMIT):
                session = await open_session(http, url)
                answer = await http.post(url, json=listing, headers=session)
            assert answer.status_code == 200, answer.text
            bodies.append(json.dumps(sse_data(answer.text)))
    assert bodies[0] == bodies[2] and bodies[1] == bodies[3] and bodies[0] != bodies[1]


async def test_an_endpoint_policy_and_the_routers_the_stricter_wins(front: Front) -> None:
    user = User("decline")
    with anyio.fail_after(LIMIT):
        async with streamable_client(
            f"{front.mcp}/ops", mode="legacy", elicitation_callback=user.elicitation
        ) as client:
            asked_here = await client.call_tool("tracker__tkt_upd", {"id": "T-1", "st": "x"})
            denied_here = await refused(client, "tracker__tkt_rm", {"id": "T-1"})
        asked_at_ops = list(user.asked)
        async with streamable_client(
            front.mcp, mode="legacy", elicitation_callback=user.elicitation
        ) as client:
            ran_at_root = await client.call_tool(
                "call_tool", {"name": "tracker__tkt_upd", "arguments": {"id": "T-2", "st": "y"}}
            )
            asked_at_root = await client.call_tool(
                "call_tool", {"name": "tracker__tkt_rm", "arguments": {"id": "T-3"}}
            )

    # ops confirms tkt_upd (the router does not): asked there, declined, never reached
    assert asked_here.is_error and len(asked_at_ops) == 1 and "tkt_upd" in asked_at_ops[0]
    # ops denies tkt_rm, which the router only confirms: the stricter rule wins there
    assert "unknown tool" in denied_here.message or "denied" in denied_here.message
    # at the router itself, tkt_upd runs without asking and tkt_rm asks
    assert not ran_at_root.is_error
    assert asked_at_root.is_error and len(user.asked) == 2 and "tkt_rm" in user.asked[1]


# -- the other surfaces -------------------------------------------------------------------


async def test_the_rest_api_takes_an_endpoint(front: Front) -> None:
    query = {"query": "what will the weather be in Oslo", "k": 5}
    async with httpx2.AsyncClient(base_url=front.url, timeout=30) as http:
        with anyio.fail_after(LIMIT):
            ops = (await http.get("/v1/tools", params={"endpoint": "ops"})).json()
            support = await http.post(
                "/v1/search?endpoint=support", json={**query, "format": "mcp"}
            )
            routed = (await http.post("/v1/route?endpoint=support", json=query)).json()
            everything = (await http.post("/v1/search", json={**query, "format": "mcp"})).json()
            unknown = await http.get("/v1/tools", params={"endpoint": "nope"})

    assert {t["name"] for t in ops["tools"]} == OPS_TOOLS
    assert {u["name"] for u in ops["upstreams"]} == {"toolbox", "tracker"}
    assert support.status_code == 200, support.text
    assert not any(r["server"] == "toolbox" for r in support.json()["results"])
    assert any(r["server"] == "toolbox" for r in everything["results"])
    assert routed["results"][0]["name"] == "tracker__tkt_new"  # support's pin comes first
    assert support.json()["catalog_tools"] < everything["catalog_tools"]
    assert unknown.status_code == 404 and "no endpoint 'nope'" in unknown.text
    assert "support" in unknown.text and "ops" in unknown.text


async def test_an_unknown_endpoint_is_404_and_a_session_belongs_to_its_endpoint(
    front: Front,
) -> None:
    listing = {"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}
    async with httpx2.AsyncClient(timeout=30) as http:
        with anyio.fail_after(LIMIT):
            nope = await http.post(f"{front.mcp}/nope", json=listing, headers=MCP_ACCEPT)
            session = await open_session(http, f"{front.mcp}/support")
            elsewhere = await http.post(f"{front.mcp}/ops", json=listing, headers=session)
            at_root = await http.post(front.mcp, json=listing, headers=session)
            own = await http.post(f"{front.mcp}/support", json=listing, headers=session)

    assert nope.status_code == 404 and nope.json()["error"]["code"] < 0
    assert "no endpoint 'nope'" in nope.json()["error"]["message"]
    assert elsewhere.status_code == 404 and at_root.status_code == 404
    assert own.status_code == 200


async def test_legacy_sse_serves_an_endpoint(front: Front) -> None:
    with anyio.fail_after(LIMIT):
        async with sse_sdk_client(f"{front.sse}/ops") as client:
            over_sse = {tool.name for tool in (await client.list_tools()).tools}
            answer = await client.call_tool("toolbox__get_forecast", {"city": "Oslo"})
    assert over_sse == OPS_TOOLS and not answer.is_error


async def test_serve_endpoint_on_stdio(tmp_path: Path) -> None:
    path = write_config(tmp_path, SERVERS, endpoints=ENDPOINTS)
    command, *args = router_command(path)
    parameters = StdioServerParameters(
        command=command, args=[*args, "--endpoint", "ops"], cwd=path.parent
    )
    with anyio.fail_after(LIMIT):
        async with Client(parameters, mode="legacy") as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
        done = await anyio.run_process(
            [*router_command(path), "--endpoint", "nope"], cwd=ROOT, check=False
        )
    assert listed == OPS_TOOLS
    assert done.returncode == 2
    assert "router.endpoints has no endpoint 'nope' (known: ops, support)" in done.stderr.decode()


def test_an_endpoint_naming_a_missing_server_is_a_config_error() -> None:
    from router.core.errors import ConfigError

    with pytest.raises(ConfigError, match=r"router\.endpoints\.ops\.servers\[1\]: 'wiki'"):
        config(SERVERS, endpoints={"ops": {"servers": ["tracker", "wiki"]}})
    with pytest.raises(ConfigError, match=r"router\.endpoints"):
        config(SERVERS, endpoints={"no spaces": {}})


# -- with profiles ------------------------------------------------------------------------


async def test_profiles_and_an_endpoint_both_apply_the_stricter_wins() -> None:
    from router.server.http.auth.security import SecurityPolicy
    from tests.support.identity_provider import running_provider

    audience = "https://router.test/mcp"
    async with running_provider() as provider:
        cfg = served(
            http={"oauth": {"issuer": provider.url, "audience": audience, "scopes": ["mcp"]}},
            profiles={
                "weather": {"groups": ["weather"], "allow": ["toolbox/*", "tracker/tkt_ls"]},
                "default": {"deny": ["toolbox/*"]},
            },
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(LIMIT):
                await until_indexed(front.state)
                token = provider.token("alice", audience, groups=["weather"])
                alice = {"Authorization": f"Bearer {token}"}
                bob = {"Authorization": f"Bearer {provider.token('bob', audience)}"}
                alice_ops = await names(f"{front.mcp}/ops", headers=alice)
                bob_ops = await names(f"{front.mcp}/ops", headers=bob)
                alice_support = await names(f"{front.mcp}/support", headers=alice)
                async with httpx2.AsyncClient(base_url=front.url, timeout=30) as http:
                    bob_rest = (await http.get("/v1/tools?endpoint=ops", headers=bob)).json()

    # alice's profile allows the toolbox and tkt_ls; ops serves those and more of the tracker
    assert set(alice_ops) == {name for name in OPS_TOOLS if name.startswith("toolbox__")} | {
        "tracker__tkt_ls"
    }
    # bob's profile denies the toolbox: at ops he has the tracker's tkt_* tools only
    assert set(bob_ops) == {name for name in OPS_TOOLS if name.startswith("tracker__")}
    assert {t["name"] for t in bob_rest["tools"]} == set(bob_ops)
    # support's pin (tkt_new) is outside alice's profile: her listing there has no pin
    assert alice_support == ["search_tools", "call_tool"]
