"""What every request handler reaches through the lifespan context: no globals."""

from __future__ import annotations

import difflib
import weakref
from dataclasses import dataclass, field
from typing import Any, Literal

import anyio.to_thread

from router.catalog import ToolRecord
from router.errors import ToolNotFound
from router.retrieval.types import ScoredTool
from router.server.index import LiveIndex, Snapshot
from router.server.meta_tools import meta_tool_records
from router.upstream import UpstreamPool

Mode = Literal["search", "dynamic"]


@dataclass
class RouterState:
    """The live index, the upstream pool and the routing settings."""

    index: LiveIndex
    pool: UpstreamPool
    k: int = 5
    mode: Mode = "search"
    # Dynamic mode: each connection's last search result (connections are weakly held so
    # a closed connection's state goes with it).
    session_tools: weakref.WeakKeyDictionary[Any, tuple[str, ...]] = field(
        default_factory=weakref.WeakKeyDictionary
    )

    @property
    def snapshot(self) -> Snapshot:
        return self.index.snapshot

    @property
    def meta_tools(self) -> tuple[ToolRecord, ToolRecord]:
        return meta_tool_records(self.k)

    def pending_upstreams(self) -> list[str]:
        """Upstreams whose tools are not searchable yet: still connecting, down before their
        first listing, or listed but not yet in the current snapshot (being embedded)."""
        return [name for name in self.pool.upstreams if not self.index.is_indexed(name)]

    async def search(self, query: str, k: int | None = None) -> list[ScoredTool]:
        """Top-k tools of the current snapshot; embedding runs in a worker thread."""
        retriever = self.snapshot.retriever
        size = k or self.k

        def run() -> list[ScoredTool]:
            return retriever.search(query, k=size, mode=retriever.modes[0])

        return await anyio.to_thread.run_sync(run)

    def resolve(self, name: str) -> ToolRecord:
        """The tool a client named, by qualified name; else `ToolNotFound` with suggestions."""
        catalog = self.snapshot.catalog
        record = catalog.get(name)
        if record is not None:
            return record
        names = [r.qualified_name for r in catalog.records]
        suggestions = difflib.get_close_matches(name, names, n=3, cutoff=0.6)
        if not suggestions:
            # a bare upstream tool name: offer its qualified forms
            suggestions = [r.qualified_name for r in catalog.records if r.name == name][:3]
        raise ToolNotFound(name, tuple(suggestions))
