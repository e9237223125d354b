"""Frozen retrieval results that carry the reason for their rank."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from router.catalog import ToolRecord


class SearchMode(StrEnum):
    HYBRID = "hybrid"
    DENSE = "dense"
    BM25 = "bm25"


@dataclass(frozen=True, slots=True)
class ScoredTool:
    """One ranked tool with the score of every signal that placed it.

    `score` is the fused score that ordered the list (RRF for hybrid, cosine for dense,
    BM25 for bm25). Signal ranks are 1-based; `None` means the signal did not retrieve it.
    """

    tool: ToolRecord
    rank: int
    score: float
    dense_score: float | None = None
    dense_rank: int | None = None
    bm25_score: float | None = None
    bm25_rank: int | None = None
    exact_match: bool = False
    pinned: bool = False

    @property
    def qualified_name(self) -> str:
        return self.tool.qualified_name
