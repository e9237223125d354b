"""The exact mode's vectors: a catalog's rows of its index table read into one matrix.

A snapshot searched in memory (`exact`) holds its catalog's vectors as the local store does.
Each re-index copies the previous matrix's rows and reads only the fingerprints it lacked,
so a change of one upstream reads that upstream's new tools, not the catalog.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from router.core.errors import StoreError
from router.embedding.base import Vectors
from router.store.postgres.fill import LOAD_CHUNK

if TYPE_CHECKING:
    from router.store.postgres.connections import Connections


class ExactMatrix:
    """Reads a catalog's vectors into one matrix, keeping the last for the next read."""

    def __init__(self, connections: Connections) -> None:
        self._connections = connections
        self._loaded: tuple[str, dict[str, int], Vectors] | None = None
        """The last exact snapshot's table, rows by fingerprint and matrix (shared with it)."""

    def forget(self) -> None:
        """Let the last matrix go (the store now searches through the HNSW index)."""
        self._loaded = None

    def load(self, table: str, fingerprints: Sequence[str], dim: int) -> Vectors:
        """The catalog's vectors in one matrix. The previous snapshot's rows are copied; only
        fingerprints it lacked are read, in chunks straight into their rows (so a re-index
        after one upstream's change reads that upstream's new tools, not the catalog)."""
        from psycopg import sql

        rows: dict[str, list[int]] = {}
        for position, fingerprint in enumerate(fingerprints):
            rows.setdefault(fingerprint, []).append(position)
        matrix = np.empty((len(fingerprints), dim), dtype=np.float32)
        wanted: set[str] = set(rows)
        previous = self._loaded
        if previous is not None and previous[0] == table:  # one table: one model's vectors
            _, held, vectors = previous
            for fingerprint, placed in rows.items():
                row = held.get(fingerprint)
                if row is not None:
                    matrix[placed] = vectors[row]
                    wanted.discard(fingerprint)
        if wanted:
            everything = len(wanted) == len(rows)
            query = sql.SQL("SELECT fingerprint, embedding FROM {}").format(sql.Identifier(table))
            if not everything:
                query = sql.SQL("{} WHERE fingerprint = ANY(%s)").format(query)
            params = None if everything else (sorted(wanted),)
            with (
                self._connections.connection() as connection,
                connection.transaction(),
                connection.cursor(name="mcp_router_load", binary=True) as cursor,
            ):
                cursor.itersize = LOAD_CHUNK
                for fingerprint, vector in cursor.execute(query, params):
                    if fingerprint in wanted:
                        matrix[rows[fingerprint]] = vector.to_numpy()
                        wanted.discard(fingerprint)
        if wanted:
            raise StoreError(
                f"store {self._connections.where}: {len(wanted)} tools' vectors vanished from "
                f"{table} while it was read"
            )
        self._loaded = (table, {fp: placed[0] for fp, placed in rows.items()}, matrix)
        return matrix
