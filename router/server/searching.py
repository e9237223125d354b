"""A search on the current snapshot, and what usage feedback learns from the call after it."""

from __future__ import annotations

import time
from dataclasses import dataclass

import anyio
import anyio.to_thread
from mcp.server.connection import Connection

from router.catalog import ToolRecord
from router.embedding.base import Vectors
from router.retrieval.types import ScoredTool, SearchMode
from router.retrieval.usage import UsageMemory
from router.server.connections import ConnectionMemory, LastSearch
from router.server.index import LiveIndex
from router.server.metrics import RouterMetrics
from router.server.readiness import Readiness
from router.tracing import span


@dataclass
class Searcher:
    """Top-k tools for a query, once the starting upstreams are indexed; and the usage
    memory that lifts tools called after similar earlier searches."""

    index: LiveIndex
    readiness: Readiness
    connections: ConnectionMemory
    metrics: RouterMetrics
    k: int = 5
    usage: UsageMemory | None = None
    """Usage feedback (`router.learn`), set once the model is loaded; None when off."""

    async def search(
        self, query: str, k: int | None = None, connection: Connection | None = None
    ) -> list[ScoredTool]:
        """Top-k tools, once the starting upstreams are indexed (`Readiness.until_covered`);
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
        await self.readiness.until_covered()
        retriever = self.index.snapshot.retriever
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
            self.connections.last_search[connection] = LastSearch(query, vector, shown)
        return results

    async def learn(self, connection: Connection, record: ToolRecord) -> None:
        """A call succeeded: if the connection's last search showed this tool, remember
        the pair, once (the SQLite write runs in a worker thread)."""
        usage, last = self.usage, self.connections.last_search.get(connection)
        if usage is None or last is None or record.key not in last.shown:
            return
        self.connections.last_search[connection] = LastSearch(
            last.query, last.vector, last.shown - {record.key}
        )
        await anyio.to_thread.run_sync(usage.record, last.query, last.vector, [record.key])
