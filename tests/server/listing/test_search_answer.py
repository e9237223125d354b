"""One search answer (`router.server.listing.answer`), rendered by every surface: the same
query through MCP's `search_tools`, code mode's `search_tools` and a program's, `/v1/search`
in each LLM API's shape and `/v1/route` names the same tools in the same order, the same
number of tools searched, the same upstreams not searched, the same held tools and the same
verdict on whether any tool fits; and each
says only what the caller's view may see.

The fronts are real (in process, BM25 only) over real upstreams: `tests/upstreams/guarded.py`,
`shop.py`, `relay.py`, `shifty.py` turned after it was first seen (so tool pinning holds its
`lookup`), and a server whose script does not exist (down from the start).
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest

from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import (
    config,
    http_front,
    streamable_client,
    until_indexed,
    until_ready,
)
from tests.support.identity_provider import running_provider
from tests.upstream.test_upstream_pool import first_text, script

pytestmark = pytest.mark.processes

QUERIES = (
    "delete a note",
    "list the shop's orders",
    "echo a message, then look up a word in the dictionary",
    "zzzz qqqq",
)
HELD = "shifty__lookup"
AUDIENCE = "https://router.test/mcp"


def shifty(*, turned: bool) -> dict[str, Any]:
    return script("shifty", env={"SHIFTY_TURNED": "1"} if turned else {}, start="eager")


@pytest.fixture(scope="module")
async def servers(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[dict[str, Any]]:
    """The servers, and a cache folder whose pins saw shifty before it turned."""
    cache = tmp_path_factory.mktemp("answer") / "cache"
    first = config({"shifty": shifty(turned=False)}, cache_dir=str(cache))
    async with http_front(first) as front:
        with anyio.fail_after(60):
            await until_indexed(front.state)
    yield {
        "servers": {
            "shifty": shifty(turned=True),
            "guarded": script("guarded"),
            "shop": script("shop"),
            "relay": script("relay"),
            "broken": {"command": sys.executable, "args": [str(cache / "no-such-script.py")]},
        },
        "cache_dir": str(cache),
    }


@dataclass(frozen=True)
class Seen:
    """What one surface said about one search."""

    names: tuple[str, ...]
    indexed: int | None
    unsearched: tuple[str, ...]
    held: tuple[str, ...]
    fits: bool
    servers: tuple[str, ...]
    """Whether any tool fits (`match`), and the servers the answer says they come from."""


def from_mcp(result: types.CallToolResult) -> Seen:
    found = result.structured_content
    assert found is not None and not result.is_error
    down = [d["name"] for d in found["down"] if not d["indexed"]]
    return Seen(
        tuple(t["name"] for t in found["tools"]),
        found["indexed"],
        (*found["starting"], *down),
        tuple(h["name"] for h in found["held"]),
        found["match"]["fits"],
        tuple(s["name"] for s in found["match"]["servers"]),
    )


def from_code_mode(result: types.CallToolResult) -> Seen:
    found = result.structured_content
    assert found is not None and not result.is_error
    searched = re.search(r"best of (\d+) tools", first_text(result))
    return Seen(
        tuple(t["name"] for t in found["tools"]),
        int(searched.group(1)) if searched else None,
        (*found["starting"], *found["down"]),  # the down server was never indexed
        tuple(h["name"] for h in found["held"]),
        found["match"]["fits"],
        tuple(s["name"] for s in found["match"]["servers"]),
    )


def from_rest(body: dict[str, Any]) -> Seen:
    return Seen(
        tuple(r["name"] for r in body["results"]),
        body["catalog_tools"],
        tuple(body["pending"]),
        tuple(h["name"] for h in body.get("held", [])),
        body["match"]["fits"],
        tuple(s["name"] for s in body["match"]["servers"]),
    )


async def rest_answers(
    url: str, query: str, headers: dict[str, str] | None = None
) -> dict[str, dict[str, Any]]:
    """`/v1/search` in each shape and `/v1/route`, for the same query and k."""
    answers = {}
    async with httpx2.AsyncClient(base_url=url, headers=headers, timeout=30) as http:
        for shape in ("anthropic", "openai", "mcp"):
            extra = {"call_id": "call_1"} if shape == "openai" else {}
            body = {"query": query, "k": 3, "format": shape, **extra}
            response = await http.post("/v1/search", json=body)
            assert response.status_code == 200, response.text
            answers[shape] = response.json()
        response = await http.post("/v1/route", json={"query": query, "k": 3})
        assert response.status_code == 200, response.text
        answers["route"] = response.json()
    return answers


async def test_every_surface_names_the_same_tools_coverage_and_held_tools(
    servers: dict[str, Any],
) -> None:
    seen: dict[str, dict[str, Seen]] = {query: {} for query in QUERIES}
    programs: dict[str, tuple[str, ...]] = {}
    for mode in ("search", "code"):
        cfg = config(servers["servers"], cache_dir=servers["cache_dir"], mode=mode)
        async with http_front(cfg) as front:
            with anyio.fail_after(60):
                await until_ready(front.state)
                async with streamable_client(front.mcp) as client:
                    for query in QUERIES:
                        found = await client.call_tool("search_tools", {"query": query, "k": 3})
                        read = from_mcp if mode == "search" else from_code_mode
                        seen[query][f"{mode} mode's search_tools"] = read(found)
                        if mode == "code":
                            program = f"[t['name'] for t in await search_tools({query!r}, 3)]"
                            ran = await client.call_tool("execute", {"code": program})
                            assert not ran.is_error, first_text(ran)
                            programs[query] = tuple(json.loads(first_text(ran)))
                for query in QUERIES:
                    for surface, body in (await rest_answers(front.url, query)).items():
                        seen[query][f"{mode} mode's {surface}"] = from_rest(body)
                        if surface == "anthropic" and body["results"]:
                            named = tuple(block["tool_name"] for block in body["content"])
                            assert named == seen[query][f"{mode} mode's {surface}"].names
                        if surface == "openai":
                            named = tuple(tool["name"] for tool in body["output"]["tools"])
                            assert named == seen[query][f"{mode} mode's {surface}"].names

    for query, surfaces in seen.items():
        mcp = surfaces["search mode's search_tools"]
        for surface, said in surfaces.items():
            assert said.names == mcp.names, (query, surface)
            assert said.unsearched == mcp.unsearched == ("broken",), (query, surface)
            if said.indexed is not None:  # code mode's text counts them when it shows tools
                assert said.indexed == mcp.indexed, (query, surface)
            if not surface.endswith("route"):  # /v1/route does not name held tools
                assert said.held == mcp.held, (query, surface)
            assert (said.fits, said.servers) == (mcp.fits, mcp.servers), (query, surface)
        assert programs[query] == mcp.names, query
    assert seen["delete a note"]["search mode's search_tools"].names[0] == "guarded__delete_note"
    assert seen["delete a note"]["search mode's search_tools"].fits
    assert seen["delete a note"]["search mode's search_tools"].servers[0] == "guarded"
    assert seen["zzzz qqqq"]["search mode's search_tools"].names == ()
    assert not seen["zzzz qqqq"]["search mode's search_tools"].fits
    # the held tool is named by the query that looks for it, and only by that one
    held = {query: surfaces["search mode's search_tools"].held for query, surfaces in seen.items()}
    assert held == {query: (HELD,) if "look up" in query else () for query in QUERIES}


async def test_every_surface_says_only_what_the_callers_view_may_see(
    servers: dict[str, Any],
) -> None:
    """A caller whose profile hides the down server and the held tool's server hears of
    neither on any surface; an operator whose profile shows everything hears of both."""
    async with running_provider() as provider:
        cfg = config(
            servers["servers"],
            cache_dir=servers["cache_dir"],
            http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
            profiles={
                "ops": {"groups": ["ops"], "allow": ["*"]},
                "default": {"deny": ["broken", "shifty"]},
            },
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        query = "echo a message, then look up a word in the dictionary"
        seen: dict[str, dict[str, Seen]] = {}
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(60):
                await until_ready(front.state)
                for who, groups in (("olivia", ["ops"]), ("mallory", [])):
                    token = provider.token(who, AUDIENCE, groups=groups)
                    headers = {"Authorization": f"Bearer {token}"}
                    async with streamable_client(front.mcp, headers) as client:
                        found = await client.call_tool("search_tools", {"query": query, "k": 3})
                    seen[who] = {"search_tools": from_mcp(found)}
                    for surface, body in (await rest_answers(front.url, query, headers)).items():
                        seen[who][surface] = from_rest(body)

    for who, unsearched, held in (("olivia", ("broken",), (HELD,)), ("mallory", (), ())):
        mcp = seen[who]["search_tools"]
        assert (mcp.unsearched, mcp.held) == (unsearched, held), who
        for surface, said in seen[who].items():
            assert (said.names, said.indexed, said.unsearched) == (
                mcp.names,
                mcp.indexed,
                mcp.unsearched,
            ), (who, surface)
            if surface != "route":
                assert said.held == mcp.held, (who, surface)
    assert seen["mallory"]["search_tools"].indexed < seen["olivia"]["search_tools"].indexed  # type: ignore[operator]
