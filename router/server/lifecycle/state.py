"""What every request handler reaches through the lifespan context: no globals.

`RouterState` only composes: each part owns one concept (readiness at start, search and
usage learning, name resolution, per-connection memory, the host-facing channels, approvals)
and lives as long as the router. What one config says (`k`, the mode, result limits, policy,
profiles, pins) is `settings`, a frozen `Settings` (`router.server.lifecycle.settings`) that a
config
applied while serving replaces whole, in one assignment: nothing here copies a setting.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio
from mcp.server.connection import Connection

from router.approvals.sealing import Sealer
from router.core.catalog import ToolRecord
from router.core.changes import Changes
from router.core.meta_tools import meta_tool_records
from router.core.tool_patterns import resolve_pins
from router.policy.profiles import View
from router.policy.rules import ToolPolicy
from router.retrieval.types import ScoredTool
from router.server.access.endpoint import requested_endpoint
from router.server.access.visibility import Visibility
from router.server.calls.approval import Approvals
from router.server.calls.held_calls import HeldCalls
from router.server.calls.relay import HostRelay
from router.server.lifecycle.metrics import RouterMetrics
from router.server.lifecycle.readiness import Readiness
from router.server.lifecycle.settings import Mode, Settings
from router.server.listing.door import Door
from router.server.listing.index import LiveIndex, Snapshot
from router.server.listing.passthrough import ListChanges
from router.server.listing.resolution import ToolNames
from router.server.listing.searching import Searcher
from router.server.results.kept import KeptResults
from router.server.sessions.connections import ConnectionMemory
from router.server.sessions.listen import ListenStreams
from router.server.sessions.subscriptions import HostSubscriptions
from router.server.tasks.table import Tasks
from router.store.base import VectorStore
from router.store.local import LocalStore
from router.upstream import UpstreamPool
from router.upstream.connection.eras import HostEra

if TYPE_CHECKING:  # built only when configured (router.server.lifecycle.app)
    from router.audit import AuditTrail
    from router.policy.quotas import QuotaBook, SharedBucketStore
    from router.server.code_mode.runs import CodeRuns

__all__ = ["Mode", "RouterState"]

_MADE = threading.Lock()
"""Held while a part made on first need is made (a worker thread may be the first)."""

MAX_PIN_SETS = 64
"""Endpoints' resolved pins kept at once (one per endpoint with its own `pin`)."""


