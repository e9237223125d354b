"""The methods compared, each ranking one catalog's tools for a query.

- `hybrid` (the router), `dense`, `bm25`: `Retriever.search` in that mode, 100 deep, as
  `mcp-router route` ranks (step splitting and exact-name rescue included). Dense and
  hybrid latencies include the query's embedding time, so they are measured on the
  queries whose embedding was timed alone (`--latency-queries`).
- `random`: k tools drawn uniformly (seeded per query): the floor.
- `none` (everything listed) ranks nothing; it is priced in tokens only.
- `fastmcp_bm25`: see `benchmarks.suite.fastmcp_peer`.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from router.embedding.base import Embedder, Vectors
from router.retrieval.retriever import CANDIDATE_DEPTH, Retriever, SearchMode

ROUTER = "hybrid"
_BATCH = 32
ORDER = ("random", "bm25", "fastmcp_bm25", "dense", "hybrid")
"""Methods in the order every table and chart shows them; the router last."""
PREVIOUS_METHOD = "hybrid_previous"
"""The router's previous ranking (`router.retrieval.types.PREVIOUS`) on the same indexes."""


def method_order(names: Collection[str]) -> list[str]:
    """`names` in display order: the baselines, extra hybrid variants, then the router."""
    known = [m for m in ORDER if m in names]
    extra = sorted(n for n in names if n == PREVIOUS_METHOD)
    return known[:-1] + extra + known[-1:] if known[-1:] == [ROUTER] else known + extra


@dataclass(frozen=True, slots=True)
class EmbeddedQueries:
    """Each query's vectors (the query and its step parts) and, for the timed ones, the
    milliseconds its embedding took on its own."""

    texts: tuple[str, ...]
    vectors: tuple[Vectors | None, ...]
    embed_ms: tuple[float | None, ...]


class Ranker(Protocol):
    name: str

    def rank(self, index: int) -> tuple[list[int], float | None]:
        """Catalog positions best first (up to 100) and the milliseconds it took (None
        when that is not known: a dense search of a query whose embedding was batched)."""
        ...


def embed_queries(
    retriever: Retriever,
    embedder: Embedder | None,
    texts: Sequence[str],
    timed: Collection[int],
    tick: Callable[[int], None] | None = None,
) -> EmbeddedQueries:
    """Embed every query once (the vectors serve every catalog size of a set): the `timed`
    ones one by one, as the router embeds a request; the others in batches, which is many
    times faster on a CPU and gives the same vectors."""
    count = len(texts)
    if embedder is None:
        return EmbeddedQueries(tuple(texts), (None,) * count, (None,) * count)
    retriever.embed_query("warm up")  # loading the model is not a query's latency
    vectors: dict[int, Vectors] = {}
    times: dict[int, float] = {}
    for i in sorted(timed):
        started = time.perf_counter()
        vectors[i] = retriever.embed_query(texts[i])
        times[i] = (time.perf_counter() - started) * 1000
        if tick:
            tick(1)
    rest = [i for i in range(count) if i not in vectors]
    for start in range(0, len(rest), _BATCH):
        chunk = rest[start : start + _BATCH]
        parts = [retriever.query_texts(texts[i]) for i in chunk]
        matrix = embedder.embed_queries([text for texts_of in parts for text in texts_of])
        row = 0
        for i, texts_of in zip(chunk, parts, strict=True):
            vectors[i] = matrix[row : row + len(texts_of)]
            row += len(texts_of)
        if tick:
            tick(len(chunk))
    return EmbeddedQueries(
        tuple(texts),
        tuple(vectors[i] for i in range(count)),
        tuple(times.get(i) for i in range(count)),
    )


class RouterRanker:
    """One of the router's own search modes."""

    def __init__(
        self,
        retriever: Retriever,
        mode: SearchMode,
        queries: EmbeddedQueries,
        name: str | None = None,
    ) -> None:
        self.name = name or mode.value
        self._retriever = retriever
        self._mode = mode
        self._queries = queries
        self.search_ms: list[float] = []
        """Search time alone (no embedding), in call order."""

    def rank(self, index: int) -> tuple[list[int], float | None]:
        dense = self._mode is not SearchMode.BM25
        vectors = self._queries.vectors[index] if dense else None
        started = time.perf_counter()
        ranked = self._retriever.search(
            self._queries.texts[index], k=CANDIDATE_DEPTH, mode=self._mode, query_vectors=vectors
        )
        elapsed = (time.perf_counter() - started) * 1000
        self.search_ms.append(elapsed)
        catalog = self._retriever.catalog
        positions = [catalog.position(r.qualified_name) for r in ranked]
        if not dense:
            return positions, elapsed
        embed_ms = self._queries.embed_ms[index]
        return positions, None if embed_ms is None else elapsed + embed_ms


class RandomRanker:
    """Uniformly random tools, seeded by the query's index."""

    name = "random"

    def __init__(self, size: int, seed: int) -> None:
        self._size = size
        self._seed = seed

    def rank(self, index: int) -> tuple[list[int], float]:
        started = time.perf_counter()
        rng = np.random.default_rng([self._seed, index])
        drawn = rng.choice(self._size, size=min(CANDIDATE_DEPTH, self._size), replace=False)
        positions = [int(p) for p in drawn]
        return positions, (time.perf_counter() - started) * 1000
