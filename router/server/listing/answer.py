"""One search's answer, made once for every surface that searches: MCP's `search_tools`, code
mode's, `/v1/route` and `/v1/search` (the LLM APIs).

`search` runs the search (`Searcher.search`) and gathers what the answer says besides the
ranked tools, each as the caller's view sees it: whether any of them fits the request
(`router.retrieval.fit`), the upstreams the search did not cover (starting, down, or lazy
and answered from their last listing), how many tools it searched, which of them read like
instructions, and the held tools the query matched. Each surface only renders a
`SearchAnswer` (`router.server.listing.rendering`, `router.server.code_mode.tools`,
`router.server.http.routing`, `router.server.http.search`), so they cannot disagree about
what a search found or missed.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace

from mcp.server.connection import Connection

from router.pinning.matching import HeldTool
from router.policy.profiles import View
from router.retrieval.fit import Fit, judge
from router.retrieval.types import ScoredTool
from router.server.lifecycle.readiness import Coverage
from router.server.listing.index import Snapshot
from router.server.listing.searching import Budget, Searcher

MAX_ABOUT = 120
"""A server's words about itself, shortened to this where an answer names the server."""


@dataclass(frozen=True, slots=True)
class SearchAnswer:
    """What one search found and what it could not see, for the caller that asked."""

    query: str
    k: int | None
    """The most tools ranked; None for a search within a token budget."""
    results: tuple[ScoredTool, ...]
    """Best first."""
    coverage: Coverage
    """The upstreams the search did not cover, only those the caller's view may see."""
    indexed: int
    """Tools the search looked through: the catalog less what the view hides."""
    held: tuple[HeldTool, ...]
    """Tools tool pinning holds that the query matched (not among `results`)."""
    snapshot: Snapshot
    """The snapshot read after the search: its flags, its mode, and the full list to bill."""
    view: View
    fit: Fit
    """Whether the best result fits the request, or none does (`router.retrieval.fit`)."""
    held_count: int = 0
    """Every tool tool pinning holds that the view may see, matched or not: not searched."""
    approve: str = ""
    """The command that releases a held tool (`mcp-router tools approve SERVER/TOOL ...`)."""
    nearby: tuple[ScoredTool, ...] = ()
    """The tools ranked just past `results` (`router.names_after_k`): named, not shown."""
    line_chars: int = 80
    """The most characters of description a `nearby` tool's line carries."""

    @property
    def servers(self) -> tuple[tuple[str, str | None], ...]:
        """The servers the ranked tools come from, best first, each with what it says
        about itself (its title, description and instructions, when it gave them): where
        a request that nothing fits may still belong."""
        about: dict[str, str | None] = {}
        for result in self.results:
            if not result.pinned and result.tool.server not in about:
                words = " ".join((result.tool.server_description or "").split())
                cut = words if len(words) <= MAX_ABOUT else words[: MAX_ABOUT - 1] + "…"
                about[result.tool.server] = cut or None
        return tuple(about.items())

    @property
    def flagged(self) -> Mapping[str, tuple[str, ...]]:
        """Tools whose text reads like instructions (`router.policy.injection`), by name."""
        return self.snapshot.flagged

    @property
    def pending(self) -> list[str]:
        """Upstreams whose tools the search could not see."""
        return list(self.coverage.unsearched)

    @property
    def mode(self) -> str:
        """How it ranked: the retriever's first mode (bm25 without an embedding model)."""
        retriever = self.snapshot.retriever
        return retriever.modes[0].value if retriever is not None else "bm25"


async def search(
    searcher: Searcher,
    query: str,
    k: int | None = None,
    *,
    connection: Connection | None = None,
    view: View | None = None,
    budget: Budget | None = None,
    nearby: bool = False,
) -> SearchAnswer:
    """The top `k` (default `router.k`, or what fits `budget`) that `view` (default the
    current principal's) may see, and all the answer says besides; with a `connection`,
    the search its next call teaches (`Searcher.search`). With `nearby`, the tools ranked
    next are named too (`router.names_after_k`), unless the query is only tool names:
    then the answer is those tools alone, the full schemas the model asked for."""
    settings = searcher.settings()
    visibility = settings.visibility  # one config's profiles for the whole answer
    view = visibility.view() if view is None else view
    size = None if budget is not None else k or settings.k
    beyond = settings.names_after_k if nearby else 0
    results, after = await searcher.search_beyond(
        query, size, connection, view, budget=budget, beyond=beyond
    )
    named = named_only(query, results)
    if named is not None:
        results, after = named, []
    held = await searcher.held_for(query, view)
    coverage = searcher.readiness.coverage().seen_by(
        lambda server: visibility.permits_server(view, server)
    )
    snapshot = searcher.index.snapshot
    # what the model could be shown: a tool for an app alone is not counted
    indexed = len(snapshot.catalog) - len(visibility.hidden(snapshot, view) | snapshot.app_only)
    held_count = sum(visibility.permits(view, h.record) for h in snapshot.held.values())
    pinning = searcher.index.pinning
    floor = snapshot.retriever.match_floor if snapshot.retriever is not None else None
    return SearchAnswer(
        query,
        size,
        tuple(results),
        coverage,
        indexed,
        tuple(held),
        snapshot,
        view,
        judge(results, floor),
        held_count,
        pinning.command("approve", "SERVER/TOOL"),
        tuple(after),
        settings.name_line_chars,
    )


def named_only(query: str, results: list[ScoredTool]) -> list[ScoredTool] | None:
    """The tools a query made only of qualified names names (exact-name rescue puts them
    first: `router.retrieval.exact`), when it names each one found; else None."""
    words = dict.fromkeys(query.lower().replace(",", " ").split())
    by_name = {r.qualified_name.lower(): r for r in results if r.exact_match}
    if not words or any(word not in by_name for word in words):
        return None
    return [replace(by_name[word], rank=rank) for rank, word in enumerate(words, 1)]
