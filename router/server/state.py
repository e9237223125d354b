"""What every request handler reaches through the lifespan context: no globals."""

from __future__ import annotations

import difflib
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import anyio
import anyio.to_thread
from mcp.server.connection import Connection

from router.catalog import ToolRecord
from router.changes import Changes
from router.config import DEFAULT_RESULT_TOKENS
from router.embedding.base import Vectors
from router.errors import ToolDenied, ToolNotFound
from router.meta_tools import meta_tool_records
from router.metrics import RouterMetrics
from router.policy import ToolPolicy
from router.readiness import Coverage, coverage
from router.retrieval.types import ScoredTool, SearchMode
from router.retrieval.usage import ToolKey, UsageMemory
from router.server.approval import Approvals
from router.server.index import LiveIndex, Snapshot
from router.server.passthrough import ListChanges
from router.server.relay import HostRelay
from router.server.subscriptions import HostSubscriptions
from router.store.base import VectorStore
from router.store.local import LocalStore
from router.tracing import span
from router.upstream import UpstreamPool

Mode = Literal["search", "dynamic", "all"]


@dataclass(frozen=True, slots=True)
class LastSearch:
    """A connection's last `search_tools`: what a following call is learnt against."""

    query: str
    vector: Vectors
    shown: frozenset[ToolKey]


@dataclass
class RouterState:
    """The live index, the upstream pool and the routing settings."""

    index: LiveIndex
    pool: UpstreamPool
    k: int = 5
    mode: Mode = "search"
    # Dynamic mode: each connection's last search result (connections are weakly held so
    # a closed connection's state goes with it).
    session_tools: weakref.WeakKeyDictionary[Connection, tuple[str, ...]] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    changes: Changes = field(default_factory=Changes)
    """Notified on every upstream status change, index swap and model load."""
    model_ready: anyio.Event = field(default_factory=anyio.Event)
    """Set once the embedding model is loaded (or failed, or there is none)."""
    result_tokens_for: Callable[[str], int] = lambda _server: DEFAULT_RESULT_TOKENS
    """A server's result limit in tokens, 0 for none (`RouterConfig.result_tokens_for`)."""
    startup_deadline: float = 0.0
    """When waiting for starting upstreams stops (anyio clock): start + connect timeout."""
    usage: UsageMemory | None = None
    """Usage feedback (`router.learn`), set once the model is loaded; None when off."""
    last_searches: weakref.WeakKeyDictionary[Connection, LastSearch] = field(
        default_factory=weakref.WeakKeyDictionary
    )
    list_changes: ListChanges = field(default_factory=ListChanges)
    """Pass-through mode: the clients that listed the tools, told when the listing changes."""
    subscriptions: HostSubscriptions = field(default_factory=HostSubscriptions)
    """The hosts subscribed to upstream resources (`resources/subscribe`)."""
    relay: HostRelay = field(default_factory=HostRelay)
    """Carries what upstreams ask of the host to the host session whose call caused it."""
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    """`router.policy`: denied tools are not in the index; confirmed ones ask first."""
    approvals: Approvals = field(default_factory=Approvals)
    store: VectorStore = field(default_factory=lambda: LocalStore(None))
    """Where the tool vectors live (`router.store`); its status shows in `/healthz`."""
    metrics: RouterMetrics = field(default_factory=RouterMetrics)
    """What `GET /metrics` shows (`router.metrics`); upstream states are read at scrape time."""

    def __post_init__(self) -> None:
        self.metrics.watch(
            self.pool.statuses, lambda: len(self.snapshot.catalog), self.store.status
        )

    @property
    def snapshot(self) -> Snapshot:
        return self.index.snapshot

    @property
    def meta_tools(self) -> tuple[ToolRecord, ToolRecord]:
        return meta_tool_records(self.k)

    def coverage(self) -> Coverage:
        """Which upstreams a search now would miss, and why."""
        # A re-index after a change does not count: the previous tools stay searchable.
        indexed = {name: self.index.has_built(name) for name in self.pool.upstreams}
        return coverage(self.pool.statuses(), indexed, not self.model_ready.is_set())

    def pending_upstreams(self) -> list[str]:
        """Upstreams whose tools are not searchable now: starting (connecting, or listed and
        being indexed) or down before their first listing."""
        return list(self.coverage().unsearched)

    async def until_covered(self) -> Coverage:
        """Wait until every starting upstream is indexed or down and the model is loaded, at
        most until the startup deadline; then say what is still missing."""
        with anyio.move_on_at(self.startup_deadline):
            while not self.coverage().complete:
                await self.changes.wait()
        return self.coverage()

    async def search(
        self, query: str, k: int | None = None, connection: Connection | None = None
    ) -> list[ScoredTool]:
        """Top-k tools, once the starting upstreams are indexed (see `until_covered`);
        embedding runs in a worker thread. Tools called after similar earlier searches
        rise (`usage`); with a `connection`, this search is what its next call teaches."""
        size = k or self.k
        with span("mcp-router search", {"mcp_router.k": size}) as current:
            results = await self._search(query, size, connection)
            current.set_attribute("mcp_router.results", len(results))
        return results

    async def _search(
        self, query: str, size: int, connection: Connection | None
    ) -> list[ScoredTool]:
        await self.until_covered()
        retriever = self.snapshot.retriever
        if retriever is None:
            return []
        usage = self.usage
        mode = retriever.modes[0]

        def run() -> tuple[list[ScoredTool], Vectors | None]:
            if usage is None or mode is SearchMode.BM25:
                return retriever.search(query, k=size, mode=mode), None
            vectors = retriever.embed_query(query)
            lift = usage.lift(vectors[0])
            found = retriever.search(query, k=size, mode=mode, query_vectors=vectors, lift=lift)
            return found, vectors[0]

        started = time.perf_counter()
        results, vector = await anyio.to_thread.run_sync(run)
        self.metrics.searched(time.perf_counter() - started, len(results))
        if connection is not None and vector is not None:
            shown = frozenset(r.tool.key for r in results)
            self.last_searches[connection] = LastSearch(query, vector, shown)
        return results

    async def learn(self, connection: Connection, record: ToolRecord) -> None:
        """A call succeeded: if the connection's last search showed this tool, remember
        the pair, once (the SQLite write runs in a worker thread)."""
        usage, last = self.usage, self.last_searches.get(connection)
        if usage is None or last is None or record.key not in last.shown:
            return
        self.last_searches[connection] = LastSearch(
            last.query, last.vector, last.shown - {record.key}
        )
        await anyio.to_thread.run_sync(usage.record, last.query, last.vector, [record.key])

    async def resolve_when_ready(self, name: str) -> ToolRecord:
        """`resolve`, but a name unknown while upstreams are starting waits for them first:
        `time__get_current_time` called a second after start is not an unknown tool."""
        try:
            return self.resolve(name)
        except ToolNotFound:
            if self.coverage().complete:
                raise
        await self.until_covered()
        return self.resolve(name)

    def resolve(self, name: str) -> ToolRecord:
        """The tool a client named, by qualified name; else `ToolNotFound` with suggestions."""
        snapshot = self.snapshot
        catalog = snapshot.catalog
        record = catalog.get(name)
        if record is not None:
            return record
        denied = snapshot.denied.get(name)
        if denied is not None:
            raise ToolDenied(name, self.policy.rule_for(denied).rule)
        names = [r.qualified_name for r in catalog.records]
        suggestions = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        if not suggestions:
            # a bare upstream tool name: offer its qualified forms
            suggestions = [r.qualified_name for r in catalog.records if r.name == name][:3]
        raise ToolNotFound(name, tuple(suggestions))
