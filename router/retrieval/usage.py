"""Usage feedback: the tools called after a search lift those tools for similar queries.

When a client searches and then calls one of the tools it was shown, the pair (the query,
the tool) is remembered. A later query close in meaning to a remembered one (cosine at
least `threshold`) lifts the tools called after it, more the closer it is. The pairs live in
one SQLite file in the cache folder (`usage.sqlite3`), keyed by the embedding model so
another model's vectors never mix in; nothing leaves the machine, `router.learn: false`
turns it off, and deleting the file forgets everything.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

from router.embedding.base import Vectors
from router.embedding.cache import connect

if TYPE_CHECKING:
    import sqlite3

    import numpy as np
    import numpy.typing as npt

ToolKey = tuple[str, str]
"""(server, tool name): stable across renames of the qualified name."""

_SCHEMA = """
CREATE TABLE IF NOT EXISTS usage (
    model_id TEXT NOT NULL,
    query TEXT NOT NULL,
    server TEXT NOT NULL,
    tool TEXT NOT NULL,
    vector BLOB NOT NULL,
    calls INTEGER NOT NULL,
    last_used REAL NOT NULL,
    PRIMARY KEY (model_id, query, server, tool)
)
"""
THRESHOLD = 0.8
"""How close (cosine) a query must be to a remembered one to be lifted by it."""
USAGE_FILE = "usage.sqlite3"
"""Its name in the cache folder."""
MAX_PAIRS = 20_000
"""The most pairs kept per model; the least recently used go first."""


class UsageMemory:
    """Remembered (query, called tool) pairs and the lift they give a new query.

    Thread-safe: searches read it from worker threads while calls record into it.
    """

    def __init__(
        self,
        model_id: str,
        path: Path | None = None,
        *,
        threshold: float = THRESHOLD,
        max_pairs: int = MAX_PAIRS,
    ) -> None:
        import numpy as np

        self.model_id = model_id
        self.path = path
        self.threshold = threshold
        self.max_pairs = max_pairs
        self._lock = threading.Lock()
        self._pairs: set[tuple[str, str, str]] = set()  # (query, server, tool) held
        self._keys: list[ToolKey] = []
        self._vectors = np.zeros((0, 0), dtype=np.float32)
        self._rows: list[npt.NDArray[np.float32]] = []
        if path is not None and path.exists():
            self._load()

    def __len__(self) -> int:
        return len(self._keys)

    def _connect(self) -> sqlite3.Connection:
        assert self.path is not None
        return connect(self.path, _SCHEMA)

    def _load(self) -> None:
        import numpy as np

        connection = self._connect()
        try:
            rows = connection.execute(
                "SELECT query, server, tool, vector FROM usage WHERE model_id = ? "
                "ORDER BY last_used DESC LIMIT ?",
                (self.model_id, self.max_pairs),
            ).fetchall()
        finally:
            connection.close()
        for query, server, tool, blob in rows:
            self._append(query, (server, tool), np.frombuffer(blob, dtype=np.float32))

    def _append(self, query: str, key: ToolKey, vector: npt.NDArray[np.float32]) -> None:
        import numpy as np

        self._pairs.add((query, *key))
        self._keys.append(key)
        self._rows.append(vector)
        self._vectors = np.zeros((0, 0), dtype=np.float32)  # rebuilt on the next lift

    def record(self, query: str, query_vector: Vectors, tools: Iterable[ToolKey]) -> None:
        """Remember that `tools` were called after searching `query`."""
        import numpy as np

        vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        now = time.time()
        fresh = []
        with self._lock:
            for key in tools:
                if (query, *key) not in self._pairs:
                    self._append(query, key, vector)
                fresh.append((self.model_id, query, key[0], key[1], vector.tobytes(), now))
        if self.path is None or not fresh:
            return
        connection = self._connect()
        try:
            with connection:
                connection.executemany(
                    "INSERT INTO usage VALUES (?, ?, ?, ?, ?, 1, ?) "
                    "ON CONFLICT (model_id, query, server, tool) "
                    "DO UPDATE SET calls = calls + 1, last_used = excluded.last_used",
                    fresh,
                )
                connection.execute(
                    "DELETE FROM usage WHERE model_id = ? AND rowid NOT IN (SELECT rowid "
                    "FROM usage WHERE model_id = ? ORDER BY last_used DESC LIMIT ?)",
                    (self.model_id, self.model_id, self.max_pairs),
                )
        finally:
            connection.close()

    def lift(self, query_vector: Vectors) -> dict[ToolKey, float]:
        """Each remembered tool's lift for this query, from 0 (at the threshold) to 1 (the
        very query it was called after); tools under the threshold are absent."""
        import numpy as np

        with self._lock:
            if not self._keys:
                return {}
            if self._vectors.shape[0] != len(self._rows):
                self._vectors = np.vstack(self._rows)
            matrix, keys = self._vectors, list(self._keys)
        vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        if matrix.shape[1] != vector.shape[0]:
            return {}
        similarity = matrix @ vector
        lifted: dict[ToolKey, float] = {}
        for row in np.flatnonzero(similarity >= self.threshold).tolist():
            strength = (float(similarity[row]) - self.threshold) / (1.0 - self.threshold)
            key = keys[row]
            lifted[key] = max(lifted.get(key, 0.0), min(1.0, strength))
        return lifted
