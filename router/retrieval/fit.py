"""Whether any ranked tool fits the request, or the list is only the least far of a poor lot.

A search always answers with its best candidates; this says whether the best of them is
close enough to be trusted. The judge is the best cosine among the results (the dense signal
of the whole request), against a floor calibrated for the model on the dev halves of the
public sets, the people's-requests set and MSC-Bench's requests that have no tool
(`benchmarks.no_match`; the model's `match_floor` in models/manifest.json). A tool named
exactly always fits; a pinned tool, listed whatever the request, is not judged. A model
without a calibrated floor, and a BM25-only index, keep the rule the router had before
calibration: a shared word, or a cosine of `UNCALIBRATED` or more, is a fit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from router.retrieval.types import ScoredTool

UNCALIBRATED = 0.3
"""The cosine that counts as a fit for a model without a calibrated floor."""


@dataclass(frozen=True, slots=True)
class Fit:
    """How well a search's best result fits its request."""

    fits: bool
    best_similarity: float | None
    """The best cosine among the results; None without a dense signal."""
    floor: float | None
    """The calibrated cosine below which nothing fits; None: not calibrated for this model."""


def judge(results: Sequence[ScoredTool], floor: float | None) -> Fit:
    """The fit of `results` (best first) against `floor`."""
    results = [r for r in results if not r.pinned]
    dense = [r.dense_score for r in results if r.dense_score is not None]
    best = max(dense) if dense else None
    if not results:
        return Fit(False, best, floor)
    if any(r.exact_match for r in results):
        return Fit(True, best, floor)
    if floor is not None and best is not None:
        return Fit(best >= floor, best, floor)
    shared_word = any((r.bm25_score or 0.0) > 0 for r in results)
    return Fit(shared_word or (best is not None and best >= UNCALIBRATED), best, floor)
