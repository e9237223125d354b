"""On-disk embedding cache: one SQLite file, rows keyed by (model id, tool fingerprint).

SQLite gives atomic writes and safe concurrent readers for free, so two router processes
can share one cache directory. sqlite3 and numpy load on first use, in the indexing thread:
a server builds its cache object before it answers `initialize`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from router.core.sqlite import connect
from router.embedding.base import Vectors

if TYPE_CHECKING:
    import sqlite3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS embeddings (
    model_id TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    dim INTEGER NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model_id, fingerprint)
) WITHOUT ROWID
"""
_CHUNK = 500  # SQLite's default limit on bound parameters is 999


def default_cache_dir() -> Path:
    """`$MCP_ROUTER_CACHE_DIR`, else `$XDG_CACHE_HOME/mcp-router`, else `~/.cache/mcp-router`."""
    explicit = os.environ.get("MCP_ROUTER_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "mcp-router"


class EmbeddingCache:
    """Vectors by fingerprint; blocking I/O, so call it from a worker thread in async code."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / "embeddings.sqlite3"

    def _connect(self) -> sqlite3.Connection:
        return connect(self.path, _SCHEMA)

    def iter_vectors(
        self, model_id: str, fingerprints: Iterable[str]
    ) -> Iterator[tuple[str, Vectors]]:
        """The cached vectors among `fingerprints`, one at a time (nothing is gathered, so a
        20k-tool catalog's vectors need not all be held twice)."""
        import numpy as np

        wanted = list(dict.fromkeys(fingerprints))
        connection = self._connect()
        try:
            for start in range(0, len(wanted), _CHUNK):
                chunk = wanted[start : start + _CHUNK]
                marks = ",".join("?" * len(chunk))
                rows = connection.execute(
                    "SELECT fingerprint, dim, vector FROM embeddings "
                    f"WHERE model_id = ? AND fingerprint IN ({marks})",
                    [model_id, *chunk],
                )
                for fingerprint, dim, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape == (dim,):
                        yield fingerprint, vector
        finally:
            connection.close()

    def put_many(self, model_id: str, vectors: Mapping[str, Vectors]) -> None:
        import numpy as np

        rows: Sequence[tuple[str, str, int, bytes]] = [
            (model_id, fp, int(v.shape[0]), np.asarray(v, dtype=np.float32).tobytes())
            for fp, v in vectors.items()
        ]
        connection = self._connect()
        try:
            with connection:
                connection.executemany(
                    "INSERT OR REPLACE INTO embeddings VALUES (?, ?, ?, ?)", rows
                )
        finally:
            connection.close()
