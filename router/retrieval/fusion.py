"""Fusing the dense and BM25 signals: relative-score fusion (the default) and reciprocal
rank fusion (the previous default, kept for comparison)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

RRF_K = 20.0
"""The constant k of `1 / (k + rank)`. 60 is the usual choice for fusing many deep runs;
with two signals read 100 deep over catalogs of 2k-20k tools, 20 lets a tool that either
signal puts near the top outweigh the long noisy tails. Measured against 60 on the same
indexes (`python -m benchmarks --also-rrf-k 60`) on the three public sets at their own size
and with 1k-20k distractors: `hybrid` against `hybrid_rrf60` in
`benchmarks/results/bench.json` (`sets[*].base.methods` and `sets[*].scaled[*].methods`),
where 20 has the higher Recall@5 at every point."""


def reciprocal_rank_fusion(
    rankings: Sequence[npt.NDArray[np.intp]],
    weights: Sequence[float] | None = None,
    k: float = RRF_K,
) -> dict[int, float]:
    """`sum(w / (k + rank))` over the rankings that hold each item (ranks are 1-based)."""
    weights = weights if weights is not None else [1.0] * len(rankings)
    fused: dict[int, float] = {}
    for ranking, weight in zip(rankings, weights, strict=True):
        for rank, item in enumerate(ranking.tolist(), start=1):
            fused[item] = fused.get(item, 0.0) + weight / (k + rank)
    return fused


def relative_score_fusion(
    candidates: npt.NDArray[np.intp],
    dense: npt.NDArray[np.float32] | None,
    bm25: npt.NDArray[np.float32] | None,
    bm25_weight: float,
) -> npt.NDArray[np.float64]:
    """Each candidate's `(1 - w) * dense / best dense + w * bm25 / best bm25`.

    Dividing by the query's best score puts both signals on one scale without flattening
    what they say: a clear winner stays clearly ahead, where rank fusion scores the first of
    each list alike however far it leads, and exact ties are rare. A signal that found
    nothing adds 0.
    """
    fused = np.zeros(candidates.shape[0], dtype=np.float64)
    for signal, weight in ((dense, 1.0 - bm25_weight), (bm25, bm25_weight)):
        if signal is None or not candidates.size:
            continue
        values = signal[candidates].astype(np.float64)
        best = float(values.max())
        if best > 0:
            fused += weight * values / best
    return fused
