"""What the router still lacks to answer at full quality, and waiting for it at start.

A router is right from its first second or it is useless: an agent that hears "no tools
match" while the upstreams are still starting concludes the tool does not exist. So a
search, a query-scoped listing or a call that arrives before the first index holds the
starting upstreams waits for them (and for the embedding model), bounded by the connect
timeout counted from the router's start. What is still missing after that is named:
starting upstreams as starting, failed ones as down with their last error and next retry.

A lazy upstream that is not running (`router.start`) is neither: its last known listing is
indexed, so a search does not wait for it, and the answer says which of the tools it shows
come from such a listing, and how old that listing is.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import anyio

from router.core.changes import Changes
from router.upstream.state import UpstreamState, UpstreamStatus

if TYPE_CHECKING:
    from router.server.listing.index import LiveIndex
    from router.upstream import UpstreamPool


@dataclass(frozen=True, slots=True)
class DownUpstream:
    name: str
    last_error: str | None
    retry_in: float | None
    indexed: bool
    """Whether its tools from an earlier connection are still searchable."""


@dataclass(frozen=True, slots=True)
class CachedUpstream:
    """A lazy upstream that is not running: its tools come from its last known listing."""

    name: str
    age: float | None
    """Seconds since that listing was taken."""


@dataclass(frozen=True, slots=True)
class Coverage:
    """Which upstreams a search did not cover, and why."""

    starting: tuple[str, ...] = ()
    """Not indexed yet and still on their first connection (or being indexed)."""
    down: tuple[DownUpstream, ...] = ()
    model_loading: bool = False
    cached: tuple[CachedUpstream, ...] = ()
    """Idle lazy upstreams whose last listing is indexed."""

    @property
    def complete(self) -> bool:
        return not self.starting and not self.model_loading

    def seen_by(self, sees_server: Callable[[str], bool]) -> Coverage:
        """Only the upstreams a caller may see (`Access.sees_server`): another server's
        state and last error are not the caller's to read."""
        return Coverage(
            tuple(name for name in self.starting if sees_server(name)),
            tuple(down for down in self.down if sees_server(down.name)),
            self.model_loading,
            tuple(cached for cached in self.cached if sees_server(cached.name)),
        )

    @property
    def unsearched(self) -> tuple[str, ...]:
        """Upstreams whose tools the search could not see."""
        return self.starting + tuple(d.name for d in self.down if not d.indexed)


def coverage(
    statuses: Mapping[str, UpstreamStatus], indexed: Mapping[str, bool], model_loading: bool
) -> Coverage:
    """Classify each upstream from its status and whether the index holds its tools."""
    starting: list[str] = []
    down: list[DownUpstream] = []
    cached: list[CachedUpstream] = []
    now = time.time()
    for name, status in sorted(statuses.items()):
        if status.state is UpstreamState.IDLE and indexed[name]:
            listed = status.listed_at
            cached.append(CachedUpstream(name, max(0.0, now - listed) if listed else None))
        elif status.state in (UpstreamState.UNHEALTHY, UpstreamState.STOPPED) or (
            status.state is UpstreamState.CONNECTING and status.settled
        ):
            down.append(DownUpstream(name, status.last_error, status.retry_in, indexed[name]))
        elif not indexed[name]:
            starting.append(name)  # first connection in progress, or listed and indexing
    return Coverage(tuple(starting), tuple(down), model_loading, tuple(cached))


def age_text(seconds: float | None) -> str:
    """`3 min old`, `2 h old`, `5 d old`: a listing's age, for people and models."""
    if seconds is None:
        return "of unknown age"
    for unit, size in (("d", 86400), ("h", 3600), ("min", 60)):
        if seconds >= size:
            return f"{seconds / size:.0f} {unit} old"
    return f"{seconds:.0f} s old"


def describe(coverage: Coverage, shown: Collection[str] | None = None) -> list[str]:
    """Lines for the model: what the answer could not include, and why; and, of the servers
    `shown` (all, by default), those whose tools come from a listing kept from before."""
    lines = []
    cached = [c for c in coverage.cached if shown is None or c.name in shown]
    if cached:
        listings = ", ".join(f"{c.name} ({age_text(c.age)})" for c in cached)
        lines.append(
            f"From the last known listing (server not running; a call starts it): {listings}."
        )
    if coverage.starting:
        lines.append(
            f"Not searched yet, still starting: {', '.join(coverage.starting)} "
            "(search again in a moment)."
        )
    for down in coverage.down:
        error = f"last error: {down.last_error}" if down.last_error else "no answer"
        retry = f"; next retry in {down.retry_in:.1f} s" if down.retry_in is not None else ""
        what = "its tools are listed but calls fail" if down.indexed else "not searched"
        lines.append(f"Down, {what}: {down.name} ({error}{retry}).")
    if coverage.model_loading:
        lines.append("The embedding model is still loading.")
    return lines


@dataclass
class Readiness:
    """Whether a search now would see every upstream and the model, and waiting until it
    would, at most until the start-up deadline."""

    index: LiveIndex
    pool: UpstreamPool
    changes: Changes
    """Notified on every upstream status change, index swap and model load."""
    startup_deadline: float = 0.0
    """When waiting for starting upstreams stops (anyio clock): start + connect timeout."""
    model_ready: anyio.Event = field(default_factory=anyio.Event)
    """Set once the embedding model is loaded (or failed, or there is none)."""

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
