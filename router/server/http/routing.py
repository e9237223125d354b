"""What `/v1/route` and `/v1/tools` compute, apart from HTTP: a search's answer
(`router.server.listing.answer`) as the routed list with its token bill, and the catalog
with each upstream's health, a page at a time.

A `/v1/tools` cursor is opaque to clients: the snapshot generation, the catalog position the
next page starts at and a digest of the catalog (`Catalog.fingerprint`), base64url. A cursor
of another catalog is `CatalogChanged` (409): the catalog's order moved under it, so the
pages after it could skip or repeat tools, and the client lists again from the start. The
digest, not the generation, decides, so a replica with the same catalog reads another's
cursor. Each page is built in a worker thread, at most `MAX_PAGE` tools."""

from __future__ import annotations

import base64
import binascii
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import anyio.to_thread

from router.accounting.formats import ToolFormat, to_format
from router.accounting.tokens import TokenCounter
from router.core.catalog import Catalog, ToolRecord
from router.core.errors import CatalogChanged, InvalidParams
from router.policy.profiles import EVERYTHING, View
from router.server.access.visibility import Visibility
from router.server.http.rest_models import (
    CatalogTool,
    Match,
    RoutedTool,
    RouteResponse,
    TokenBill,
    ToolsResponse,
    UpstreamHealth,
)
from router.server.lifecycle.metrics import RouterMetrics
from router.server.lifecycle.state import RouterState
from router.server.listing.answer import SearchAnswer
from router.server.listing.index import Snapshot
from router.upstream import UpstreamStatus


class ListCosts:
    """Token counts, with the full list's count kept per snapshot and format: it is the same
    for every query until the catalog changes, and costly for a large catalog."""

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self.counter = counter or TokenCounter()
        self._full: dict[tuple[int, str], int] = {}
        self._lock = threading.Lock()

    def full(self, snapshot: Snapshot, fmt: ToolFormat) -> int:
        return self.full_as(snapshot, fmt, lambda tools: self.counter.count_tools(tools, fmt))

    def full_as(
        self, snapshot: Snapshot, shape: str, count: Callable[[Sequence[ToolRecord]], int]
    ) -> int:
        """The full list's count in a `shape` of one's own (`count` of every tool), cached
        like `full`'s."""
        key = (snapshot.generation, shape)
        with self._lock:
            if key not in self._full:
                # only the current snapshot is asked about: forget older generations
                self._full = {k: v for k, v in self._full.items() if k[0] == snapshot.generation}
                self._full[key] = count(snapshot.catalog.records)
            return self._full[key]


def route(
    found: SearchAnswer,
    fmt: ToolFormat,
    budget: int | None,
    *,
    costs: ListCosts,
    metrics: RouterMetrics | None = None,
    visibility: Visibility | None = None,
    pinned: Sequence[ToolRecord] | None = None,
) -> RouteResponse:
    """`/v1/route`'s answer: the pinned tools the answer's view may see, then its ranked
    ones, in `fmt`, and the bill against the full list that view may see; blocking (token
    counts): run it in a thread."""
    visibility = visibility or Visibility()
    snapshot, view, counter = found.snapshot, found.view, costs.counter
    listed = visibility.visible(view, snapshot.pinned if pinned is None else pinned)
    results = [RoutedTool.pin(record, counter.count_tool(record, fmt)) for record in listed]
    for scored in found.results:
        if scored.tool in listed:
            continue
        results.append(RoutedTool.ranked(scored, counter.count_tool(scored.tool, fmt)))
        listed.append(scored.tool)
    routed = counter.count_tools(listed, fmt)
    if view.unrestricted:
        full = costs.full(snapshot, fmt)
    else:  # the full list this caller would otherwise be sent
        full = costs.full_as(
            snapshot,
            f"{fmt.value} {view.profiles}",
            lambda every: counter.count_tools(visibility.visible(view, every), fmt),
        )
    if metrics is not None:
        metrics.listed("rest", len(listed))
        metrics.saved("rest", full - routed)
    return RouteResponse(
        query=found.query,
        format=fmt,
        mode=found.mode,
        k=found.k,
        budget=budget,
        tools=[to_format(record, fmt) for record in listed],
        results=results,
        tokens=TokenBill.of(counter.encoding_name, fmt, routed, full),
        catalog_tools=found.indexed,
        pending=found.pending,
        match=Match.of(found.fit, found.servers),
    )


DEFAULT_PAGE = 200
"""Tools in a `/v1/tools` page when the request does not say."""
MAX_PAGE = 1_000
"""The most tools a `/v1/tools` page holds."""


