"""Measuring one catalog: build its index, run every method, price the routed lists."""

from __future__ import annotations

import resource
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks.suite import tokens
from benchmarks.suite.bootstrap import paired_margin
from benchmarks.suite.fastmcp_peer import FastMCPRanker
from benchmarks.suite.listtokens import ListTokens
from benchmarks.suite.measure import group_breakdown, mean_metrics, percentiles, run_methods
from benchmarks.suite.methods import (
    PREVIOUS_METHOD,
    ROUTER,
    EmbeddedQueries,
    RandomRanker,
    Ranker,
    RouterRanker,
)
from router.accounting.formats import ToolFormat
from router.core.catalog import Catalog
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache
from router.evaluation.dataset import Query
from router.evaluation.metrics import GROUP_FIELDS, resolve_gold
from router.retrieval.retriever import Retriever, SearchMode
from router.retrieval.types import PREVIOUS


@dataclass(frozen=True, slots=True)
class Context:
    """What every catalog of a run shares."""

    embedder: Embedder | None
    cache: EmbeddingCache | None
    lists: ListTokens
    meta_tokens: dict[str, int]
    fastmcp: bool
    seed: int
    latency_queries: int
    """How many queries FastMCP's `_search` is timed on (its hash check is slow)."""


def peak_rss_mb() -> float:
    """The process's peak resident memory so far (Linux reports KiB)."""
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def build(catalog: Catalog, ctx: Context) -> tuple[Retriever, dict[str, Any]]:
    """The router's index of `catalog` (vectors from the cache where it has them)."""
    started = time.perf_counter()
    retriever, stats = Retriever.build(catalog, ctx.embedder, ctx.cache)
    seconds = time.perf_counter() - started
    dim = ctx.embedder.dim if ctx.embedder else 0
    return retriever, {
        "build_seconds": round(seconds, 3),
        "embedded": stats.embedded,
        "from_cache": stats.from_cache,
        "dense_matrix_mb": round(len(catalog) * dim * 4 / 2**20, 2),
    }


def measure(
    catalog: Catalog,
    retriever: Retriever,
    index_cost: dict[str, Any],
    queries: Sequence[Query],
    indices: Sequence[int],
    embedded: EmbeddedQueries,
    ctx: Context,
    tick: Any = None,
    subset: Sequence[int] = (),
) -> dict[str, Any]:
    """Every method on `queries` (rows `indices` of `embedded`), as one JSON object;
    `subset` (positions in `queries`) also gets its own mean metrics."""
    resolved, unknown = resolve_gold(catalog, queries)
    modes = [SearchMode.BM25] + ([SearchMode.DENSE, SearchMode.HYBRID] if ctx.embedder else [])
    routers = {m.value: RouterRanker(retriever, m, embedded) for m in modes}
    rankers: list[Ranker] = [RandomRanker(len(catalog), ctx.seed), routers["bm25"]]
    peer = None
    if ctx.fastmcp:
        peer = FastMCPRanker(catalog, embedded.texts)
        rankers.append(peer)
    if ctx.embedder:
        # the same vectors serve: the previous ranking reads only the whole query's row
        previous = retriever.with_ranking(PREVIOUS)
        rankers.append(RouterRanker(previous, SearchMode.HYBRID, embedded, name=PREVIOUS_METHOD))
    rankers += [routers[m.value] for m in modes[1:]]
    runs = run_methods(rankers, resolved, indices, tick)

    records = catalog.records
    lists = ctx.lists
    full = tokens.full_tokens(lists, records)
    methods: dict[str, Any] = {
        "none": {"metrics": None, "listed": len(catalog), "tokens_k5_mcp_mean": full["mcp"]}
    }
    for name, run in runs.items():
        k5 = [tokens.list_tokens(lists, [records[p] for p in r[:5]], "mcp") for r in run.rankings]
        methods[name] = {
            "metrics": mean_metrics(run.metrics),
            "latency_ms": percentiles(run.latencies_ms),
            "tokens_k5_mcp_mean": round(float(np.mean(k5)), 1) if k5 else 0.0,
        }
        if subset:
            methods[name]["scale_sample_metrics"] = mean_metrics([run.metrics[i] for i in subset])
    cost: dict[str, Any] = {**index_cost, "peak_rss_mb": peak_rss_mb()}
    if peer is not None:
        sample = list(indices[: ctx.latency_queries])
        methods[peer.name]["index_query_ms"] = methods[peer.name]["latency_ms"]
        methods[peer.name]["latency_ms"] = percentiles(peer.search_latencies(sample))
        cost["fastmcp_build_seconds"] = round(peer.build_seconds, 3)
    if ctx.embedder is not None:
        cost.update(_dense_cost(routers["dense"], [embedded.embed_ms[i] for i in indices]))
    router = runs.get(ROUTER) or runs["bm25"]
    margins = {
        f"vs_{name}": paired_margin(
            [m["recall@5"] for m in router.metrics], [m["recall@5"] for m in run.metrics]
        )
        for name, run in runs.items()
        if name != router.name and name != "random"
    }
    return {
        "tools": len(catalog),
        "servers": len(catalog.servers),
        "queries": len(resolved),
        "unknown_gold_tools": unknown,
        "full_tokens": full,
        "methods": methods,
        "recall@5_margins": margins,
        "groups": group_breakdown(runs, resolved, GROUP_FIELDS),
        "tokens": {
            "router": router.name,
            "k": tokens.routed_tokens(lists, records, router.rankings, full, ctx.meta_tokens),
            "budgets": tokens.budget_lists(
                lists, records, router.rankings, resolved, full[ToolFormat.MCP.value]
            ),
        },
        "cost": cost,
        "_rankings": router.rankings,  # for the exact-count check; dropped from the JSON
    }


def _dense_cost(dense: RouterRanker, embed_ms: Sequence[float | None]) -> dict[str, Any]:
    """Dense search time (query vectors given) against the query's embedding time."""
    search = dense.search_ms
    timed = [(s, e) for s, e in zip(search, embed_ms, strict=True) if e]
    ratios = [s / e for s, e in timed]
    return {
        "embed_query_ms": percentiles([e for _, e in timed]),
        "dense_search_ms": percentiles(search),
        "dense_to_embed_ratio_p50": round(float(np.median(ratios)), 4) if ratios else None,
    }
