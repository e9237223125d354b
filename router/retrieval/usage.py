"""Usage feedback: the tools called after a search lift those tools for similar queries.

When a client searches and then calls one of the tools it was shown, the pair (the query,
the tool) is remembered. A later query close in meaning to a remembered one (cosine at
least `threshold`) lifts the tools called after it, more the closer it is, but only once the
pair has come from `MIN_CALLS` searches or more: one search and call, a slip or a steered
model, teaches nothing. How far a lift can move a tool is the retriever's concern
(`Ranking.usage_cap`). The pairs persist through a `UsageRows`, keyed by the embedding model
so another model's vectors never mix in: one SQLite file in the cache folder (`SqliteUsage`,
`usage.sqlite3`: nothing leaves the machine, deleting the file forgets everything), or the
shared store's table, which every replica reads (`router.store.usage`, handed in: this
package never imports a store). `router.learn: false` turns it off.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Protocol

from router.core.errors import StoreError
from router.core.sqlite import connect
from router.embedding.base import Vectors

if TYPE_CHECKING:
    import sqlite3

    import numpy as np
    import numpy.typing as npt

logger = logging.getLogger(__name__)

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
MIN_CALLS = 2
"""Searches a pair must have come from before it lifts anything."""
USAGE_FILE = "usage.sqlite3"
"""Its name in the cache folder."""
MAX_PAIRS = 5_000
"""The most pairs kept per model, in memory and on disk; the least recently used go first.
Their vectors take 7.5 MiB at 384 dimensions, and one user rarely asks 5,000 different
things that each led to a call."""


StoredPair = tuple[str, str, str, bytes, int]
"""One remembered pair as it persists: (query, server, tool, the query's float32 vector as
bytes, the searches it came from everywhere it was recorded)."""


class UsageRows(Protocol):
    """Where one scope's pairs persist, for one model. Blocking (a file or a database);
    failures are `StoreError` or `sqlite3.Error`."""

    def load(self, limit: int) -> list[StoredPair]:
        """The `limit` most recently used pairs, the oldest first."""
        ...

    def add(
        self, query: str, keys: Sequence[ToolKey], vector: bytes, now: float, keep: int
    ) -> None:
        """One more search for each pair (a new one starts at 1); at most `keep` pairs stay,
        the least recently used go."""
        ...

    def changed(self) -> list[StoredPair]:
        """Pairs written since the last `load` or `changed` (by any process sharing them),
        the oldest first; [] where only this process writes."""
        ...


class SqliteUsage:
    """One model's pairs in a SQLite file (one scope per file)."""

    def __init__(self, path: Path, model_id: str) -> None:
        self.path = path
        self.model_id = model_id

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, _SCHEMA)

    def load(self, limit: int) -> list[StoredPair]:
        if not self.path.exists():
            return []
        connection = self._connect()
        try:
            rows = connection.execute(
                "SELECT query, server, tool, vector, calls FROM usage WHERE model_id = ? "
                "ORDER BY last_used ASC LIMIT -1 OFFSET max(0, "
                "(SELECT count(*) FROM usage WHERE model_id = ?) - ?)",
                (self.model_id, self.model_id, limit),
            ).fetchall()
        finally:
            connection.close()
        return [(str(q), str(s), str(t), bytes(v), int(c)) for q, s, t, v, c in rows]

    def add(
        self, query: str, keys: Sequence[ToolKey], vector: bytes, now: float, keep: int
    ) -> None:
        connection = self._connect()
        try:
            with connection:
                connection.executemany(
                    "INSERT INTO usage VALUES (?, ?, ?, ?, ?, 1, ?) "
                    "ON CONFLICT (model_id, query, server, tool) "
                    "DO UPDATE SET calls = calls + 1, last_used = excluded.last_used",
                    [(self.model_id, query, s, t, vector, now) for s, t in keys],
                )
                connection.execute(
                    "DELETE FROM usage WHERE model_id = ? AND rowid NOT IN (SELECT rowid "
                    "FROM usage WHERE model_id = ? ORDER BY last_used DESC LIMIT ?)",
                    (self.model_id, self.model_id, keep),
                )
        finally:
            connection.close()

    def changed(self) -> list[StoredPair]:
        return []  # the file is this process's