@dataclass
class RouterState:
    """The live index, the upstream pool, the settings in force and the parts built on them."""

    index: LiveIndex
    pool: UpstreamPool
    readiness: Readiness
    """Whether a search would see every starting upstream; waiting until it would."""
    config_settings: Settings = field(default_factory=Settings)
    """The current config's settings; a reload swaps in another (`router.server.lifecycle.reload`).
    Handlers read `settings`: these, or the request's endpoint's."""
    kept: KeptResults = field(default_factory=KeptResults)
    """Cut tool results kept for `read_result` (`router.limits.keep_seconds`, `keep_mib`)."""
    list_changes: ListChanges = field(default_factory=ListChanges)
    """Pass-through mode: the clients that listed the tools, told when the listing changes."""
    subscriptions: HostSubscriptions = field(default_factory=HostSubscriptions)
    """The hosts subscribed to upstream resources (`resources/subscribe`)."""
    relay: HostRelay = field(default_factory=HostRelay)
    """Carries what upstreams ask of the host to the host session whose call caused it."""
    approvals: Approvals = field(default_factory=Approvals)
    sealer: Sealer = field(default_factory=Sealer)
    """Seals what a 2026-07-28 host brings back (`router.approvals.sealing`): one per process, its
    key and nonce ledger the store's (`app.py` hands it to approvals, held calls and runs)."""
    store: VectorStore = field(default_factory=lambda: LocalStore(None))
    """Where the tool vectors live (`router.store`); its status shows in `/healthz`."""
    metrics: RouterMetrics = field(default_factory=lambda: RouterMetrics(recording=False))
    """What `GET /metrics` shows; upstream states are read at scrape time. Nothing is
    recorded until a front serving `/metrics` calls `RouterMetrics.serve` (not over stdio)."""
    connections: ConnectionMemory = field(default_factory=ConnectionMemory)
    held: HeldCalls = field(default_factory=HeldCalls)
    """2026-07-28 hosts' calls held open while a handshake-era upstream asks mid-call."""
    tasks: Tasks = field(default_factory=Tasks)
    """Calls run as tasks for hosts that declared the tasks extension (`router.server.tasks`)."""
    listen: ListenStreams | None = None
    """2026-07-28 hosts' `subscriptions/listen` streams and what is published on them."""
    era: HostEra | None = None
    """The one host's protocol era (stdio), which the upstreams mirror; None with many."""
    code: CodeRuns | None = None
    """Code mode's programs (`router.server.code_mode.runs`); None in the other modes."""
    audit: AuditTrail | None = None
    """The audit trail (`router.audit`); None when none is kept."""
    quota_buckets: SharedBucketStore | None = None
    """Where `calls_per_minute` is counted across replicas (the store's); None: here."""
    _quotas: QuotaBook | None = field(init=False, default=None)
    door: Door = field(default_factory=Door)
    """The servers behind the router, as the instructions and `search_tools` name them."""
    answered: anyio.Event = field(default_factory=anyio.Event)
    """Set once the first request is answered: then what the other requests need is imported
    (`router.server.lifecycle.app`), not before `initialize` is."""
    searcher: Searcher = field(init=False)
    names: ToolNames = field(init=False)
    _pinned: dict[tuple[int, tuple[str, ...]], tuple[ToolRecord, ...]] = field(
        init=False, default_factory=dict
    )
    """Endpoints' pinned tools, by snapshot generation and pins (at most `MAX_PIN_SETS`)."""

    def __post_init__(self) -> None:
        self.config_settings.visibility.personal.serve(self.pool.upstreams)
        self.searcher = Searcher(
            self.index, self.readiness, self.connections, self.metrics, self._settings
        )
        self.names = ToolNames(self.index, self.readiness, self._settings)
        self.metrics.watch(
            self.pool.statuses,
            lambda: len(self.snapshot.catalog),
            self.store.status,
            held=lambda: [hold.record.server for hold in self.snapshot.held.values()],
        )

    @property
    def quotas(self) -> QuotaBook:
        """Each principal's use against `router.quotas`, across reloads (this process's):
        made by the first call metered (`router.server.calls.stages.meter`)."""
        with _MADE:
            if self._quotas is None:
                from router.policy.quotas import QuotaBook

                self._quotas = QuotaBook(shared=self.quota_buckets)
            return self._quotas

    @property
    def settings(self) -> Settings:
        """The settings in force for the current request: the current config's, or those of
        the endpoint it came in at (`router.endpoints`). Read it once per decision: two reads
        may straddle a reload. An endpoint a reload removed serves nothing: its requests
        are refused at the door (`endpoint_refusal`), and anything still running gets
        the router's own settings with the endpoint's empty view."""
        config = self.config_settings
        endpoint = requested_endpoint()
        return config if endpoint is None else config.endpoints.get(endpoint, config)

    @settings.setter
    def settings(self, settings: Settings) -> None:
        # what the per-user upstreams' connections list decides what each principal is shown
        settings.visibility.personal.serve(self.pool.upstreams)
        self.config_settings = settings

    def _settings(self) -> Settings:
        return self.settings

    # The current settings' parts, read-only, for the handlers that read them here still.
    @property
    def k(self) -> int:
        return self.settings.k

    @property
    def mode(self) -> Mode:
        return self.settings.mode

    @property
    def policy(self) -> ToolPolicy:
        """`router.policy`: denied tools are refused (`authorize_call`); confirmed ones ask."""
        return self.settings.policy

    @property
    def visibility(self) -> Visibility:
        return self.settings.visibility

    @property
    def result_tokens_for(self) -> Callable[[str], int]:
        return self.settings.result_tokens_for

    @property
    def snapshot(self) -> Snapshot:
        return self.index.snapshot

    @property
    def changes(self) -> Changes:
        """Notified on every upstream status change, index swap and model load."""
        return self.readiness.changes

    @property
    def meta_tools(self) -> tuple[ToolRecord, ToolRecord]:
        settings = self.settings
        k = settings.k
        if settings.mode == "code" and self.code is not None:  # search_tools (as signatures)
            # and execute
            from router.code_mode.meta import code_meta_records  # code mode's alone

            return code_meta_records(k, self.code.sandbox.settings)
        servers = self.door.directory(self.pool.upstreams, settings.servers_summary_tokens)
        return meta_tool_records(k, servers)

    @property
    def instructions(self) -> str:
        """What a session is told at `initialize`: how to search, and what is behind."""
        budget = self.settings.servers_summary_tokens
        return self.door.instructions(self.pool.upstreams, budget)

    def pinned(self, settings: Settings | None = None) -> tuple[ToolRecord, ...]:
        """The pinned tools of the current snapshot under `settings` (by default the
        request's): the index's own, or an endpoint's `pin` resolved against it."""
        settings = settings or self.settings
        snapshot = self.index.snapshot
        if settings.pins == self.index.pins:
            return snapshot.pinned
        key = (snapshot.generation, settings.pins)
        found = self._pinned.get(key)
        if found is None:
            found = resolve_pins(snapshot.catalog, settings.pins)
            if len(self._pinned) >= MAX_PIN_SETS:
                self._pinned.clear()  # a new snapshot, or endpoints replaced: start again
            self._pinned[key] = found
        return found

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
