"""`GET /metrics`: what the router counts, scraped from a real HTTP front and parsed with
prometheus_client's own parser, and the parts of `router.server.lifecycle.metrics` on their own."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import anyio
import httpx2
import pytest
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from prometheus_client.parser import text_string_to_metric_families

from router.accounting.tokens import TokenCounter
from router.core.catalog import Catalog, ToolSpec
from router.core.errors import UpstreamTimeout, UpstreamUnavailable
from router.server.http.auth.security import SecurityPolicy
from router.server.lifecycle.metrics import CONTENT_TYPE, RouterMetrics, error_kind
from router.server.lifecycle.observe import method_label, surface_of
from tests.support.http_serving import (
    Front,
    config,
    http_front,
    open_session,
    sse_data,
    sse_sdk_client,
    until_indexed,
)

pytestmark = pytest.mark.processes

TRACED = Path(__file__).resolve().parents[2] / "upstreams" / "traced.py"
Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def traced_upstream() -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(TRACED)]}


def parse(text: str) -> Samples:
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def value(samples: Samples, name: str, **labels: str) -> float:
    return samples.get((name, frozenset(labels.items())), 0.0)


async def scrape(front: Front, headers: dict[str, str] | None = None) -> Samples:
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{front.url}/metrics", headers=headers)
    assert answer.status_code == 200, answer.text
    assert answer.headers["content-type"] == CONTENT_TYPE
    return parse(answer.text)


@pytest.fixture
async def front() -> AsyncIterator[Front]:
    async with http_front(config({"traced": traced_upstream()})) as running:
        with anyio.fail_after(20):
            await until_indexed(running.state)
        yield running


def delta(before: Samples, after: Samples, name: str, **labels: str) -> float:
    return value(after, name, **labels) - value(before, name, **labels)


async def rpc(
    http: httpx2.AsyncClient, front: Front, session: dict[str, str], method: str, params: Any
) -> dict[str, Any]:
    """One request on a raw streamable-HTTP session (an SDK client lists tools on its own)."""
    message = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    answer = await http.post(front.mcp, json=message, headers=session)
    assert answer.status_code == 200, answer.text
    response: dict[str, Any] = sse_data(answer.text)[-1]
    return response


async def test_a_search_and_calls_over_streamable_http_move_each_counter_by_exactly_that_much(
    front: Front,
) -> None:
    before = await scrape(front)
    async with httpx2.AsyncClient(timeout=20) as http:
        session = await open_session(http, front.mcp)
        listing = (await rpc(http, front, session, "tools/list", {}))["result"]
        search = {"name": "search_tools", "arguments": {"query": "refund a payment", "k": 3}}
        found = (await rpc(http, front, session, "tools/call", search))["result"]
        ok = await rpc(http, front, session, "tools/call", {"name": "traced__meta"})
        via = await rpc(
            http,
            front,
            session,
            "tools/call",
            {"name": "call_tool", "arguments": {"name": "traced__fail"}},
        )
        broken = await rpc(http, front, session, "tools/call", {"name": "traced__broken"})
    assert ok["result"]["isError"] is False and via["result"]["isError"] is True
    assert broken["error"]["code"] == -32000
    after = await scrape(front)

    requests = "mcp_router_requests_total"
    assert delta(before, after, requests, surface="streamable-http", method="initialize") == 1
    assert delta(before, after, requests, surface="streamable-http", method="tools/list") == 1
    assert delta(before, after, requests, surface="streamable-http", method="tools/call") == 4
    assert delta(before, after, requests, surface="rest", method="GET /metrics") == 1

    assert delta(before, after, "mcp_router_search_duration_seconds_count") == 1
    shown = len(found["structuredContent"]["tools"])
    assert shown >= 1
    assert delta(before, after, "mcp_router_search_results_total") == shown
    assert delta(before, after, "mcp_router_searches_empty_total") == 0

    upstream = {"upstream": "traced"}
    assert delta(before, after, "mcp_router_upstream_calls_total", **upstream) == 3
    assert delta(before, after, "mcp_router_upstream_call_duration_seconds_count", **upstream) == 3
    errors = "mcp_router_upstream_errors_total"
    assert delta(before, after, errors, kind="tool_error", **upstream) == 1
    assert delta(before, after, errors, kind="jsonrpc", **upstream) == 1
    assert value(after, "mcp_router_upstream_state", state="healthy", **upstream) == 1
    assert value(after, "mcp_router_upstream_state", state="unhealthy", **upstream) == 0
    assert value(after, "mcp_router_upstream_tools", **upstream) == 9
    assert value(after, "mcp_router_catalog_tools") == 9

    # the listing held the two meta-tools instead of the nine tools of the catalog
    assert len(listing["tools"]) == 2
    listed = "mcp_router_tools_listed_total"
    assert delta(before, after, listed, surface="streamable-http") == 2
    state = front.state
    counter = TokenCounter()
    full = counter.count_tools(state.snapshot.catalog.records)
    saved = full - counter.count_tools(state.meta_tools)
    assert saved > 0
    assert delta(before, after, "mcp_router_tokens_saved_total", surface="streamable-http") == saved


async def test_rest_routes_and_sse_sessions_count_under_their_own_surface(front: Front) -> None:
    before = await scrape(front)
    async with httpx2.AsyncClient(timeout=10) as http:
        routed = await http.post(
            f"{front.url}/v1/route", json={"query": "email the receipt", "k": 2}
        )
        assert routed.status_code == 200, routed.text
        await http.get(f"{front.url}/healthz")
    async with sse_sdk_client(front.sse) as client:
        with anyio.fail_after(20):
            await client.list_tools()
    after = await scrape(front)

    requests = "mcp_router_requests_total"
    assert delta(before, after, requests, surface="rest", method="POST /v1/route") == 1
    assert delta(before, after, requests, surface="rest", method="GET /healthz") == 1
    assert delta(before, after, requests, surface="sse", method="tools/list") == 1
    assert delta(before, after, requests, surface="streamable-http", method="tools/list") == 0
    bill = routed.json()["tokens"]
    assert delta(before, after, "mcp_router_search_duration_seconds_count") == 1
    assert delta(before, after, "mcp_router_tools_listed_total", surface="rest") == 2
    saved = bill["full"] - bill["routed"]
    assert delta(before, after, "mcp_router_tokens_saved_total", surface="rest") == saved
    assert delta(before, after, "mcp_router_tools_listed_total", surface="sse") == 2


async def test_metrics_are_behind_the_token_like_the_rest_api() -> None:
    policy = SecurityPolicy(token="s3cret")
    async with http_front(config({"traced": traced_upstream()}), policy) as running:
        async with httpx2.AsyncClient(timeout=10) as http:
            refused = await http.get(f"{running.url}/metrics")
            foreign = await http.get(
                f"{running.url}/metrics",
                headers={"Authorization": "Bearer s3cret", "Origin": "https://evil.example"},
            )
        assert refused.status_code == 401
        assert foreign.status_code == 403
        samples = await scrape(running, {"Authorization": "Bearer s3cret"})
    assert value(samples, "mcp_router_info", version=_version()) == 1


def _version() -> str:
    from router import __version__

    return __version__


def test_each_router_has_a_registry_of_its_own() -> None:
    first, second = RouterMetrics(), RouterMetrics()
    first.request("stdio", "tools/list")
    assert (
        value(
            parse(first.exposition().decode()),
            "mcp_router_requests_total",
            surface="stdio",
            method="tools/list",
        )
        == 1
    )
    assert (
        value(
            parse(second.exposition().decode()),
            "mcp_router_requests_total",
            surface="stdio",
            method="tools/list",
        )
        == 0
    )


def test_a_failing_call_counts_once_with_its_kind_and_is_timed() -> None:
    metrics = RouterMetrics()
    with pytest.raises(UpstreamTimeout), metrics.upstream_call("slow"):
        raise UpstreamTimeout("slow", "tools/call: no answer within 1s")
    samples = parse(metrics.exposition().decode())
    assert value(samples, "mcp_router_upstream_calls_total", upstream="slow") == 1
    assert value(samples, "mcp_router_upstream_errors_total", upstream="slow", kind="timeout") == 1
    assert value(samples, "mcp_router_upstream_call_duration_seconds_count", upstream="slow") == 1
    assert error_kind(UpstreamUnavailable("x", "down")) == "unavailable"
    assert error_kind(MCPError(code=-32000, message="no")) == "jsonrpc"
    assert error_kind(ValueError()) == "other"


def test_listings_are_counted_at_scrape_time_and_only_where_metrics_are_served() -> None:
    catalog = Catalog.from_specs(
        ToolSpec(
            server="s",
            name=f"tool_{i}",
            description=f"does thing number {i} " * 5,
            input_schema={"type": "object", "properties": {"x": {"type": "string"}}},
        )
        for i in range(8)
    )
    records = catalog.records
    silent = RouterMetrics()  # stdio: nobody scrapes, so no listing is kept for counting
    silent.listing_sent("stdio", 1, records, records[:1])
    assert not silent._pending

    served = RouterMetrics()
    served.counts_tokens = True
    for _ in range(3):
        served.listing_sent("sse", 1, records, records[:2])
    samples = parse(served.exposition().decode())
    assert value(samples, "mcp_router_tools_listed_total", surface="sse") == 6
    assert value(samples, "mcp_router_tokens_saved_total", surface="sse") == 0  # not yet
    served.settle()
    counter = TokenCounter()
    saved = counter.count_tools(records) - counter.count_tools(records[:2])
    samples = parse(served.exposition().decode())
    assert value(samples, "mcp_router_tokens_saved_total", surface="sse") == 3 * saved


def test_unscraped_listings_stay_bounded_and_what_is_dropped_is_counted() -> None:
    """With nobody scraping, many generations and many distinct listings keep a bounded
    amount; each listing left uncounted is counted as such."""
    from router.server.lifecycle.metrics import MAX_PENDING_GENERATIONS, MAX_PENDING_LISTINGS

    catalog = Catalog.from_specs(
        ToolSpec(server="s", name=f"tool_{i}", description=f"thing {i}") for i in range(40)
    )
    records = catalog.records
    metrics = RouterMetrics()
    metrics.counts_tokens = True
    for generation in range(1, 6):  # five re-indexes, one listing each
        metrics.listing_sent("sse", generation, records, records[:1])
    listings = 0
    for first in range(len(records)):  # every distinct pair of tools: 780 listings, twice
        for second in range(first + 1, len(records)):
            metrics.listing_sent("sse", 5, records, (records[first], records[second]))
            metrics.listing_sent("rest", 5, records, (records[first], records[second]))
            listings += 2

    assert len(metrics._pending) == MAX_PENDING_GENERATIONS
    assert len(metrics._pending[5].counts) == MAX_PENDING_LISTINGS
    uncounted = value(parse(metrics.exposition().decode()), "mcp_router_listings_uncounted_total")
    assert uncounted == 3 + (listings + 1 - MAX_PENDING_LISTINGS)


def test_stdio_requests_have_no_http_request_and_unknown_methods_count_as_other() -> None:
    def context(request: object) -> ServerRequestContext[Any, Any]:
        return cast(ServerRequestContext[Any, Any], SimpleNamespace(request=request))

    assert surface_of(context(None)) == "stdio"
    assert surface_of(context(SimpleNamespace(url=SimpleNamespace(path="/messages/")))) == "sse"
    assert surface_of(context(SimpleNamespace(url=SimpleNamespace(path="/mcp")))) == (
        "streamable-http"
    )
    assert method_label("tools/call") == "tools/call"
    assert method_label("notifications/initialized") == "notifications/initialized"
    assert method_label("x/" + "a" * 100) == "other"


def test_a_router_s_own_metrics_count_from_when_a_front_serves_them() -> None:
    """`RouterState.metrics` records nothing over stdio (nobody can read it there); once
    the HTTP front serves `/metrics` (`serve`), everything counts."""
    metrics = RouterMetrics(recording=False)
    metrics.request("stdio", "tools/list")
    with metrics.upstream_call("s"):
        pass
    metrics.serve()
    metrics.request("streamable-http", "tools/list")
    samples = parse(metrics.exposition().decode())
    assert value(samples, "mcp_router_requests_total", surface="stdio", method="tools/list") == 0
    requests = value(
        samples, "mcp_router_requests_total", surface="streamable-http", method="tools/list"
    )
    assert requests == 1
    assert value(samples, "mcp_router_upstream_calls_total", upstream="s") == 0
    assert metrics.counts_tokens
