"""The retriever: hybrid (dense + BM25, fused), dense-only or BM25-only top-k over a catalog."""

from __future__ import annotations

import copy
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from router.core.catalog import Catalog, ToolRecord
from router.core.errors import RouterError, StoreError
from router.embedding.base import Embedder, Vectors
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import EmbeddingStats, ProgressCallback
from router.embedding.manifest import match_floor
from router.retrieval.decompose import split_steps
from router.retrieval.exact import NameMatcher
from router.retrieval.fusion import reciprocal_rank_fusion, relative_score_fusion
from router.retrieval.lexical import LexicalIndex, matched_top
from router.retrieval.server_signal import ServerSignal
from router.retrieval.servers import ServerNames
from router.retrieval.types import DEFAULT, Ranking, ScoredTool, SearchMode
from router.retrieval.usage import ToolKey
from router.vectors.dense import DenseIndex, DenseSearch
from router.vectors.indexing import DenseIndexer, exact_index

__all__ = ["CANDIDATE_DEPTH", "Ranking", "Retriever", "SearchMode", "ToolTokens"]

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
        vectors: Vectors | DenseSearch | None,
        *,
        pins: Iterable[str] = (),
        ranking: Ranking = DEFAULT,
    ) -> None:
        if (embedder is None) != (vectors is None):
            raise ValueError("an embedder and its vectors come together")
        self.catalog = catalog
        self._embedder = embedder
        self._dense: DenseSearch | None
        if vectors is None or not isinstance(vectors, np.ndarray):
            self._dense = vectors  # None, or an index in a shared store
        else:
            self._dense = DenseIndex(vectors)
        self._lexical = LexicalIndex([r.search_text for r in catalog.records], ranking.bm25_b)
        self._names = NameMatcher(catalog.records)
        self._servers = ServerNames(catalog.servers)
        self._server_tools: dict[str, list[int]] = {}
        for position, record in enumerate(catalog.records):
            self._server_tools.setdefault(record.server, []).append(position)
        self.ranking = ranking
        self._server_signal: ServerSignal | None = None  # built on first use
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
        ranking: Ranking = DEFAULT,
        store: DenseIndexer | None = None,
    ) -> tuple[Retriever, EmbeddingStats]:
        """Embed what the cache (or `store`) lacks and index everything (blocking: run in a
        thread). With a `store` (`router.store`), its vectors and its index serve the dense
        signal; without one, an exact scan over the vectors of `cache`."""
        if embedder is None:
            stats = EmbeddingStats(total=len(catalog), from_cache=0, embedded=0)
            return cls(catalog, None, None, pins=pins, ranking=ranking), stats
        dense: DenseSearch
        if store is None:
            dense, stats = exact_index(catalog.records, embedder, cache, on_progress)
        else:
            dense, stats = store.index(catalog.records, embedder, on_progress)
        return cls(catalog, embedder, dense, pins=pins, ranking=ranking), stats

    def with_ranking(self, ranking: Ranking) -> Retriever:
        """The same indexes, hybrid results ordered another way (to compare rankings)."""
        clone = copy.copy(self)
        clone.ranking = ranking
        return clone

    @property
    def match_floor(self) -> float | None:
        """The model's calibrated nothing-fits cosine (`router.retrieval.fit`); None: none."""
        return None if self._embedder is None else match_floor(self._embedder.model_id)

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
        lift: Mapping[ToolKey, float] | None = None,
        hidden: AbstractSet[int] = frozenset(),
        more: int = 0,
    ) -> list[ScoredTool]:
        """The pinned tools, then the best `k` tools (or those fitting `budget` tokens), then
        `more` behind them (the best `k` are the same with or without them: a server's share
        is of the top `k`).

        `query_vectors` lets a caller that already embedded the query (and its step parts,
        see `embed_query`) skip embedding it again. `lift` raises tools called after similar
        earlier queries (`UsageMemory.lift`), in hybrid mode. Tools at `hidden` catalog
        positions (outside the caller's profile) are never returned; the candidates read
        grow by as many, so a caller who may see few tools still gets `k`.
        """
        mode = SearchMode(mode)
        if mode is not SearchMode.BM25 and self._dense is None:
            raise RouterError(f"search mode {mode} needs an embedding model; use bm25")
        if budget is not None and tool_tokens is None:
            raise ValueError("a token budget needs a tool_tokens function")
        depth = min(max(CANDIDATE_DEPTH, (k or 0) + more) + len(hidden), len(self.catalog.records))
        texts = self.query_texts(query)
        if mode is not SearchMode.BM25 and query_vectors is None:
            assert self._embedder is not None  # dense alone reads the whole query only
            query_vectors = self._embedder.embed_queries(
                texts if mode is SearchMode.HYBRID else texts[:1]
            )
        try:
            ranked, scores, signals = self._rank(query, texts, query_vectors, mode, depth, lift)
        except StoreError:
            if mode is SearchMode.BM25:
                raise
            # The shared store's index is unreachable (it logs that once): BM25 alone, so
            # routing goes on while it is down.
            ranked, scores, signals = self._rank(query, texts, None, SearchMode.BM25, depth)

        servers = self._servers.named(query)
        named = [
            p for p in self._names.match(query, servers) if p not in self.pins and p not in hidden
        ]
        rest = self._spread(
            [p for p in ranked if p not in named and p not in self.pins and p not in hidden],
            k,
            servers,
        )
        order = [p for p in self.pins if p not in hidden] + named + rest
        shown = k + more if k is not None and budget is None else k
        chosen = self._select(order, shown, budget, tool_tokens)
        return [
            self._scored(position, rank, scores.get(position, 0.0), signals, position in named)
            for rank, position in enumerate(chosen, start=1)
        ]

    def _spread(self, ranked: list[int], k: int | None, servers: Collection[str]) -> list[int]:
        """No server takes more than `Ranking.server_share` of the top `k` unless the query
        names it: a server's tools past its share move behind the others, so one server
        listing many look-alike tools cannot flood an answer."""
        share = self.ranking.server_share
        if k is None or share >= 1.0:
            return ranked
        allowance = max(1, int(k * share))
        head: list[int] = []
        later: list[int] = []
        counts: dict[str, int] = {}
        for position in ranked:
            server = self.catalog.records[position].server
            if server in servers or counts.get(server, 0) < allowance:
                counts[server] = counts.get(server, 0) + 1
                head.append(position)
            else:
                later.append(position)
        return head + later

    def query_texts(self, query: str) -> list[str]:
        """The whole query, then its step clauses when it asks for several things."""
        parts = split_steps(query, self.ranking.step_parts) if self.ranking.step_weight > 0 else []
        return [query, *parts]

    def embed_query(self, query: str) -> Vectors:
        """Vectors of the query and of its step parts, one row each (blocking)."""
        assert self._embedder is not None
        return self._embedder.embed_queries(self.query_texts(query))

    def _rank(
        self,
        query: str,
        texts: Sequence[str],
        query_vectors: Vectors | None,
        mode: SearchMode,
        depth: int,
        lift: Mapping[ToolKey, float] | None = None,
    ) -> tuple[list[int], dict[int, float], _Signals]:
        """The order, each ordered tool's score, and the signals of the whole query."""
        dense = bm25 = dense_top = bm25_top = None
        if mode is not SearchMode.DENSE:
            bm25 = self._lexical.scores(texts[0])
            bm25_top = matched_top(bm25, depth)
        if mode is not SearchMode.BM25:
            assert self._dense is not None and query_vectors is not None
            also = self._scored_anyway(query, bm25_top, lift if mode is SearchMode.HYBRID else None)
            dense, dense_top = self._dense.rank(query_vectors[0], depth, also)
        signals = _Signals(
            dense_scores=dense,
            dense_ranks=_ranks(dense_top) if dense_top is not None else {},
            bm25_scores=bm25,
            bm25_ranks=_ranks(bm25_top) if bm25_top is not None else {},
        )
        if mode is not SearchMode.HYBRID:  # one signal, as it ranks on its own
            raw, top = (dense, dense_top) if dense is not None else (bm25, bm25_top)
            assert raw is not None and top is not None
            order = top.tolist()
            return order, {p: float(raw[p]) for p in order}, signals
        assert dense is not None and bm25 is not None and query_vectors is not None
        assert dense_top is not None and bm25_top is not None
        scores = self._fuse(dense_top, bm25_top, dense, bm25)
        weight = self.ranking.step_weight
        leaders: list[int] = []  # each step clause's own best tools
        for index in range(1, len(texts)):  # step clauses: a tool keeps its best score
            assert self._dense is not None
            step_bm25 = self._lexical.scores(texts[index])
            step_bm25_top = matched_top(step_bm25, depth)
            step_dense, step_dense_top = self._dense.rank(
                query_vectors[index], depth, step_bm25_top.tolist()
            )
            step = self._fuse(step_dense_top, step_bm25_top, step_dense, step_bm25)
            for position, score in step.items():
                scores[position] = max(scores.get(position, -np.inf), weight * score)
            if self.ranking.step_quota:
                best = sorted(step, key=lambda p: (-step[p], p))
                leaders.extend(p for p in best[: self.ranking.step_quota] if p not in leaders)
        self._add_bonuses(query, scores, dense, bm25, lift or {})
        if self.ranking.server_bonus:
            self._lift_servers(query_vectors[0], scores)
        order = sorted(scores, key=lambda p: (-scores[p], -dense[p], -bm25[p], p))[:depth]
        if leaders:
            # every step's leaders go up front (with the whole request's best), so one step's
            # look-alikes cannot fill the head while another step has none there
            front = sorted({order[0], *leaders}, key=lambda p: (-scores[p], p))
            chosen = set(front)
            order = front + [p for p in order if p not in chosen]
        return order, scores, signals

    def _scored_anyway(
        self,
        query: str,
        bm25_top: npt.NDArray[np.intp] | None,
        lift: Mapping[ToolKey, float] | None,
    ) -> set[int]:
        """The tools whose dense score fusion, bonuses or the results read besides the dense
        signal's own best: an approximate index scores these exactly too."""
        if self._dense is None or self._dense.exact:
            return set()
        wanted = set(self.pins) | set(self._names.match(query))
        if bm25_top is not None:
            wanted.update(bm25_top.tolist())
        if lift and self.ranking.usage_bonus:
            wanted.update(p for p in map(self._position_of, lift) if p is not None)
        if self.ranking.named_server_bonus:
            for server in self._servers.named(query):
                wanted.update(self._server_tools[server])
        return wanted

    def _position_of(self, key: ToolKey) -> int | None:
        """The catalog position of a (server, tool) the usage memory names, if still here."""
        record = self.catalog.by_key(*key)
        return None if record is None else self.catalog.position(record.qualified_name)

    def _fuse(
        self,
        dense_top: npt.NDArray[np.intp],
        bm25_top: npt.NDArray[np.intp],
        dense: npt.NDArray[np.float32],
        bm25: npt.NDArray[np.float32],
    ) -> dict[int, float]:
        """Fused scores of the tools either signal read."""
        if self.ranking.fusion == "rrf":
            return reciprocal_rank_fusion([dense_top, bm25_top], k=self.ranking.rrf_k)
        candidates = np.union1d(dense_top, bm25_top)
        fused = relative_score_fusion(candidates, dense, bm25, self.ranking.bm25_weight)
        return dict(zip(candidates.tolist(), fused.tolist(), strict=True))

    def _add_bonuses(
        self,
        query: str,
        scores: dict[int, float],
        dense: npt.NDArray[np.float32],
        bm25: npt.NDArray[np.float32],
        lift: Mapping[ToolKey, float],
    ) -> None:
        """Every tool of a named server rises, and every tool used after a similar query;
        then the leading tool's server-mates. The bonuses are fractions of the best fused
        score, so they mean the same under either fusion."""
        ranking = self.ranking
        if not scores:
            return
        scale = max(scores.values())
        if ranking.usage_bonus:
            for key, strength in lift.items():
                position = self._position_of(key)
                if position is not None:
                    bonus = min(ranking.usage_bonus * strength, ranking.usage_cap) * scale
                    scores[position] = scores.get(position, 0.0) + bonus
        if ranking.named_server_bonus:
            bonus = ranking.named_server_bonus * scale
            for server in self._servers.named(query):
                for position in self._server_tools[server]:
                    scores[position] = scores.get(position, 0.0) + bonus
        if ranking.companion_bonus:
            lead = min(scores, key=lambda p: (-scores[p], -dense[p], -bm25[p], p))
            for position in self._server_tools[self.catalog.records[lead].server]:
                if position in scores:
                    scores[position] += ranking.companion_bonus * scale

    def _lift_servers(self, query: Vectors, scores: dict[int, float]) -> None:
        """The nearest servers' tools rise (`server_signal.py`), with the vectors at hand."""
        if self._server_signal is None and isinstance(self._dense, DenseIndex):
            signal = ServerSignal.of(self.catalog.records, self._dense.vectors, self._server_tools)
            self._server_signal = signal.described(self._embedder)
        if self._server_signal is not None:
            self._server_signal.lift(scores, query, self.ranking.server_bonus)

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
