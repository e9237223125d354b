"""Dense retrieval: exact top-n by dot product of normalised vectors."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

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


class DenseIndex:
    """Exact search over an (n, dim) matrix; at 100k x 384 one query is a few milliseconds,
    so an approximate index would buy nothing measurable here."""

    def __init__(self, vectors: Vectors) -> None:
        self.vectors = np.ascontiguousarray(vectors, dtype=np.float32)

    def scores(self, query: Vectors) -> npt.NDArray[np.float32]:
        if self.vectors.shape[0] == 0:
            return np.zeros(0, dtype=np.float32)
        result: npt.NDArray[np.float32] = self.vectors @ np.asarray(query, dtype=np.float32)
        return result

    def search(self, query: Vectors, n: int) -> Ranking:
        return top_n(self.scores(query), n)
