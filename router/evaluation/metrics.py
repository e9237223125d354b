"""Retrieval quality over a query set (docs/architecture.md#datasets-and-metrics).

- Recall@k: mean over queries of the fraction of gold groups with a member in the top k.
- all-hit@k: share of queries whose every group has a member in the top k.
- nDCG@10: binary gain at the rank of each group's first member in the top 10, over the
  ideal (every group at the top).
- MRR: reciprocal rank of the first tool that satisfies any group (0 if none in the ranking).
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

import numpy as np

from router.accounting.formats import ToolFormat
from router.accounting.tokens import TokenCounter
from router.core.catalog import Catalog
from router.evaluation.dataset import Query
from router.retrieval.retriever import CANDIDATE_DEPTH, Retriever, SearchMode

CUTOFFS = (1, 3, 5, 10)
GROUP_FIELDS = ("level", "category", "split")


def metric_names() -> list[str]:
    return [f"recall@{k}" for k in CUTOFFS] + [f"all_hit@{k}" for k in CUTOFFS] + ["ndcg@10", "mrr"]


@dataclass(frozen=True, slots=True)
class ResolvedQuery:
    """A query whose gold tools are catalog positions; a group may be empty if none resolved."""

    query: Query
    groups: tuple[frozenset[int], ...]


def resolve_gold(catalog: Catalog, queries: Iterable[Query]) -> tuple[list[ResolvedQuery], int]:
    """Map gold `(server, name)` to catalog positions; returns the count of unknown gold tools."""
    resolved: list[ResolvedQuery] = []
    unknown = 0
    for query in queries:
        groups = []
        for group in query.gold_groups:
            members = set()
            for server, name in group:
                record = catalog.by_key(server, name)
                if record is None:
                    unknown += 1
                else:
                    members.add(catalog.position(record.qualified_name))
            groups.append(frozenset(members))
        resolved.append(ResolvedQuery(query, tuple(groups)))
    return resolved, unknown


def score_ranking(ranking: Sequence[int], groups: Sequence[frozenset[int]]) -> dict[str, float]:
    """All metrics of one query from its ranked catalog positions."""
    rank_of = {position: rank for rank, position in enumerate(ranking, start=1)}
    group_ranks = [
        min((rank_of[m] for m in group if m in rank_of), default=None) for group in groups
    ]
    total = len(groups)
    metrics: dict[str, float] = {}
    for k in CUTOFFS:
        hits = sum(1 for r in group_ranks if r is not None and r <= k)
        metrics[f"recall@{k}"] = hits / total
        metrics[f"all_hit@{k}"] = 1.0 if hits == total else 0.0
    seen_ranks = sorted({r for r in group_ranks if r is not None and r <= 10})
    dcg = sum(1.0 / math.log2(r + 1) for r in seen_ranks)
    ideal = sum(1.0 / math.log2(i + 1) for i in range(1, min(total, 10) + 1))
    metrics["ndcg@10"] = dcg / ideal
    first = min((r for r in group_ranks if r is not None), default=None)
    metrics["mrr"] = 1.0 / first if first else 0.0
    return metrics


@dataclass
class ModeResult:
    """Everything measured for one search mode."""

    mode: SearchMode
    per_query: list[dict[str, float]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    routed_tokens: list[int] = field(default_factory=list)
    group_of: list[str | None] = field(default_factory=list)

    def summary(self, full_tokens: int) -> dict[str, object]:
        routed_mean = float(np.mean(self.routed_tokens)) if self.routed_tokens else 0.0
        groups: dict[str, list[int]] = defaultdict(list)
        for index, group in enumerate(self.group_of):
            if group is not None:
                groups[group].append(index)
        return {
            "mode": str(self.mode),
            "metrics": _mean_metrics(self.per_query),
            "tokens": {
                "routed_mean": round(routed_mean, 1),
                "saved_percent": round(100.0 * (1 - routed_mean / full_tokens), 2)
                if full_tokens
                else 0.0,
            },
            "latency_ms": _latency_summary(self.latencies_ms),
            "groups": {
                name: {
                    "count": len(indices),
                    "metrics": _mean_metrics([self.per_query[i] for i in indices]),
                }
                for name, indices in sorted(groups.items(), key=lambda item: _natural(item[0]))
            },
        }


def _natural(text: str) -> tuple[int, str]:
    _, _, value = text.partition("=")
    return (int(value), text) if value.isdigit() else (1 << 30, text)


def _mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return {name: 0.0 for name in metric_names()}
    return {name: round(float(np.mean([row[name] for row in rows])), 4) for name in metric_names()}


def _latency_summary(latencies: Sequence[float]) -> dict[str, float]:
    if not latencies:
        return {"p50": 0.0, "p95": 0.0, "mean": 0.0}
    values = np.asarray(latencies)
    return {
        "p50": round(float(np.percentile(values, 50)), 3),
        "p95": round(float(np.percentile(values, 95)), 3),
        "mean": round(float(values.mean()), 3),
    }


def group_field(queries: Sequence[Query], requested: str | None) -> str | None:
    """The field to break results down by: the one asked for, else the first common one."""
    if requested is not None:
        return requested or None
    for name in GROUP_FIELDS:
        if any(q.field(name) is not None for q in queries[:50]):
            return name
    return None


def evaluate(
    retriever: Retriever,
    queries: Sequence[ResolvedQuery],
    modes: Sequence[SearchMode],
    *,
    k: int,
    counter: TokenCounter,
    group_by: str | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> list[ModeResult]:
    """Run every query in every mode; the query is embedded once and shared by the modes,
    but each dense mode's latency includes that embedding time."""
    results = {mode: ModeResult(mode) for mode in modes}
    records = retriever.catalog.records
    if any(mode is not SearchMode.BM25 for mode in modes):
        retriever.embed_query("warm up")  # loads the model: not a query's latency
    for done, item in enumerate(queries, start=1):
        text = item.query.text
        vectors = None
        embed_ms = 0.0
        if any(mode is not SearchMode.BM25 for mode in modes):
            started = time.perf_counter()
            vectors = retriever.embed_query(text)
            embed_ms = (time.perf_counter() - started) * 1000
        label = item.query.field(group_by) if group_by else None
        for mode in modes:
            started = time.perf_counter()
            ranked = retriever.search(text, k=CANDIDATE_DEPTH, mode=mode, query_vectors=vectors)
            elapsed = (time.perf_counter() - started) * 1000
            result = results[mode]
            result.latencies_ms.append(elapsed + (embed_ms if mode is not SearchMode.BM25 else 0))
            positions = [retriever.catalog.position(s.qualified_name) for s in ranked]
            result.per_query.append(score_ranking(positions, item.groups))
            routed = [records[p] for p in positions[:k]]
            result.routed_tokens.append(counter.count_tools(routed, ToolFormat.MCP))
            result.group_of.append(f"{group_by}={label}" if label is not None else None)
        if on_progress:
            on_progress(done, len(queries))
    return [results[mode] for mode in modes]
