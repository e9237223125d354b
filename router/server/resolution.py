"""From the name a client called to the tool of the current catalog."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

import anyio
import anyio.to_thread

from router.catalog import ToolRecord
from router.errors import ToolDenied, ToolNotFound
from router.policy import ToolPolicy
from router.server.index import LiveIndex
from router.server.readiness import Readiness


@dataclass
class ToolNames:
    """Resolves called names on the current snapshot; unknown names get suggestions and
    denied ones the rule that denies them."""

    index: LiveIndex
    readiness: Readiness
    policy: ToolPolicy

    async def resolve_when_ready(self, name: str) -> ToolRecord:
        """`resolve`, but a name unknown while upstreams are starting waits for them first:
        `time__get_current_time` called a second after start is not an unknown tool. The
        suggestions for a name still unknown are found in a worker thread: matching it
        against every tool name costs time that grows with the catalog, and a stream of
        bad names must not stall the event loop."""
        try:
            return self.resolve(name, suggest=False)
        except ToolNotFound:
            if not self.readiness.coverage().complete:
                await self.readiness.until_covered()
        try:
            return self.resolve(name, suggest=False)
        except ToolNotFound:
            suggestions = await anyio.to_thread.run_sync(self.suggestions, name)
            raise ToolNotFound(name, suggestions) from None

    def resolve(self, name: str, *, suggest: bool = True) -> ToolRecord:
        """The tool a client named, by qualified name; else `ToolNotFound`, with suggestions
        unless `suggest` is false (see `suggestions`)."""
        snapshot = self.index.snapshot
        catalog = snapshot.catalog
        record = catalog.get(name)
        if record is not None:
            return record
        denied = snapshot.denied.get(name)
        if denied is not None:
            raise ToolDenied(name, self.policy.rule_for(denied).rule)
        raise ToolNotFound(name, self.suggestions(name) if suggest else ())

    def suggestions(self, name: str) -> tuple[str, ...]:
        """Close matches of an unknown name among the current catalog's (blocking)."""
        records = self.index.snapshot.catalog.records
        names = [r.qualified_name for r in records]
        suggestions = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        if not suggestions:
            # a bare upstream tool name: offer its qualified forms
            suggestions = [r.qualified_name for r in records if r.name == name][:3]
        return tuple(suggestions)