_DIGEST_CHARS = 16
_DIGESTS: weakref.WeakKeyDictionary[Catalog, str] = weakref.WeakKeyDictionary()
_DIGESTS_LOCK = threading.Lock()


@dataclass(frozen=True, slots=True)
class Cursor:
    """Where a `/v1/tools` page starts, in which catalog."""

    generation: int
    position: int
    digest: str

    def encode(self) -> str:
        raw = f"{self.generation}:{self.position}:{self.digest}"
        return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")

    @classmethod
    def decode(cls, cursor: str) -> Cursor:
        """The cursor `encode` made; `InvalidParams` for anything else."""
        try:
            raw = base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)).decode()
            generation, position, digest = raw.split(":")
            found = cls(int(generation), int(position), digest)
        except (binascii.Error, UnicodeDecodeError, ValueError):
            raise InvalidParams("cursor: not a cursor this router made") from None
        if found.generation < 0 or found.position < 0 or len(digest) != _DIGEST_CHARS:
            raise InvalidParams("cursor: not a cursor this router made")
        return found


def digest_of(catalog: Catalog) -> str:
    """A short digest of the catalog's names and tools, computed once per catalog
    (blocking: it serialises every tool's name and fingerprint)."""
    with _DIGESTS_LOCK:
        found = _DIGESTS.get(catalog)
    if found is None:
        found = catalog.fingerprint[:_DIGEST_CHARS]
        with _DIGESTS_LOCK:
            _DIGESTS[catalog] = found
    return found


async def catalog(
    state: RouterState,
    fmt: ToolFormat,
    view: View = EVERYTHING,
    *,
    limit: int = DEFAULT_PAGE,
    cursor: str | None = None,
) -> ToolsResponse:
    """A page of the indexed tools that `view` may see in `fmt` (at most `limit`, from
    `cursor` on), and the health of every upstream (with a restricted view, of those it
    sees tools of). The upstreams' states are read here; the page is built in a worker
    thread. A cursor of another catalog raises `CatalogChanged`."""
    snapshot = state.snapshot
    after = Cursor.decode(cursor) if cursor is not None else None
    statuses = state.pool.statuses()
    pending = set(state.pending_upstreams())
    ready = state.index.ready.is_set()
    page = _Page(fmt, view, after, min(max(limit, 1), MAX_PAGE))
    return await anyio.to_thread.run_sync(_catalog, state, snapshot, statuses, pending, ready, page)


@dataclass(frozen=True, slots=True)
class _Page:
    fmt: ToolFormat
    view: View
    after: Cursor | None
    limit: int


def _catalog(
    state: RouterState,
    snapshot: Snapshot,
    statuses: Mapping[str, UpstreamStatus],
    pending: set[str],
    ready: bool,
    page: _Page,
) -> ToolsResponse:
    every = snapshot.catalog.records
    digest = digest_of(snapshot.catalog)
    if page.after is not None and page.after.digest != digest:
        raise CatalogChanged(page.after.generation, snapshot.generation)
    # a tool for an MCP app alone is the host's to call, not a tool list's
    hidden = state.settings.visibility.hidden(snapshot, page.view) | snapshot.app_only
    if not page.view.unrestricted:
        seen = {r.server for position, r in enumerate(every) if position not in hidden}
        statuses = {name: status for name, status in statuses.items() if name in seen}
    records: list[ToolRecord] = []
    position = page.after.position if page.after is not None else 0
    while position < len(every) and len(records) < page.limit:
        if position not in hidden:
            records.append(every[position])
        position += 1
    while position < len(every) and position in hidden:
        position += 1
    following = None
    if position < len(every):
        following = Cursor(snapshot.generation, position, digest).encode()
    fmt = page.fmt
    upstreams = [
        UpstreamHealth(
            name=name,
            state=status.state.value,
            healthy=status.healthy,
            transport=status.transport,
            protocol_version=status.protocol_version,
            server_name=status.server_name,
            server_version=status.server_version,
            tool_count=status.tool_count,
            indexed=name not in pending,
            attempts=status.attempts,
            last_error=status.last_error,
            retry_in=status.retry_in,
            sign_in_needed=status.sign_in_needed,
            lazy=status.lazy,
            listed_at=status.listed_at,
            from_cache=status.from_cache,
        )
        for name, status in statuses.items()
    ]
    tools = [
        CatalogTool(
            name=record.qualified_name,
            server=record.server,
            tool=record.name,
            healthy=statuses[record.server].healthy if record.server in statuses else False,
            definition=to_format(record, fmt),
        )
        for record in records
    ]
    return ToolsResponse(
        ready=ready,
        generation=snapshot.generation,
        format=fmt,
        upstreams=upstreams,
        tools=tools,
        total=len(every) - len(hidden),
        next_cursor=following,
    )
