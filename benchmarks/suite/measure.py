"""Running every method over a query sample on one catalog, and summarising what came out.

Metrics are `router.evaluation.metrics`'s (docs/architecture.md#datasets-and-metrics): Recall@k,
all-hit@k for k = 1, 3, 5, 10, nDCG@10 and MRR over gold groups.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.suite.methods import Ranker
from router.evaluation.metrics import ResolvedQuery, metric_names, score_ranking

Tick = Callable[[int], None]


@dataclass
class MethodRun:
    """Per-query outcomes of one method on one catalog."""

    name: str
    metrics: list[dict[str, float]] = field(default_factory=list)
    latencies_ms: list[float] = field(default_factory=list)
    rankings: list[list[int]] = field(default_factory=list)


def run_methods(
    rankers: Sequence[Ranker],
    queries: Sequence[ResolvedQuery],
    indices: Sequence[int],
    tick: Tick | None = None,
) -> dict[str, MethodRun]:
    """Rank each query (`indices[i]` is its row in the embedded queries) with each method."""
    runs = {r.name: MethodRun(r.name) for r in rankers}
    for item, index in zip(queries, indices, strict=True):
        for ranker in rankers:
            positions, elapsed = ranker.rank(index)
            run = runs[ranker.name]
            run.metrics.append(score_ranking(positions, item.groups))
            if elapsed is not None:
                run.latencies_ms.append(elapsed)
            run.rankings.append(positions)
        if tick:
            tick(1)
    return runs


def mean_metrics(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    if not rows:
        return dict.fromkeys(metric_names(), 0.0)
    return {name: round(float(np.mean([r[name] for r in rows])), 4) for name in metric_names()}


def percentiles(values: Sequence[float], digits: int = 3) -> dict[str, float]:
    """p50, p99, mean (and max) of a sample; zeros when empty."""
    if not values:
        return {"p50": 0.0, "p99": 0.0, "mean": 0.0, "max": 0.0}
    array = np.asarray(values, dtype=np.float64)
    return {
        "p50": round(float(np.percentile(array, 50)), digits),
        "p99": round(float(np.percentile(array, 99)), digits),
        "mean": round(float(array.mean()), digits),
        "max": round(float(array.max()), digits),
    }


def group_breakdown(
    runs: dict[str, MethodRun], queries: Sequence[ResolvedQuery], fields: Sequence[str]
) -> dict[str, Any]:
    """Metrics per value of the first query field present (`level`, `category`, `split`)."""
    name = next((f for f in fields if any(q.query.field(f) for q in queries)), None)
    if name is None:
        return {}
    members: dict[str, list[int]] = defaultdict(list)
    for i, item in enumerate(queries):
        value = item.query.field(name)
        if value is not None:
            members[f"{name}={value}"].append(i)
    return {
        label: {
            "count": len(rows),
            "methods": {
                method: mean_metrics([run.metrics[i] for i in rows]) for method, run in runs.items()
            },
        }
        for label, rows in sorted(members.items(), key=lambda item: _natural(item[0]))
    }


def _natural(label: str) -> tuple[int, str]:
    _, _, value = label.partition("=")
    return (int(value), label) if value.isdigit() else (1 << 30, label)
