"""Reciprocal rank fusion of several rankings."""

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
