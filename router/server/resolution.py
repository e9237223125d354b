"""From the name a client called to the tool of the current catalog."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from router.catalog import ToolRecord
from router.errors import ToolDenied, ToolHeld, ToolNotFound
from router.policy import ToolPolicy
from router.profiles import EVERYTHING, View
from router.server.index import LiveIndex, Snapshot
from router.server.readiness import Readiness
from router.server.suggestions import NameMatcher
from router.server.visibility import Visibility


@dataclass
class ToolNames:
    """Resolves called names on the current snapshot; unknown names get suggestions, denied
    ones the rule that denies them, held ones (tool pinning) the command that approves them."""

    index: LiveIndex
    readiness: Readiness
    policy: ToolPolicy
    visibility: Visibility = field(default_factory=Visibility)
    """A tool outside the current principal's profile does not exist for it: it resolves
    to `ToolNotFound`, denied or held or not, and is never suggested."""
    _matcher: tuple[int, NameMatcher] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    async def resolve_when_ready(self, name: str) -> ToolRecord:
        """`resolve`, but a name unknown while upstreams are starting waits for them first:
        `time__get_current_time` called a second after start is not an unknown tool. The
        suggestions for a name still unknown are found in a worker thread: matching it
        against every tool name costs time that grows with the catalog, and a stream of
        bad names must not stall the event loop. A held tool is looked up in the pin store
        once more first: an approval written a moment ago releases it at once."""
        try:
            return self.resolve(name, suggest=False)
        except ToolHeld:
            if not await self.index.release_approved():
                raise
        except ToolNotFound:
            if not self.readiness.coverage().complete:
                await self.readiness.until_covered()
        try:
            return self.resolve(name, suggest=False)
        except ToolNotFound:
            view = self.visibility.view()  # read here: the worker thread has no request
            suggestions = await anyio.to_thread.run_sync(self.suggestions, name, view)
            raise ToolNotFound(name, suggestions) from None

    def resolve(self, name: str, *, suggest: bool = True) -> ToolRecord:
        """The tool a client named, by qualified name; else `ToolNotFound`, with suggestions
        unless `suggest` is false (see `suggestions`)."""
        snapshot = self.index.snapshot
        catalog = snapshot.catalog
        view = self.visibility.view()
        record = catalog.get(name)
        if record is not None and self.visibility.permits(view, record):
            return record
        if record is not None:
            raise ToolNotFound(name, self.suggestions(name, view) if suggest else ())
        denied = snapshot.denied.get(name)
        if denied is not None and not self.visibility.permits(view, denied):
            denied = None
        held = snapshot.held.get(name)
        if held is not None and not self.visibility.permits(view, held.record):
            held = None
        if denied is not None:
            raise ToolDenied(name, self.policy.rule_for(denied).rule)
        if held is not None:
            tool = held.record
            pinning = self.index.pinning
            approve = pinning.command("approve", f"{tool.server}/{tool.name}")
            raise ToolHeld(
                name, tool.server, tool.name, held.reason, approve, pinning.command("review")
            )
        raise ToolNotFound(name, self.suggestions(name, view) if suggest else ())

    def suggestions(self, name: str, view: View = EVERYTHING) -> tuple[str, ...]:
        """Close matches of an unknown name among the current catalog's that `view` may
        see, in bounded work (`router.server.suggestions`; blocking: the first after a
        swap counts the catalog's names)."""
        snapshot = self.index.snapshot
        return self._matcher_of(snapshot).close(name, self.visibility.hidden(snapshot, view))

    def _matcher_of(self, snapshot: Snapshot) -> NameMatcher:
        if snapshot.names is not None:  # built with the snapshot
            return snapshot.names
        with self._lock:
            if self._matcher is not None and self._matcher[0] == snapshot.generation:
                return self._matcher[1]
        records = snapshot.catalog.records
        matcher = NameMatcher([r.qualified_name for r in records], [r.name for r in records])
        with self._lock:
            self._matcher = (snapshot.generation, matcher)  # the current snapshot's only
        return matcher
