"""Paired bootstrap confidence intervals for the difference between two methods.

Both methods ranked the same queries, so the per-query differences are resampled together:
the interval says how far the mean margin could move with another draw of queries.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

RESAMPLES = 2000
CONFIDENCE = 0.95


def paired_margin(
    ours: Sequence[float], theirs: Sequence[float], *, seed: int = 0
) -> dict[str, float]:
    """The mean of `ours - theirs` and its 95% percentile-bootstrap interval."""
    diff = np.asarray(ours, dtype=np.float64) - np.asarray(theirs, dtype=np.float64)
    if diff.size == 0:
        return {"mean": 0.0, "low": 0.0, "high": 0.0}
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, diff.size, size=(RESAMPLES, diff.size))
    means = diff[draws].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return {
        "mean": round(float(diff.mean()), 4),
        "low": round(float(low), 4),
        "high": round(float(high), 4),
    }


def format_margin(margin: dict[str, float]) -> str:
    """`+0.012 [+0.003, +0.021]`: a `paired_margin` as the tables print it."""
    return f"{margin['mean']:+.3f} [{margin['low']:+.3f}, {margin['high']:+.3f}]"