class UsageMemory:
    """Remembered (query, called tool) pairs and the lift they give a new query.

    Thread-safe: searches read it from worker threads while calls record into it.
    """

    def __init__(
        self,
        model_id: str,
        path: Path | None = None,
        *,
        rows: UsageRows | None = None,
        threshold: float = THRESHOLD,
        max_pairs: int = MAX_PAIRS,
        min_calls: int = MIN_CALLS,
    ) -> None:
        """Pairs persist in `rows`, else in the SQLite file `path`, else nowhere."""
        import numpy as np

        self.model_id = model_id
        self.path = path
        self.rows = rows if rows is not None else SqliteUsage(path, model_id) if path else None
        self.threshold = threshold
        self.max_pairs = max_pairs
        self.min_calls = min_calls
        self._lock = threading.Lock()
        # Held pairs, least recently used first, each with its row of `_matrix`. At most
        # `max_pairs` in memory as on disk: the least recently used row is reused.
        self._slots: OrderedDict[tuple[str, str, str], int] = OrderedDict()
        self._keys: list[ToolKey] = []  # by row
        self._calls: list[int] = []  # by row: the searches the row's pair came from
        self._matrix = np.zeros((0, 0), dtype=np.float32)
        if self.rows is not None:
            try:
                self._apply(self.rows.load(self.max_pairs))
            except StoreError as exc:  # starts empty; `refresh` reads it once it can
                logger.warning("usage pairs not loaded: %s", exc)

    def __len__(self) -> int:
        return len(self._slots)

    def _apply(self, pairs: Iterable[StoredPair]) -> None:
        """Hold stored pairs with their stored counts (oldest first: the newest end last)."""
        import numpy as np

        with self._lock:
            for query, server, tool, vector, calls in pairs:
                row = self._hold(query, (server, tool), np.frombuffer(vector, np.float32))
                self._calls[row] = calls

    def refresh(self) -> None:
        """Take in what other replicas taught this scope since (a shared store); a store
        that cannot be read leaves the memory as it is."""
        if self.rows is None:
            return
        try:
            changed = self.rows.changed()
        except StoreError as exc:
            logger.debug("usage pairs not refreshed: %s", exc)
            return
        if changed:
            self._apply(changed)

    def _hold(self, query: str, key: ToolKey, vector: npt.NDArray[np.float32]) -> int:
        """Hold the pair as the most recently used, in a free row or the oldest pair's, one
        more search counted; its row."""
        import numpy as np

        pair = (query, *key)
        if pair in self._slots:
            self._slots.move_to_end(pair)
            row = self._slots[pair]
            self._calls[row] += 1
            return row
        if len(self._slots) >= self.max_pairs:
            _, row = self._slots.popitem(last=False)
            self._keys[row] = key
            self._calls[row] = 1
        else:
            row = len(self._keys)
            self._keys.append(key)
            self._calls.append(1)
            if row >= self._matrix.shape[0] or self._matrix.shape[1] != vector.shape[0]:
                grown = np.zeros(
                    (min(self.max_pairs, max(64, 2 * row)), vector.shape[0]), dtype=np.float32
                )
                if self._matrix.shape[1] == vector.shape[0]:
                    grown[:row] = self._matrix[:row]
                self._matrix = grown
        self._matrix[row] = vector
        self._slots[pair] = row
        return row

    def record(self, query: str, query_vector: Vectors, tools: Iterable[ToolKey]) -> None:
        """Remember that `tools` were called after searching `query`."""
        import numpy as np

        vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        keys = list(dict.fromkeys(tools))
        with self._lock:
            for key in keys:
                self._hold(query, key, vector)
        if self.rows is None or not keys:
            return
        try:
            self.rows.add(query, keys, vector.tobytes(), time.time(), self.max_pairs)
        except StoreError as exc:  # the pair is still learnt here; the store logs its failure
            logger.warning("usage pair not stored: %s", exc)

    def lift(self, query_vector: Vectors) -> dict[ToolKey, float]:
        """Each remembered tool's lift for this query, from 0 (at the threshold) to 1 (the
        very query it was called after); tools under the threshold are absent."""
        import numpy as np

        vector = np.asarray(query_vector, dtype=np.float32).reshape(-1)
        with self._lock:  # `record` may overwrite a row meanwhile: score under the lock
            if not self._keys or self._matrix.shape[1] != vector.shape[0]:
                return {}
            similarity = self._matrix[: len(self._keys)] @ vector
            similarity[np.asarray(self._calls) < self.min_calls] = -1.0  # taught once: nothing
            keys = list(self._keys)
        lifted: dict[ToolKey, float] = {}
        for row in np.flatnonzero(similarity >= self.threshold).tolist():
            strength = (float(similarity[row]) - self.threshold) / (1.0 - self.threshold)
            key = keys[row]
            lifted[key] = max(lifted.get(key, 0.0), min(1.0, strength))
        return lifted
