"""Dense retrieval: exact top-n by dot product of normalised vectors, and the interface an
approximate index in a shared store (`router.store.postgres.hnsw`) shares with it."""

from __future__ import annotations

from collections.abc import Collection
from functools import cache
from typing import Protocol

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits

from router.embedding.base import Vectors

Ranking = tuple[npt.NDArray[np.intp], npt.NDArray[np.float32]]
"""(tool positions best first, their scores)."""


def top_n(scores: npt.NDArray[np.float32], n: int) -> Ranking:
    """The `n` highest scores, best first; ties broken by catalog position for determinism."""
    n = min(n, scores.shape[0])
    if n <= 0:
        return np.zeros(0, dtype=np.intp), np.zeros(0, dtype=np.float32)
    if n < scores.shape[0]:
        candidates = np.argpartition(-scores, n - 1)[:n]
    else:
        candidates = np.arange(scores.shape[0])
    order = np.lexsort((candidates, -scores[candidates]))
    chosen = candidates[order].astype(np.intp)
    return chosen, scores[chosen].astype(np.float32)


class DenseSearch(Protocol):
    """The dense signal of one catalog snapshot, tool positions as in its catalog."""

    @property
    def exact(self) -> bool:
        """Whether every tool is scored (else only the best and those asked for)."""
        ...

    def rank(
        self, query: Vectors, depth: int, also: Collection[int] = ()
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.intp]]:
        """(a score per tool, the best `depth` positions best first). The best and the
        positions in `also` carry their true cosine; an approximate index may leave the
        rest at -1, the lowest cosine, which fusion never reads."""
        ...


@cache
def _single_threaded_blas() -> None:
    """One BLAS thread for the whole process, set once.

    A query is one matrix-vector product, memory-bound: a second BLAS thread buys nothing,
    and its spin-waiting, beside torch's threads and other processes, made the product much
    slower on a loaded 2-core machine (no result file records that comparison). The
    single-threaded scan's time is in `benchmarks/results/bench.json`,
    `sets[*].base.cost.dense_search_ms` (and `scaled[*]` for 1k-20k distractors).
    """
    threadpool_limits(limits=1, user_api="blas")


class DenseIndex:
    """Exact search over an (n, dim) matrix. The scan grows linearly with n; its time at
    each catalog size of the suite is `cost.dense_search_ms` in
    `benchmarks/results/bench.json`, a fraction of the query's embedding time
    (`cost.dense_to_embed_ratio_p50`), so an approximate index would buy little there."""

    def __init__(self, vectors: Vectors) -> None:
        _single_threaded_blas()
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def scores(self, query: Vectors) -> npt.NDArray[np.float32]:
        if self.vectors.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        result: npt.NDArray[np.float32] = self.vectors @ np.asarray(query, dtype=np.float32)
        return result

    def search(self, query: Vectors, n: int) -> Ranking:
        return top_n(self.scores(query), n)

    @property
    def exact(self) -> bool:
        return True

    def rank(
        self, query: Vectors, depth: int, also: Collection[int] = ()
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.intp]]:
        scores = self.scores(query)
        return scores, top_n(scores, depth)[0]
