"""The HTTP front against real upstreams and real clients.

One router (in-process on uvicorn, BM25 only) aggregates three real upstreams: npm
server-everything in its streamable-HTTP mode and in its SSE mode, and PyPI
mcp-server-time over stdio. Clients: the SDK over streamable HTTP (modern and handshake
revisions) and over SSE, the MCP Inspector CLI over HTTP, and plain HTTP for the REST API.
The tests that count sessions run fronts of their own (in front of tests/upstreams/relay.py),
where no other test's session is open.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from router.accounting.formats import ToolFormat
from router.accounting.tokens import TokenCounter
from tests.support.http_serving import (
    Front,
    config,
    counting_upstream,
    http_front,
    remote_everything,
    sse_sdk_client,
    streamable_client,
    until_indexed,
    until_ready,
    validate,
)
from tests.support.serving import inspector_cli  # noqa: F401 (the inspector fixture)
from tests.upstream import test_upstream_pool as upstream_tests
from tests.upstream.test_upstream_pool import Installed, first_text, script

pytestmark = pytest.mark.processes

installed = upstream_tests.installed

META_TOOLS = ["search_tools", "call_tool"]


@pytest.fixture(scope="module")
async def front(installed: Installed) -> AsyncIterator[Front]:
    async with (
        remote_everything(installed, "streamableHttp") as http_url,
        remote_everything(installed, "sse") as sse_url,
    ):
        cfg = config(
            {
                "http_everything": {"url": http_url},
                "sse_everything": {"url": sse_url},
                "time": upstream_tests.time_server(installed),
            },
            pin=["time__get_current_time"],
        )
        async with http_front(cfg) as running:
            with anyio.fail_after(30):
                await until_indexed(running.state)
            yield running


def names(result: types.CallToolResult) -> list[str]:
    assert result.structured_content is not None
    return [tool["name"] for tool in result.structured_content["tools"]]


async def test_tools_of_all_three_upstreams_are_searchable_and_callable_over_streamable_http(
    front: Front,
) -> None:
    async with streamable_client(front.mcp) as client:
        with anyio.fail_after(20):
            listing = await client.list_tools()
            found = await client.call_tool("search_tools", {"query": "echo a message", "k": 4})
            echo_http = await client.call_tool("http_everything__echo", {"message": "via http"})
            echo_sse = await client.call_tool(
                "call_tool", {"name": "sse_everything__echo", "arguments": {"message": "via sse"}}
            )
            now = await client.call_tool("time__get_current_time", {"timezone": "Asia/Tokyo"})
            version = client.protocol_version

    assert version == "2026-07-28"  # the SDK's default mode negotiates it
    assert [t.name for t in listing.tools] == ["time__get_current_time", *META_TOOLS]
    assert {"http_everything__echo", "sse_everything__echo"} <= set(names(found))
    assert first_text(echo_http) == "Echo: via http"
    assert first_text(echo_sse) == "Echo: via sse"
    assert json.loads(first_text(now))["timezone"] == "Asia/Tokyo"


async def test_the_sdk_client_over_sse_searches_and_calls_every_upstream(front: Front) -> None:
    async with sse_sdk_client(front.sse) as client:
        with anyio.fail_after(20):
            found = await client.call_tool("search_tools", {"query": "current time in a timezone"})
            echo = await client.call_tool("http_everything__echo", {"message": "sse in, http out"})
            total = await client.call_tool("sse_everything__get-sum", {"a": 2, "b": 3})
            bad = client.call_tool("time__get_current_time", {"zone": "UTC"})
            with pytest.raises(MCPError) as invalid:
                await bad
            version = client.protocol_version

    assert version == "2025-11-25"
    assert names(found)[0] == "time__get_current_time"
    assert first_text(echo) == "Echo: sse in, http out"
    assert "5" in first_text(total)
    assert invalid.value.code == types.INVALID_PARAMS


async def test_a_handshake_client_gets_the_query_scoped_listing_over_http(front: Front) -> None:
    meta = cast(types.RequestParamsMeta, {"mcp-router/query": "add two numbers", "mcp-router/k": 2})
    async with streamable_client(front.mcp, mode="legacy") as client:
        with anyio.fail_after(20):
            listing = await client.list_tools(meta=meta)
            version = client.protocol_version

    listed = [t.name for t in listing.tools]
    assert version == "2025-11-25"
    assert listed[0] == "time__get_current_time" and listed[-2:] == META_TOOLS
    assert {"http_everything__get-sum", "sse_everything__get-sum"} & set(listed)


async def health(http: httpx2.AsyncClient) -> dict[str, Any]:
    answer = await http.get("/healthz")
    assert answer.status_code == 200, answer.text
    body: dict[str, Any] = answer.json()
    return body


async def until_sessions(http: httpx2.AsyncClient, count: int) -> None:
    """Ask `/healthz` until it counts `count` sessions (bound it). Only for an SSE stream a
    client closed: the front notices when the connection drops, which no client event marks;
    every request here is a round trip through the front's event loop, not a sleep."""
    while (await health(http))["sessions"] != count:
        pass


