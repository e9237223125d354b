"""Exact against HNSW in one process: latency of the dense step and of the whole hybrid
search, and what HNSW loses against the exact scan (top-k overlap, Recall@5).

Every mode answers every query, in an order that rotates query by query, so a change in
the machine's load touches the modes alike. The first `WARM` queries run once per mode
beforehand, untimed, to warm caches (PostgreSQL's buffers, the BLAS and ONNX code paths).
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from benchmarks.suite.bootstrap import paired_margin
from benchmarks.suite.measure import percentiles
from router.embedding.base import Vectors
from router.evaluation.metrics import ResolvedQuery, score_ranking
from router.retrieval.retriever import CANDIDATE_DEPTH, Retriever
from router.vectors.dense import DenseSearch

WARM = 10
TOP = 5
HYBRID_K = 10


@dataclass(frozen=True, slots=True)
class Mode:
    """One way to answer the dense signal: "exact", or "hnsw-ef<n>"."""

    name: str
    dense: DenseSearch
    retriever: Retriever


@dataclass
class _Run:
    dense_ms: list[float] = field(default_factory=list)
    hybrid_ms: list[float] = field(default_factory=list)
    dense_tops: list[list[int]] = field(default_factory=list)
    hybrid_tops: list[list[int]] = field(default_factory=list)
    recall5: list[float] = field(default_factory=list)
    recall10: list[float] = field(default_factory=list)
    dense_recall5: list[float] = field(default_factory=list)


def run(
    modes: Sequence[Mode], queries: Sequence[ResolvedQuery], vectors: Sequence[Vectors]
) -> dict[str, dict[str, Any]]:
    """Each mode's figures; every mode after the first (the exact scan) is compared with it.

    `vectors[i]` embeds query i's whole text, the dense step's input; the hybrid search
    embeds its query itself (and its step clauses), as a server does.
    """
    for item, vector in list(zip(queries, vectors, strict=True))[:WARM]:
        for mode in modes:
            _one(mode, item, vector, _Run())
    runs = {m.name: _Run() for m in modes}
    for index, (item, vector) in enumerate(zip(queries, vectors, strict=True)):
        shift = index % len(modes)
        for mode in [*modes[shift:], *modes[:shift]]:
            _one(mode, item, vector, runs[mode.name])
    exact = runs[modes[0].name]
    figures: dict[str, dict[str, Any]] = {}
    for mode in modes:
        mine = runs[mode.name]
        entry: dict[str, Any] = {
            "dense_ms": percentiles(mine.dense_ms),
            "hybrid_ms": percentiles(mine.hybrid_ms),
            "recall@5": _mean(mine.recall5),
            "recall@10": _mean(mine.recall10),
            "dense_recall@5": _mean(mine.dense_recall5),
        }
        if mode is not modes[0]:
            entry |= {
                "overlap@5": _overlap(mine.dense_tops, exact.dense_tops, TOP),
                "overlap@100": _overlap(mine.dense_tops, exact.dense_tops, CANDIDATE_DEPTH),
                "returned_min": min(len(t) for t in mine.dense_tops),
                "hybrid_overlap@5": _overlap(mine.hybrid_tops, exact.hybrid_tops, TOP),
                "recall@5_lost": round(_mean(exact.recall5) - _mean(mine.recall5), 4),
                "recall@5_margin": paired_margin(mine.recall5, exact.recall5),
                "dense_recall@5_lost": round(
                    _mean(exact.dense_recall5) - _mean(mine.dense_recall5), 4
                ),
            }
        figures[mode.name] = entry
    return figures


def _one(mode: Mode, item: ResolvedQuery, vector: Vectors, run: _Run) -> None:
    start = time.perf_counter()
    _, top = mode.dense.rank(vector, CANDIDATE_DEPTH)
    run.dense_ms.append((time.perf_counter() - start) * 1000)
    start = time.perf_counter()
    results = mode.retriever.search(item.query.text, k=HYBRID_K)
    run.hybrid_ms.append((time.perf_counter() - start) * 1000)
    catalog = mode.retriever.catalog
    ranking = [catalog.position(r.tool.qualified_name) for r in results]
    metrics = score_ranking(ranking, item.groups)
    run.recall5.append(metrics["recall@5"])
    run.recall10.append(metrics["recall@10"])
    run.dense_recall5.append(score_ranking(top.tolist()[:TOP], item.groups)["recall@5"])
    run.dense_tops.append(top.tolist())
    run.hybrid_tops.append(ranking)


def _mean(values: Sequence[float]) -> float:
    return round(float(np.mean(values)), 4) if values else 0.0


def _overlap(tops: Sequence[Sequence[int]], exact: Sequence[Sequence[int]], k: int) -> float:
    """Mean share of the exact run's best `k` that the other run's best `k` also holds."""
    shares = [
        len(set(mine[:k]) & set(theirs[:k])) / max(1, len(theirs[:k]))
        for mine, theirs in zip(tops, exact, strict=True)
    ]
    return round(float(np.mean(shares)), 4)
