"""Live mode (`--config FILE`): the tools of real running upstreams instead of a dataset.

The upstreams are started and priced as `mcp-router inspect` does (tokens per server, in
the router's catalog form and as each server's own `tools/list`), then the router's index
is built over their tools and each task of `QUERIES` is routed: the query-scoped listing
(pins, top k, the meta-tools) is counted exactly, in every format.
"""

from __future__ import annotations

import statistics
from pathlib import Path
from typing import Any

import anyio

from benchmarks.listing_tokens import QUERIES
from benchmarks.suite.tokens import FORMATS, K_VALUES
from router.accounting.tokens import TokenCounter
from router.cli.inspect import collect
from router.config import load_config
from router.core.catalog import Catalog
from router.core.meta_tools import meta_tool_records
from router.core.tool_patterns import resolve_pins
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache
from router.retrieval.retriever import Retriever
from router.upstream.inspection import build_report


def run_live(
    config_path: Path,
    wait: float,
    embedder: Embedder | None,
    cache: EmbeddingCache | None,
    counter: TokenCounter,
    meta: dict[str, Any],
) -> dict[str, Any]:
    config = load_config(config_path)
    snapshot = anyio.run(collect, config, wait)
    inspected = build_report(config, snapshot, counter, config.router.k).model_dump(mode="json")
    order = [name for name in config.servers if name in snapshot.statuses]
    catalog = Catalog.from_specs(s for name in order for s in snapshot.tools.get(name, ()))
    pinned = resolve_pins(catalog, config.router.pin)
    retriever, _ = Retriever.build(catalog, embedder, cache)
    mode = "hybrid" if embedder is not None else "bm25"
    meta_records = meta_tool_records(config.router.k)
    full = inspected["totals"]["tokens"]
    routed: dict[str, Any] = {}
    listed: dict[str, list[str]] = {}
    for k in K_VALUES:
        counts: dict[str, list[int]] = {fmt: [] for fmt in FORMATS}
        for query in QUERIES:
            top = [r.tool for r in retriever.search(query, k=k, mode=mode) if r.tool not in pinned]
            tools = [*pinned, *top, *meta_records]
            if k == config.router.k:
                listed[query] = [t.qualified_name for t in tools]
            for fmt in FORMATS:
                counts[fmt].append(counter.count_tools(tools, fmt))
        routed[str(k)] = {fmt: _summary(values, full[fmt]) for fmt, values in counts.items()}
    return {
        "config": str(config_path),
        "mode": mode,
        "queries": list(QUERIES),
        "upstreams": [
            {
                "name": u["name"],
                "state": u["state"],
                "tools": u["tools"],
                "tokens_mcp": u["tokens"],
                "direct_tokens_mcp": u["direct_tokens"],
            }
            for u in inspected["upstreams"]
        ],
        "totals": {
            "tools": inspected["totals"]["tools"],
            "tokens": full,
            "direct_tokens_mcp": inspected["totals"]["direct_tokens"],
        },
        "default_listing": inspected["listings"]["default"],
        "routed": routed,
        "listed_at_k": {"k": config.router.k, "per_query": listed},
        "meta_tools": meta["names"],
    }


def _summary(values: list[int], full: int) -> dict[str, Any]:
    mean = statistics.fmean(values)
    return {
        "mean": round(mean, 1),
        "min": min(values),
        "max": max(values),
        "saved_percent": round(100 * (1 - mean / full), 2) if full else None,
    }
