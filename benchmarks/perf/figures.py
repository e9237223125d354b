"""Summaries of timed samples, rounded for the JSON."""

from __future__ import annotations

import statistics
from collections.abc import Sequence

import numpy as np


def latency(ms: Sequence[float]) -> dict[str, float | int]:
    """Count, p50, p99, mean and min of milliseconds."""
    values = np.asarray(ms, dtype=np.float64)
    return {
        "n": len(ms),
        "p50_ms": round(float(np.percentile(values, 50)), 3),
        "p99_ms": round(float(np.percentile(values, 99)), 3),
        "mean_ms": round(float(values.mean()), 3),
        "min_ms": round(float(values.min()), 3),
    }


def median(values: Sequence[float], digits: int = 3) -> float:
    return round(statistics.median(values), digits)