async def test_twenty_clients_at_once_hold_their_own_sessions_and_get_their_own_answers() -> None:
    """The server issues 20 distinct session ids, each client's requests all carry its own,
    `/healthz` counts 20 open sessions while all are connected (0 before and after), and
    each client's call is answered with its own text."""
    issued: dict[int, list[str]] = {n: [] for n in range(20)}  # `mcp-session-id` answers
    carried: dict[int, set[str]] = {n: set() for n in range(20)}  # ids its requests sent
    answers: dict[int, str] = {}
    all_answered, release = anyio.Event(), anyio.Event()

    async def one(url: str, number: int) -> None:
        async def watch(response: httpx2.Response) -> None:
            sent = response.request.headers.get("mcp-session-id")
            if sent is None:
                issued[number].append(response.headers["mcp-session-id"])  # initialize
            else:
                carried[number].add(sent)

        http = httpx2.AsyncClient(
            timeout=httpx2.Timeout(30, read=300), event_hooks={"response": [watch]}
        )
        async with http, Client(streamable_http_client(url, http_client=http), mode="legacy") as c:
            result = await c.call_tool("relay__echo", {"text": f"client {number}"})
            answers[number] = first_text(result)
            if len(answers) == 20:
                all_answered.set()
            await release.wait()  # hold the session open until /healthz was asked

    cfg = config({"relay": script("relay")})
    async with http_front(cfg) as running, httpx2.AsyncClient(base_url=running.url) as http:
        with anyio.fail_after(30):
            await until_indexed(running.state)
            before = await health(http)
            async with anyio.create_task_group() as group:
                for number in range(20):
                    group.start_soon(one, running.mcp, number)
                await all_answered.wait()
                during = await health(http)
                release.set()
            after = await health(http)  # every client has had its DELETE answered

    assert answers == {n: f"client {n}" for n in range(20)}
    assert all(len(ids) == 1 for ids in issued.values()), issued
    assert len({ids[0] for ids in issued.values()}) == 20
    assert all(carried[n] == {issued[n][0]} for n in range(20)), carried
    assert (before["sessions"], during["sessions"], after["sessions"]) == (0, 20, 0)


