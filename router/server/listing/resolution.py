"""From the name a client called to the tool of the current catalog.

Names are looked up in the current snapshot and ruled on by the settings in force
(`RouterState.settings`), read once per lookup: after a reload, what the new profiles hide
is unknown at once, and `router.server.lifecycle.settings.authorize_call` rules on the call itself
(what the new policy denies is refused before the index is rebuilt without it).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field

import anyio
import anyio.to_thread

from router.core.catalog import ToolRecord
from router.core.errors import ToolDenied, ToolHeld, ToolNotFound
from router.policy.profiles import EVERYTHING, View
from router.server.lifecycle.readiness import Readiness
from router.server.lifecycle.settings import Settings
from router.server.listing.index import LiveIndex, Snapshot
from router.server.listing.suggestions import NameMatcher

REINDEXING = "the previous router.policy, until the index is rebuilt under the new one"


@dataclass
class ToolNames:
    """Resolves called names on the current snapshot; unknown names get suggestions, denied
    ones the rule that denies them, held ones (tool pinning) the command that approves them."""

    index: LiveIndex
    readiness: Readiness
    settings: Callable[[], Settings] = Settings
    """The settings in force. A tool outside the current principal's profile does not exist
    for it: it resolves to `ToolNotFound`, denied or held or not, and is never suggested."""
    _matcher: tuple[int, NameMatcher] | None = field(default=None, init=False, repr=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    async def resolve_when_ready(self, name: str) -> ToolRecord:
        """`resolve`, but a name unknown while upstreams are starting waits for them first:
        `time__get_current_time` called a second after start is not an unknown tool, and one
        still unknown after that wait names the upstreams not listed yet (still starting,
        or down before their first listing), as a search's answer does. The
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
            visibility = self.settings().visibility
            view = visibility.view()  # here: the worker thread has no request
            suggestions = await anyio.to_thread.run_sync(self.suggestions, name, view)
            # Past the start-up wait, a name may still be a tool of an upstream not listed
            # yet: say which, of those the caller may see, rather than only "unknown".
            missing = self.readiness.coverage().seen_by(
                lambda server: visibility.permits_server(view, server)
            )
            down = tuple(d.name for d in missing.down if not d.indexed)
            raise ToolNotFound(name, suggestions, starting=missing.starting, down=down) from None

    def resolve(self, name: str, *, suggest: bool = True) -> ToolRecord:
        """The tool a client named, by qualified name; else `ToolNotFound`, with suggestions
        unless `suggest` is false (see `suggestions`)."""
        snapshot, settings = self.index.snapshot, self.settings()
        visibility = settings.visibility
        view = visibility.view()
        record = snapshot.catalog.get(name)
        if record is not None and visibility.permits_call(view, record):
            return record  # the call's own ruling is `authorize_call`'s
        if record is not None:
            raise ToolNotFound(name, self.suggestions(name, view) if suggest else ())
        denied = snapshot.denied.get(name)
        if denied is not None and not visibility.permits(view, denied):
            denied = None
        held = snapshot.held.get(name)
        if held is not None and not visibility.permits(view, held.record):
            held = None
        if denied is not None:
            # Allowed again by a reload: callable once the index holds it (tool pinning
            # has not looked at a denied tool), in a moment.
            rule = settings.policy.rule_for(denied).rule or REINDEXING
            raise ToolDenied(name, rule)
        if held is not None and settings.policy.denies(held.record):  # denied since
            raise ToolDenied(name, settings.policy.rule_for(held.record).rule)
        if held is not None:
            tool = held.record
            raise self.index.pinning.refused(name, tool.server, tool.called_as, held.reason)
        raise ToolNotFound(name, self.suggestions(name, view) if suggest else ())

    def suggestions(self, name: str, view: View = EVERYTHING) -> tuple[str, ...]:
        """Close matches of an unknown name among the current catalog's that `view` may
        see, in bounded work (`router.server.listing.suggestions`; blocking: the first after a
        swap counts the catalog's names). A tool for an app alone is never suggested: the
        model is not to learn of it (`router.core.apps.app_only`)."""
        snapshot = self.index.snapshot
        hidden = self.settings().visibility.hidden(snapshot, view) | snapshot.app_only
        return self._matcher_of(snapshot).close(name, hidden)

    def _matcher_of(self, snapshot: Snapshot) -> NameMatcher:
        if snapshot.names is not None:  # built with the snapshot
            return snapshot.names
        with self._lock:
            if self._matcher is not None and self._matcher[0] == snapshot.generation:
                return self._matcher[1]
        records = snapshot.catalog.records
        matcher = NameMatcher.of(records)
        with self._lock:
            self._matcher = (snapshot.generation, matcher)  # the current snapshot's only
        return matcher
