"""A search on the current snapshot, the held tools it would have looked for, and what usage
feedback learns from the call after it."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

import anyio
import anyio.to_thread
from mcp.server.connection import Connection

from router.core.catalog import ToolRecord
from router.core.tracing import span
from router.embedding.base import Vectors
from router.pinning.matching import HeldTool, HeldWords, noted
from router.policy.profiles import View
from router.retrieval.types import ScoredTool, SearchMode
from router.retrieval.usage_scopes import UsageScopes
from router.server.access.visibility import Visibility
from router.server.lifecycle.metrics import RouterMetrics
from router.server.lifecycle.readiness import Readiness
from router.server.lifecycle.settings import Settings
from router.server.listing.index import LiveIndex
from router.server.sessions.connections import ConnectionMemory, LastSearch

if TYPE_CHECKING:  # numpy and onnxruntime load only with router.rerank (the model's loader)
    from router.retrieval.rerank import Reranker


@dataclass(frozen=True, slots=True)
class Budget:
    """Tokens the ranked tools may cost in all (`/v1/route`'s `budget`), and what each costs."""

    tokens: int
    tool_tokens: Callable[[ToolRecord], int]


@dataclass
class Searcher:
    """Top-k tools for a query, once the starting upstreams are indexed; and the usage
    memory that lifts tools called after similar earlier searches."""

    index: LiveIndex
    readiness: Readiness
    connections: ConnectionMemory
    metrics: RouterMetrics
    settings: Callable[[], Settings] = Settings
    """The settings in force (`RouterState.settings`): `k` and the profiles are read there."""
    usage: UsageScopes | None = None
    """Usage feedback (`router.learn`), set once the model is loaded; None when off. Each
    principal learns apart (`UsageScopes`)."""
    reranker: Reranker | None = None
    """The cross-encoder that re-scores each search's first tools (`router.rerank`), set once
    loaded; None when off."""
    _held_words: HeldWords = field(default_factory=HeldWords, init=False, repr=False)
    """BM25 over the current snapshot's held tools, by snapshot generation."""

    @property
    def k(self) -> int:
        return self.settings().k

    @property
    def visibility(self) -> Visibility:
        return self.settings().visibility

    async def search(
        self,
        query: str,
        k: int | None = None,
        connection: Connection | None = None,
        view: View | None = None,
        *,
        budget: Budget | None = None,
    ) -> list[ScoredTool]:
        """Top-k tools that `view` (by default the current principal's) may see, once the
        starting upstreams are indexed (`Readiness.until_covered`); embedding runs in a
        worker thread. Tools the current principal called after similar earlier searches
        rise (`usage`); with a `connection`, this search is what its next call teaches.
        With a `budget`, the best tools that fit it instead of the top k."""
        found, _ = await self.search_beyond(query, k, connection, view, budget=budget)
        return found

    async def search_beyond(
        self,
        query: str,
        k: int | None = None,
        connection: Connection | None = None,
        view: View | None = None,
        *,
        budget: Budget | None = None,
        beyond: int = 0,
    ) -> tuple[list[ScoredTool], list[ScoredTool]]:
        """`search`'s top k, and the `beyond` tools that follow them in the same ranking
        (none within a `budget`): the top k are the same with or without them."""
        size = None if budget is not None else k or self.k
        attributes = {"mcp_router.k": size} if size is not None else {}
        with span("mcp-router search", attributes) as current:
            results, nearby = await self._search(
                query,
                size,
                budget,
                connection,
                self.visibility.view() if view is None else view,
                beyond if size is not None else 0,
            )
            current.set_attribute("mcp_router.results", len(results))
        return results, nearby

    async def _search(
        self,
        query: str,
        size: int | None,
        budget: Budget | None,
        connection: Connection | None,
        view: View,
        beyond: int = 0,
    ) -> tuple[list[ScoredTool], list[ScoredTool]]:
        await self.readiness.until_covered()
        snapshot = self.index.snapshot
        retriever = snapshot.retriever
        if retriever is None:
            return [], []
        usage, visibility, reranker = self.usage, self.visibility, self.reranker
        scope = self._scope()
        mode = retriever.modes[0]
        tokens, tool_tokens = (budget.tokens, budget.tool_tokens) if budget else (None, None)
        if reranker is None or size is None or mode is SearchMode.BM25:
            reranker, depth = None, size
        else:  # the reranker reorders the first N, then the first `size` are the answer
            depth = max(size, reranker.depth)
        # the tools past the top k come from the same ranking, after what the reranker read
        more = 0 if depth is None or size is None else max(0, size + beyond - depth)

        def run() -> tuple[list[ScoredTool], list[ScoredTool], Vectors | None]:
            # a tool for an MCP app alone is the host's to call, never the model's to find
            hidden = visibility.hidden(snapshot, view) | snapshot.app_only
            rank = partial(
                retriever.search,
                query,
                k=depth,
                more=more,
                budget=tokens,
                tool_tokens=tool_tokens,
                mode=mode,
                hidden=hidden,
            )
            vectors = None
            if usage is None or mode is SearchMode.BM25:
                found = rank()
            else:
                vectors = retriever.embed_query(query)
                lift = usage.memory_for(scope).lift(vectors[0])
                found = rank(query_vectors=vectors, lift=lift)
            vector = None if vectors is None else vectors[0]
            if size is None:
                return found, [], vector
            if reranker is None:
                top = sum(r.pinned for r in found) + size
                return found[:top], found[top:], vector
            read = sum(r.pinned for r in found) + max(size, reranker.depth)
            reordered = reranker.reorder(query, found[:read])
            return reordered[:size], (reordered[size:] + found[read:])[:beyond], vector

        started = time.perf_counter()
        results, nearby, vector = await anyio.to_thread.run_sync(run)
        self.metrics.searched(time.perf_counter() - started, len(results))
        if connection is not None and vector is not None:
            # a tool named past the top k was shown too: calling it teaches as well
            shown = frozenset(r.tool.key for r in (*results, *nearby))
            self.connections.last_search[connection] = LastSearch(query, vector, shown)
        return results, nearby

    async def held_for(self, query: str, view: View | None = None) -> list[HeldTool]:
        """The held tools `query` shares a word with (`router.pinning.matching`: a few, best
        first) that `view` (by default the current principal's) may see. Only names and
        reasons: a held tool's new text is what waits for a person's approval."""
        snapshot = self.index.snapshot
        if not snapshot.held:
            return []
        visibility = self.visibility  # one config's profiles for the whole answer
        view = visibility.view() if view is None else view
        holds = list(snapshot.held.values())
        found = await anyio.to_thread.run_sync(
            self._held_words.matches, snapshot.generation, holds, query
        )
        return noted(found, lambda record: visibility.permits(view, record), self.index.pinning)

    async def learn(self, connection: Connection, record: ToolRecord) -> None:
        """A call succeeded: if the connection's last search showed this tool, remember
        the pair, once, in the current principal's scope (the SQLite write runs in a
        worker thread)."""
        usage, last = self.usage, self.connections.last_search.get(connection)
        if usage is None or last is None or record.key not in last.shown:
            return
        self.connections.last_search[connection] = LastSearch(
            last.query, last.vector, last.shown - {record.key}
        )
        scope = self._scope()

        def remember() -> None:
            usage.memory_for(scope).record(last.query, last.vector, [record.key])

        await anyio.to_thread.run_sync(remember)

    def _scope(self) -> str | None:
        """The current principal's learning scope; None: the one shared scope."""
        principal = self.visibility.principal()
        return None if principal is None else principal.key
