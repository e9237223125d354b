"""The retriever: hybrid (dense + BM25, fused), dense-only or BM25-only top-k over a catalog."""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from router.catalog import Catalog, ToolRecord
from router.embedding.base import Embedder, Vectors
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import EmbeddingStats, ProgressCallback, embed_records
from router.errors import RouterError
from router.retrieval.decompose import split_steps
from router.retrieval.dense import DenseIndex, top_n
from router.retrieval.exact import NameMatcher
from router.retrieval.fusion import RRF_K, reciprocal_rank_fusion
from router.retrieval.lexical import LexicalIndex
from router.retrieval.types import ScoredTool, SearchMode

__all__ = ["CANDIDATE_DEPTH", "Retriever", "SearchMode", "ToolTokens"]

ToolTokens = Callable[[ToolRecord], int]

# How deep each signal is read before fusion; beyond this a tool cannot reach the top k.
CANDIDATE_DEPTH = 100


@dataclass(frozen=True, slots=True)
class _Signals:
    """Per-tool scores and 1-based ranks of each signal for one query."""

    dense_scores: npt.NDArray[np.float32] | None
    dense_ranks: dict[int, int]
    bm25_scores: npt.NDArray[np.float32] | None
    bm25_ranks: dict[int, int]


class Retriever:
    """Ranks the tools of one catalog snapshot for a query; immutable once built."""

    def __init__(
        self,
        catalog: Catalog,
        embedder: Embedder | None,
        vectors: Vectors | None,
        *,
        pins: Iterable[str] = (),
        decompose: bool = False,
        rrf_k: float = RRF_K,
    ) -> None:
        if (embedder is None) != (vectors is None):
            raise ValueError("an embedder and its vectors come together")
        self.catalog = catalog
        self._embedder = embedder
        self._dense = DenseIndex(vectors) if vectors is not None else None
        self._lexical = LexicalIndex([r.search_text for r in catalog.records])
        self._names = NameMatcher(catalog.records)
        self._decompose = decompose
        self._rrf_k = rrf_k
        unknown = [p for p in pins if catalog.get(p) is None]
        if unknown:
            raise RouterError(f"pinned tools not in the catalog: {', '.join(unknown)}")
        self.pins = tuple(dict.fromkeys(catalog.position(p) for p in pins))

    @classmethod
    def build(
        cls,
        catalog: Catalog,
        embedder: Embedder | None,
        cache: EmbeddingCache | None = None,
        *,
        pins: Iterable[str] = (),
        on_progress: ProgressCallback | None = None,
        decompose: bool = False,
    ) -> tuple[Retriever, EmbeddingStats]:
        """Embed what the cache lacks and index everything (blocking: run in a thread)."""
        if embedder is None:
            stats = EmbeddingStats(total=len(catalog), from_cache=0, embedded=0)
            return cls(catalog, None, None, pins=pins, decompose=decompose), stats
        vectors, stats = embed_records(catalog.records, embedder, cache, on_progress)
        return cls(catalog, embedder, vectors, pins=pins, decompose=decompose), stats

    def with_rrf_k(self, rrf_k: float) -> Retriever:
        """The same indexes, hybrid results fused with another RRF constant (to compare)."""
        clone = copy.copy(self)
        clone._rrf_k = rrf_k
        return clone

    @property
    def modes(self) -> tuple[SearchMode, ...]:
        if self._dense is None:
            return (SearchMode.BM25,)
        return tuple(SearchMode)

    def search(
        self,
        query: str,
        *,
        k: int | None = 5,
        budget: int | None = None,
        mode: SearchMode | str = SearchMode.HYBRID,
        tool_tokens: ToolTokens | None = None,
        query_vectors: Vectors | None = None,
    ) -> list[ScoredTool]:
        """The pinned tools, then the best `k` tools (or those fitting `budget` tokens).

        `query_vectors` lets a caller that already embedded the query (and its step parts,
        see `embed_query`) skip embedding it again.
        """
        mode = SearchMode(mode)
        if mode is not SearchMode.BM25 and self._dense is None:
            raise RouterError(f"search mode {mode} needs an embedding model; use bm25")
        if budget is not None and tool_tokens is None:
            raise ValueError("a token budget needs a tool_tokens function")
        depth = max(CANDIDATE_DEPTH, k or 0)
        texts = self.query_texts(query)
        if mode is not SearchMode.BM25 and query_vectors is None:
            query_vectors = self.embed_query(query)
        ranked, scores, signals = self._rank(texts, query_vectors, mode, depth)

        named = [p for p in self._names.match(query) if p not in self.pins]
        order = (
            list(self.pins) + named + [p for p in ranked if p not in named and p not in self.pins]
        )
        chosen = self._select(order, k, budget, tool_tokens)
        return [
            self._scored(position, rank, scores.get(position, 0.0), signals, position in named)
            for rank, position in enumerate(chosen, start=1)
        ]

    def query_texts(self, query: str) -> list[str]:
        """The whole query, then its step parts when it asks for several things."""
        parts = split_steps(query) if self._decompose else []
        return [query, *parts]

    def embed_query(self, query: str) -> Vectors:
        """Vectors of the query and of its step parts, one row each (blocking)."""
        assert self._embedder is not None
        return self._embedder.embed_queries(self.query_texts(query))

    def _rank(
        self,
        texts: Sequence[str],
        query_vectors: Vectors | None,
        mode: SearchMode,
        depth: int,
    ) -> tuple[list[int], dict[int, float], _Signals]:
        """The merged order, each tool's best score over the query texts, and the signals
        of the whole query."""
        per_text: list[list[int]] = []
        best: dict[int, float] = {}
        signals: _Signals | None = None
        for index, text in enumerate(texts):
            dense_scores = bm25_scores = None
            rankings: list[npt.NDArray[np.intp]] = []
            if mode is not SearchMode.BM25:
                assert self._dense is not None and query_vectors is not None
                dense_scores = self._dense.scores(query_vectors[index])
                rankings.append(top_n(dense_scores, depth)[0])
            if mode is not SearchMode.DENSE:
                bm25_scores = self._lexical.scores(text)
                positive = int(np.count_nonzero(bm25_scores > 0))
                rankings.append(top_n(bm25_scores, min(depth, positive))[0])
            if len(rankings) == 1:
                order = rankings[0].tolist()
                raw = dense_scores if dense_scores is not None else bm25_scores
                assert raw is not None
                text_scores = {p: float(raw[p]) for p in order}
            else:
                text_scores = reciprocal_rank_fusion(rankings, k=self._rrf_k)
                order = sorted(text_scores, key=lambda p: (-text_scores[p], p))[:depth]
            per_text.append(order)
            for position in order:
                best[position] = max(best.get(position, -np.inf), text_scores[position])
            if index == 0:
                signals = _Signals(
                    dense_scores=dense_scores,
                    dense_ranks=_ranks(rankings[0]) if dense_scores is not None else {},
                    bm25_scores=bm25_scores,
                    bm25_ranks=_ranks(rankings[-1]) if bm25_scores is not None else {},
                )
        assert signals is not None
        return _interleave(per_text, depth), best, signals

    def _select(
        self,
        order: Sequence[int],
        k: int | None,
        budget: int | None,
        tool_tokens: ToolTokens | None,
    ) -> list[int]:
        pinned = [p for p in order if p in self.pins]
        rest = [p for p in order if p not in self.pins]
        if budget is None:
            return pinned + rest[: k if k is not None else len(rest)]
        assert tool_tokens is not None
        records = self.catalog.records
        spent = sum(tool_tokens(records[p]) for p in pinned)
        chosen = list(pinned)
        for position in rest:
            if k is not None and len(chosen) - len(pinned) >= k:
                break
            cost = tool_tokens(records[position])
            if spent + cost > budget:
                break  # the set stays a prefix of the ranking: best-ranked tools only
            spent += cost
            chosen.append(position)
        return chosen

    def _scored(
        self, position: int, rank: int, fused: float, signals: _Signals, exact: bool
    ) -> ScoredTool:
        return ScoredTool(
            tool=self.catalog.records[position],
            rank=rank,
            score=fused,
            dense_score=_score_at(signals.dense_scores, position),
            dense_rank=signals.dense_ranks.get(position),
            bm25_score=_score_at(signals.bm25_scores, position),
            bm25_rank=signals.bm25_ranks.get(position),
            exact_match=exact,
            pinned=position in self.pins,
        )


def _ranks(ranking: npt.NDArray[np.intp]) -> dict[int, int]:
    return {int(p): rank for rank, p in enumerate(ranking.tolist(), start=1)}


def _score_at(scores: npt.NDArray[np.float32] | None, position: int) -> float | None:
    return None if scores is None else float(scores[position])


def _interleave(rankings: Sequence[Sequence[int]], depth: int) -> list[int]:
    """Round-robin merge: the whole query's best, then each part's best, and so on.

    With one ranking this is that ranking. With parts, every step of a multi-step request
    gets its best tool into the first few places instead of the whole query's near-duplicates.
    """
    merged: dict[int, None] = {}
    for rank in range(depth):
        for ranking in rankings:
            if rank < len(ranking):
                merged.setdefault(ranking[rank], None)
        if len(merged) >= depth:
            break
    return list(merged)[:depth]
