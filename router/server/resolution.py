"""From the name a client called to the tool of the current catalog."""

from __future__ import annotations

import difflib
from dataclasses import dataclass

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
        `time__get_current_time` called a second after start is not an unknown tool."""
        try:
            return self.resolve(name)
        except ToolNotFound:
            if self.readiness.coverage().complete:
                raise
        await self.readiness.until_covered()
        return self.resolve(name)

    def resolve(self, name: str) -> ToolRecord:
        """The tool a client named, by qualified name; else `ToolNotFound` with suggestions."""
        snapshot = self.index.snapshot
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
