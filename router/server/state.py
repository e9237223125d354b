"""What every request handler reaches through the lifespan context: no globals.

`RouterState` only composes: each part owns one concept (readiness at start, search and
usage learning, name resolution, per-connection memory, the host-facing channels, policy),
and the state holds the settings the handlers read besides.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

from mcp.server.connection import Connection

from router.catalog import ToolRecord
from router.changes import Changes
from router.code_mode.meta import code_meta_records
from router.config import DEFAULT_RESULT_TOKENS
from router.meta_tools import meta_tool_records
from router.policy import ToolPolicy
from router.profiles import View
from router.retrieval.types import ScoredTool
from router.sealing import Sealer
from router.server.approval import Approvals
from router.server.code_runs import CodeRuns
from router.server.connections import ConnectionMemory
from router.server.held_calls import HeldCalls
from router.server.index import LiveIndex, Snapshot
from router.server.kept import KeptResults
from router.server.listen import ListenStreams
from router.server.metrics import RouterMetrics
from router.server.passthrough import ListChanges
from router.server.readiness import Readiness
from router.server.relay import HostRelay
from router.server.resolution import ToolNames
from router.server.searching import Searcher
from router.server.subscriptions import HostSubscriptions
from router.server.visibility import Visibility
from router.store.base import VectorStore
from router.store.local import LocalStore
from router.upstream import UpstreamPool
from router.upstream.eras import HostEra

Mode = Literal["search", "dynamic", "all", "code"]


@dataclass
class RouterState:
    """The live index, the upstream pool, the routing settings and the parts built on them."""

    index: LiveIndex
    pool: UpstreamPool
    readiness: Readiness
    """Whether a search would see every starting upstream; waiting until it would."""
    k: int = 5
    mode: Mode = "search"
    result_tokens_for: Callable[[str], int] = lambda _server: DEFAULT_RESULT_TOKENS
    """A server's result limit in tokens, 0 for none (`RouterConfig.result_tokens_for`)."""
    kept: KeptResults = field(default_factory=KeptResults)
    """Cut tool results kept for `read_result` (`router.limits.keep_seconds`, `keep_mib`)."""
    list_changes: ListChanges = field(default_factory=ListChanges)
    """Pass-through mode: the clients that listed the tools, told when the listing changes."""
    subscriptions: HostSubscriptions = field(default_factory=HostSubscriptions)
    """The hosts subscribed to upstream resources (`resources/subscribe`)."""
    relay: HostRelay = field(default_factory=HostRelay)
    """Carries what upstreams ask of the host to the host session whose call caused it."""
    policy: ToolPolicy = field(default_factory=ToolPolicy)
    """`router.policy`: denied tools are not in the index; confirmed ones ask first."""
    approvals: Approvals = field(default_factory=Approvals)
    sealer: Sealer = field(default_factory=Sealer)
    """Seals what a 2026-07-28 host brings back (`router.sealing`): one per process, its
    key and nonce ledger the store's (`app.py` hands it to approvals, held calls and runs)."""
    visibility: Visibility = field(default_factory=Visibility)
    """`router.profiles`: what the current request's principal may list, search and call."""
    store: VectorStore = field(default_factory=lambda: LocalStore(None))
    """Where the tool vectors live (`router.store`); its status shows in `/healthz`."""
    metrics: RouterMetrics = field(default_factory=RouterMetrics)
    """What `GET /metrics` shows; upstream states are read at scrape time."""
    connections: ConnectionMemory = field(default_factory=ConnectionMemory)
    held: HeldCalls = field(default_factory=HeldCalls)
    """2026-07-28 hosts' calls held open while a handshake-era upstream asks mid-call."""
    listen: ListenStreams | None = None
    """2026-07-28 hosts' `subscriptions/listen` streams and what is published on them."""
    era: HostEra | None = None
    code: CodeRuns | None = None
    """Code mode's programs (`router.server.code_runs`); None in the other modes."""
    """The one host's protocol era (stdio), which the upstreams mirror; None with many."""
    searcher: Searcher = field(init=False)
    names: ToolNames = field(init=False)

    def __post_init__(self) -> None:
        self.searcher = Searcher(
            self.index,
            self.readiness,
            self.connections,
            self.metrics,
            k=self.k,
            visibility=self.visibility,
        )
        self.names = ToolNames(self.index, self.readiness, self.policy, self.visibility)
        self.metrics.watch(
            self.pool.statuses,
            lambda: len(self.snapshot.catalog),
            self.store.status,
            held=lambda: [hold.record.server for hold in self.snapshot.held.values()],
        )

    @property
    def snapshot(self) -> Snapshot:
        return self.index.snapshot

    @property
    def changes(self) -> Changes:
        """Notified on every upstream status change, index swap and model load."""
        return self.readiness.changes

    @property
    def meta_tools(self) -> tuple[ToolRecord, ToolRecord]:
        if self.code is not None:  # code mode: search_tools (as signatures) and execute
            return code_meta_records(self.k, self.code.sandbox.settings)
        return meta_tool_records(self.k)

    def pending_upstreams(self) -> list[str]:
        """Upstreams whose tools a search now would not see (`Readiness.pending_upstreams`)."""
        return self.readiness.pending_upstreams()

    async def search(
        self,
        query: str,
        k: int | None = None,
        connection: Connection | None = None,
        view: View | None = None,
    ) -> list[ScoredTool]:
        """`Searcher.search`: the top-k that `view` (by default the current principal's)
        may see, once the starting upstreams are indexed."""
        return await self.searcher.search(query, k, connection, view)
