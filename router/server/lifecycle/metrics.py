"""The router's Prometheus metrics, in one registry per router (not the process-wide one, so
tests and several fronts in one process never share counts).

Updated where the router already measures: searches (`Searcher.search`, `/v1/route`),
forwarded calls (the `forward` stage of `router.server.calls.pipeline`), listings, and every
inbound request (`router.server.lifecycle.observe`).
Upstream states are read from the pool at scrape time, so they
are always current. Tokens saved by a listing are counted when `/metrics` is scraped, never
on the request path: counting loads tiktoken and, once per catalog generation, counts the
full catalog, work that grows with it and that a server never scraped must not pay for.

A router's own metrics (`RouterState.metrics`) record nothing, and prometheus_client stays
unimported, until a front that serves `/metrics` calls `serve` (the HTTP front, at start):
over stdio nobody can read them.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from time import perf_counter
from typing import TYPE_CHECKING, cast

from mcp.shared.exceptions import MCPError

from router import __version__
from router.core.catalog import ToolRecord
from router.core.errors import UpstreamProtocolError, UpstreamTimeout, UpstreamUnavailable
from router.upstream.state import UpstreamState, UpstreamStatus

if TYPE_CHECKING:  # prometheus_client: imported when metrics are served (`RouterMetrics.serve`)
    from prometheus_client.core import Metric
    from prometheus_client.registry import Collector

    from router.accounting.tokens import TokenCounter
    from router.store.base import StoreStatus


def __getattr__(name: str) -> str:
    if name == "CONTENT_TYPE":  # what `GET /metrics` answers in: prometheus_client's format
        from prometheus_client.exposition import CONTENT_TYPE_LATEST

        return CONTENT_TYPE_LATEST
    raise AttributeError(name)


SEARCH_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
CALL_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)


def error_kind(error: BaseException) -> str:
    """The `kind` label of a failed upstream call."""
    if isinstance(error, UpstreamUnavailable):
        return "unavailable"
    if isinstance(error, UpstreamTimeout):
        return "timeout"
    if isinstance(error, UpstreamProtocolError):
        return "protocol"
    if isinstance(error, MCPError):
        return "jsonrpc"
    return "other"


MAX_PENDING_GENERATIONS = 2
"""Catalog generations whose listings wait for the next scrape (each holds its catalog)."""
MAX_PENDING_LISTINGS = 1_000
"""Distinct listings (surface and tools) kept per generation between two scrapes."""


@dataclass
class _Listings:
    """The listings of one catalog generation whose tokens are not counted yet."""

    catalog: tuple[ToolRecord, ...]
    counts: dict[tuple[str, tuple[str, ...]], int] = field(default_factory=dict)
    """(surface, listed names) -> how many times that list was sent."""
    records: dict[tuple[str, ...], tuple[ToolRecord, ...]] = field(default_factory=dict)


class RouterMetrics:
    """Every metric of one router; `exposition()` renders them for `GET /metrics`. With
    `recording` False nothing is counted (nor prometheus_client imported) until `serve`."""

    def __init__(self, *, recording: bool = True) -> None:
        self.recording = False
        self._statuses: Callable[[], Mapping[str, UpstreamStatus]] = dict
        self._store: Callable[[], StoreStatus] | None = None
        self._catalog_size: Callable[[], int] = lambda: 0
        self._held: Callable[[], Iterable[str]] = tuple
        self._pending: dict[int, _Listings] = {}
        self._lock = threading.Lock()
        self._counter: TokenCounter | None = None
        self._full: tuple[int, int] | None = None  # (generation, tokens of the full list)
        self.counts_tokens = False
        """Set by a front that serves `/metrics`: only then are listings kept for counting."""
        if recording:
            self._record()

    def serve(self) -> None:
        """A front serves `/metrics`: count from now on, what listings save included."""
        self.counts_tokens = True
        self._record()

    def _record(self) -> None:
        if self.recording:
            return
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry()
        registry = self.registry
        self.requests = Counter(
            "mcp_router_requests",
            "Requests received, by surface (stdio, streamable-http, sse, rest) and method "
            "(the MCP method, or the REST route)",
            ["surface", "method"],
            registry=registry,
        )
        self.search_seconds = Histogram(
            "mcp_router_search_duration_seconds",
            "Time to rank the tools for one query (query embedding included)",
            buckets=SEARCH_BUCKETS,
            registry=registry,
        )
        self.search_results = Counter(
            "mcp_router_search_results",
            "Tools returned by searches (divide by the histogram's _count for the mean)",
            registry=registry,
        )
        self.empty_searches = Counter(
            "mcp_router_searches_empty", "Searches that found no tool", registry=registry
        )
        self.tools_listed = Counter(
            "mcp_router_tools_listed",
            "Tool definitions sent in listings (tools/list, /v1/route), by surface",
            ["surface"],
            registry=registry,
        )
        self.tokens_saved = Counter(
            "mcp_router_tokens_saved",
            "Tokens (cl100k) that listings saved against listing every tool, by surface: "
            "MCP tools/list in the MCP format, counted when /metrics is read; /v1/route in "
            "the format asked",
            ["surface"],
            registry=registry,
        )
        self.listings_uncounted = Counter(
            "mcp_router_listings_uncounted",
            "Listings whose saved tokens were not counted: more kinds than are kept between "
            "two scrapes of /metrics, or of a catalog generation since replaced twice",
            registry=registry,
        )
        self.upstream_calls = Counter(
            "mcp_router_upstream_calls",
            "tools/call requests forwarded to an upstream",
            ["upstream"],
            registry=registry,
        )
        self.upstream_errors = Counter(
            "mcp_router_upstream_errors",
            "Forwarded calls that failed, by kind: unavailable, timeout, protocol, jsonrpc "
            "(the upstream's JSON-RPC error), tool_error (an isError result), other",
            ["upstream", "kind"],
            registry=registry,
        )
        self.upstream_call_seconds = Histogram(
            "mcp_router_upstream_call_duration_seconds",
            "Time from forwarding a call to its answer, by upstream",
            ["upstream"],
            buckets=CALL_BUCKETS,
            registry=registry,
        )
        self.code_runs = Counter(
            "mcp_router_code_runs",
            "Programs run by execute (code mode), by outcome: ok, error (the program raised), "
            "limit (a router.code limit stopped it)",
            ["outcome"],
            registry=registry,
        )
        self.code_run_seconds = Histogram(
            "mcp_router_code_run_duration_seconds",
            "Time from an execute call's start to its program's end, tool calls included",
            buckets=CALL_BUCKETS,
            registry=registry,
        )
        self.audit_writes = Counter(
            "mcp_router_audit_writes",
            "Lines written to the audit trail (router.audit), by result: ok, failed (a full "
            "disk or an unwritable file; with required, the call was refused)",
            ["result"],
            registry=registry,
        )
        self.over_quota_calls = Counter(
            "mcp_router_over_quota",
            "Calls refused before their upstream because the caller was over a quota "
            "(router.quotas), by quota",
            ["quota"],
            registry=registry,
        )
        registry.register(cast("Collector", _LiveCollector(self)))
        self.recording = True

    def watch(
        self,
        statuses: Callable[[], Mapping[str, UpstreamStatus]],
        catalog_size: Callable[[], int],
        store: Callable[[], StoreStatus] | None = None,
        held: Callable[[], Iterable[str]] | None = None,
    ) -> None:
        """Where scrapes read the upstreams' states, the catalog's size, the store's, and
        the servers of the tools that tool pinning holds (one entry per held tool)."""
        self._statuses, self._catalog_size = statuses, catalog_size
        self._store = store
        if held is not None:
            self._held = held

    def over_quota(self, quota: str) -> None:
        if not self.recording:
            return
        self.over_quota_calls.labels(quota).inc()

    def audit_written(self, ok: bool) -> None:
        if not self.recording:
            return
        self.audit_writes.labels("ok" if ok else "failed").inc()

    def request(self, surface: str, method: str) -> None:
        if not self.recording:
            return
        self.requests.labels(surface, method).inc()

    def searched(self, seconds: float, results: int) -> None:
        if not self.recording:
            return
        self.search_seconds.observe(seconds)
        self.search_results.inc(results)
        if not results:
            self.empty_searches.inc()

    @contextmanager
    def upstream_call(self, upstream: str) -> Iterator[None]:
        """Count and time one forwarded call; an exception out of it counts as an error."""
        if not self.recording:
            yield
            return
        started = perf_counter()
        try:
            yield
        except Exception as exc:
            self.upstream_errors.labels(upstream, error_kind(exc)).inc()
            raise
        finally:
            self.upstream_calls.labels(upstream).inc()
            self.upstream_call_seconds.labels(upstream).observe(perf_counter() - started)

    def code_run(self, outcome: str, seconds: float) -> None:
        if not self.recording:
            return
        self.code_runs.labels(outcome).inc()
        self.code_run_seconds.observe(seconds)

    def tool_error(self, upstream: str) -> None:
        if not self.recording:
            return
        self.upstream_errors.labels(upstream, "tool_error").inc()

    def listed(self, surface: str, count: int) -> None:
        if not self.recording:
            return
        self.tools_listed.labels(surface).inc(count)

    def listing_sent(
        self,
        surface: str,
        generation: int,
        catalog: tuple[ToolRecord, ...],
        tools: Iterable[ToolRecord],
    ) -> None:
        """A listing of `tools` was sent where the whole `catalog` (of `generation`) would
        have been: its tools count now, the tokens it saved at the next scrape."""
        listed = tuple(tools)
        self.listed(surface, len(listed))
        if not self.counts_tokens:
            return
        names = tuple(t.qualified_name for t in listed)
        with self._lock:
            pending = self._pending.get(generation)
            if pending is None:
                pending = self._pending[generation] = _Listings(catalog)
                # Unscraped, this would grow for ever: keep the newest generations only.
                while len(self._pending) > MAX_PENDING_GENERATIONS:
                    dropped = self._pending.pop(min(self._pending))
                    self.listings_uncounted.inc(sum(dropped.counts.values()))
            key = (surface, names)
            if key not in pending.counts and len(pending.counts) >= MAX_PENDING_LISTINGS:
                self.listings_uncounted.inc()
                return
            pending.counts[key] = pending.counts.get(key, 0) + 1
            pending.records.setdefault(names, listed)

    def saved(self, surface: str, tokens: int) -> None:
        """Tokens a listing saved, counted by the caller (`/v1/route` has the figures)."""
        if not self.recording:
            return
        self.tokens_saved.labels(surface).inc(max(tokens, 0))

    def settle(self) -> None:
        """Count the tokens of the listings sent since the last scrape (blocking: tiktoken;
        run it in a worker thread)."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        if self._counter is None:
            from router.accounting.tokens import TokenCounter

            self._counter = TokenCounter()
        counter = self._counter
        for generation in sorted(pending):
            listings = pending[generation]
            if self._full is None or self._full[0] != generation:
                self._full = (generation, counter.count_tools(listings.catalog))
            full = self._full[1]
            costs = {n: counter.count_tools(r) for n, r in listings.records.items()}
            for (surface, names), times in listings.counts.items():
                self.saved(surface, (full - costs[names]) * times)

    def exposition(self) -> bytes:
        """The text format of every metric (call `settle` first)."""
        from prometheus_client import generate_latest

        self._record()
        return generate_latest(self.registry)


