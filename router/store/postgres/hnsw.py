"""The dense signal answered by pgvector's HNSW index: no vectors held in the process."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt
from psycopg import sql

from router.embedding.base import Vectors

UNSCORED = -1.0
"""The score of a tool the index did not return: the lowest cosine, never read by fusion."""


class RowSource(Protocol):
    """Where the index's searches are read (a `PostgresStore`: its pool and reconnection)."""

    def fetch(self, query: sql.Composed, params: Mapping[str, Any]) -> list[tuple[Any, ...]]: ...


class HnswIndex:
    """One snapshot's dense search through the store: the best `depth` by the HNSW index and,
    in the same round trip, the exact cosine of the tools fusion reads besides them."""

    exact = False

    def __init__(
        self,
        store: RowSource,
        table: str,
        fingerprints: Sequence[str],
        stale: int,
    ) -> None:
        self._store = store
        self._size = len(fingerprints)
        self._fingerprints = list(fingerprints)
        positions: dict[str, list[int]] = {}
        for position, fingerprint in enumerate(fingerprints):
            positions.setdefault(fingerprint, []).append(position)
        self._positions: Mapping[str, list[int]] = positions
        # Rows of tools this catalog no longer has may come back; ask for that many more.
        self._slack = min(stale, 100)
        self._query = sql.SQL(
            "(SELECT fingerprint, embedding <=> %(q)s AS distance, true AS nearest "
            "FROM {table} ORDER BY embedding <=> %(q)s LIMIT %(n)s) "
            "UNION ALL "
            "(SELECT fingerprint, embedding <=> %(q)s, false FROM {table} "
            "WHERE fingerprint = ANY(%(also)s))"
        ).format(table=sql.Identifier(table))

    def rank(
        self, query: Vectors, depth: int, also: Collection[int] = ()
    ) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.intp]]:
        scores = np.full(self._size, UNSCORED, dtype=np.float32)
        depth = min(depth, self._size)
        if depth <= 0:
            return scores, np.zeros(0, dtype=np.intp)
        wanted = sorted({self._fingerprints[p] for p in also})
        params = {
            "q": np.asarray(query, dtype=np.float32),
            "n": depth + self._slack,
            "also": wanted,
        }
        rows = self._store.fetch(self._query, params)
        top: list[int] = []
        for fingerprint, distance, nearest in rows:
            for position in self._positions.get(str(fingerprint), ()):
                scores[position] = 1.0 - float(distance)
                if nearest:
                    top.append(position)
        # Relaxed-order iterative scans may return near-ties out of order: order exactly,
        # ties by catalog position as the exact scan does.
        ordered = sorted(dict.fromkeys(top), key=lambda p: (-scores[p], p))[:depth]
        return scores, np.asarray(ordered, dtype=np.intp)