async def test_healthz_counts_the_mcp_sessions_open_on_each_transport() -> None:
    """A streamable-HTTP session counts from `initialize` to its DELETE, an SSE stream while
    it is open, and a 2026-07-28 client (sessionless) not at all."""
    cfg = config({"relay": script("relay")})
    async with http_front(cfg) as running, httpx2.AsyncClient(base_url=running.url) as http:
        with anyio.fail_after(30):
            await until_indexed(running.state)
            counts = [(await health(http))["sessions"]]
            async with streamable_client(running.mcp, mode="legacy") as legacy:
                await legacy.call_tool("relay__echo", {"text": "legacy"})
                counts.append((await health(http))["sessions"])
                async with streamable_client(running.mcp) as modern:
                    await modern.call_tool("relay__echo", {"text": "modern"})
                    version = modern.protocol_version
                    counts.append((await health(http))["sessions"])
                async with sse_sdk_client(running.sse) as sse:
                    await sse.call_tool("relay__echo", {"text": "sse"})
                    counts.append((await health(http))["sessions"])
                await until_sessions(http, 1)  # the SSE stream is closed
            counts.append((await health(http))["sessions"])

    assert version == "2026-07-28"
    assert counts == [0, 1, 1, 2, 0]


async def run_inspector(inspector: Path, url: str, *options: str) -> dict[str, Any]:
    with anyio.fail_after(60):
        done = await anyio.run_process(
            [str(inspector), "--cli", url, "--transport", "http", *options],
            check=False,
            stderr=subprocess.PIPE,
        )
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-2000:]
    output: dict[str, Any] = json.loads(done.stdout)
    return output


async def test_the_inspector_cli_lists_and_calls_over_http(inspector: Path, front: Front) -> None:
    listing = await run_inspector(inspector, front.mcp, "--method", "tools/list")
    call = [
        "--method",
        "tools/call",
        "--tool-name",
        "http_everything__echo",
        "--tool-arg",
        "message=from the inspector",
    ]
    echoed = await run_inspector(inspector, front.mcp, *call)

    assert [t["name"] for t in listing["tools"]] == ["time__get_current_time", *META_TOOLS]
    assert echoed["content"][0]["text"] == "Echo: from the inspector"


@pytest.mark.parametrize("fmt", list(ToolFormat))
async def test_v1_route_answers_in_each_format_with_scores_and_the_token_bill(
    front: Front, fmt: ToolFormat
) -> None:
    async with httpx2.AsyncClient(base_url=front.url) as http:
        with anyio.fail_after(20):
            openapi = (await http.get("/openapi.json")).json()
            query = {"query": "echo a message", "format": fmt}
            answer = await http.post("/v1/route", json={**query, "k": 3})
            budgeted = await http.post("/v1/route", json={**query, "budget": 200})

    assert answer.status_code == 200, answer.text
    body = answer.json()
    validate(openapi, "RouteResponse", body)
    results = body["results"]
    assert results[0] == {**results[0], "name": "time__get_current_time", "pinned": True}
    assert {r["name"] for r in results[1:3]} == {"http_everything__echo", "sse_everything__echo"}
    assert [r["rank"] for r in results[1:]] == [1, 2, 3]
    assert all(r["bm25_score"] > 0 for r in results[1:])
    shapes = {
        ToolFormat.MCP: lambda t: t["name"] and "inputSchema" in t,
        ToolFormat.OPENAI: lambda t: t["type"] == "function" and "parameters" in t["function"],
        ToolFormat.ANTHROPIC: lambda t: t["name"] and "input_schema" in t,
    }
    assert len(body["tools"]) == 4 and all(shapes[fmt](t) for t in body["tools"])
    snapshot = front.state.snapshot
    counter = TokenCounter()
    routed = [snapshot.catalog.get(r["name"]) for r in results]
    assert body["tokens"]["routed"] == counter.count_tools([r for r in routed if r], fmt)
    assert body["tokens"]["full"] == counter.count_tools(snapshot.catalog.records, fmt)
    assert body["tokens"]["full"] > 5 * body["tokens"]["routed"]
    assert budgeted.status_code == 200, budgeted.text
    assert sum(r["tokens"] for r in budgeted.json()["results"] if not r["pinned"]) <= 200