class _LiveCollector:
    """What is read at scrape time: each upstream's state and tools, the catalog's size."""

    def __init__(self, metrics: RouterMetrics) -> None:
        self._metrics = metrics

    def collect(self) -> Iterable[Metric]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, InfoMetricFamily

        info = InfoMetricFamily("mcp_router", "The router's version")
        info.add_metric([], {"version": __version__})
        state = GaugeMetricFamily(
            "mcp_router_upstream_state",
            "1 for each upstream's current state (idle, connecting, healthy, unhealthy, stopped)",
            labels=["upstream", "state"],
        )
        tools = GaugeMetricFamily(
            "mcp_router_upstream_tools", "Tools each upstream listed last", labels=["upstream"]
        )
        held = GaugeMetricFamily(
            "mcp_router_tools_held",
            "Tools held by tool pinning (router.pinning: changed since approved, or new under "
            "strict), by upstream; mcp-router tools review shows them",
            labels=["upstream"],
        )
        held_by: dict[str, int] = {}
        for server in self._metrics._held():
            held_by[server] = held_by.get(server, 0) + 1
        for name, status in sorted(self._metrics._statuses().items()):
            for value in UpstreamState:
                state.add_metric([name, value.value], 1.0 if status.state is value else 0.0)
            tools.add_metric([name], status.tool_count)
            held.add_metric([name], held_by.get(name, 0))
        catalog = GaugeMetricFamily("mcp_router_catalog_tools", "Tools in the searchable catalog")
        catalog.add_metric([], self._metrics._catalog_size())
        families: list[Metric] = [info, state, tools, catalog, held]
        if self._metrics._store is not None:
            store = self._metrics._store()
            embedded = CounterMetricFamily(
                "mcp_router_store_embedded",
                "Tools this process embedded (0 on a replica whose shared store had them)",
                labels=["store"],
            )
            embedded.add_metric([store.kind], store.embedded)
            up = GaugeMetricFamily(
                "mcp_router_store_up", "1 while the store answers", labels=["store", "search"]
            )
            up.add_metric([store.kind, store.search], 1.0 if store.state == "ok" else 0.0)
            families += [embedded, up]
        return families

    def describe(self) -> Iterable[Metric]:
        return []  # nothing to check for clashes at register time: the names are fixed