async def test_v1_tools_lists_the_catalog_with_the_health_of_each_upstream(front: Front) -> None:
    async with httpx2.AsyncClient(base_url=front.url) as http:
        with anyio.fail_after(20):
            openapi = (await http.get("/openapi.json")).json()
            answer = await http.get("/v1/tools", params={"format": "anthropic"})
            health = await http.get("/healthz")

    body = answer.json()
    validate(openapi, "ToolsResponse", body)
    validate(openapi, "Health", health.json())
    upstreams = {u["name"]: u for u in body["upstreams"]}
    assert {n: (u["transport"], u["state"]) for n, u in upstreams.items()} == {
        "http_everything": ("streamable-http", "healthy"),
        "sse_everything": ("sse", "healthy"),
        "time": ("stdio", "healthy"),
    }
    assert len(body["tools"]) == sum(u["tool_count"] for u in upstreams.values())
    echo = next(t for t in body["tools"] if t["name"] == "sse_everything__echo")
    assert echo["healthy"] and "input_schema" in echo["definition"]
    assert (health.status_code, health.json()["status"]) == (200, "ready")


async def test_the_openapi_document_describes_the_rest_api_and_its_refusals(front: Front) -> None:
    async with httpx2.AsyncClient(base_url=front.url) as http:
        with anyio.fail_after(10):
            openapi = (await http.get("/openapi.json")).json()
            invalid = await http.post("/v1/route", json={"query": "x", "k": 2, "budget": 9})
            unknown = await http.post("/v1/route", json={"query": "x", "format": "yaml"})

    paths = {"/v1/route", "/v1/search", "/v1/tools", "/v1/auth", "/v1/auth/{server}"}
    paths |= {"/v1/secrets", "/v1/secrets/{server}"}
    paths |= {"/healthz", "/metrics"}
    assert set(openapi["paths"]) == paths
    route_codes = set(openapi["paths"]["/v1/route"]["post"]["responses"])
    assert route_codes == {"200", "401", "403", "413", "421", "422", "503"}
    assert set(openapi["paths"]["/healthz"]["get"]["responses"]) >= {"200", "503"}
    request = openapi["components"]["schemas"]["RouteRequest"]
    assert request["required"] == ["query"]
    assert (invalid.status_code, unknown.status_code) == (422, 422)
    validate(openapi, "HTTPValidationError", invalid.json())
    assert "securitySchemes" not in openapi.get("components", {})  # no token on this front


async def test_healthz_is_503_until_every_upstream_was_tried_and_indexed(
    installed: Installed,
) -> None:
    cfg = config(
        {
            "time": upstream_tests.time_server(installed),
            "silent": script("silent", timeouts={"connect": 2}),
        }
    )
    async with http_front(cfg) as running, httpx2.AsyncClient(base_url=running.url) as http:
        with anyio.fail_after(20):
            before = await http.get("/healthz")
            await until_ready(running.state)
            after = await http.get("/healthz")

    assert (before.status_code, before.json()["status"]) == (503, "starting")
    assert "silent" in before.json()["pending"]
    assert (after.status_code, after.json()["status"]) == (200, "ready")
    assert after.json()["healthy_upstreams"] == 1


async def test_dynamic_mode_gives_each_http_session_its_own_listing(tmp_path: Path) -> None:
    cfg = config({"counting": counting_upstream(tmp_path / "calls.log")}, mode="dynamic")
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with http_front(cfg) as running:
        with anyio.fail_after(20):
            await until_indexed(running.state)
            async with (
                streamable_client(running.mcp, mode="legacy", message_handler=on_message) as one,
                streamable_client(running.mcp, mode="legacy") as other,
            ):
                await one.call_tool("search_tools", {"query": "touch the counter"})
                await changed.wait()
                mine = [t.name for t in (await one.list_tools()).tools]
                theirs = [t.name for t in (await other.list_tools()).tools]
                capabilities = one.server_capabilities

    assert capabilities.tools is not None and capabilities.tools.list_changed is True
    assert mine == ["counting__touch", *META_TOOLS]
    assert theirs == META_TOOLS
