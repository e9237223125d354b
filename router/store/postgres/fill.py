"""The COPY fill: the vectors an index table lacks, embedded once for every replica.

Under a session advisory lock on the index table, one replica at a time copies what the
shared cache (`mcp_router_embeddings`) has, then what its local `seed` cache has, and
embeds the rest in batches. Each batch goes in by one binary COPY into a staging table and
from there into the shared cache and the index table, in one transaction, so an
interrupted fill keeps what it made. A replica that waited for the lock finds the rows
there and embeds nothing.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from router.core.errors import StoreError
from router.embedding.base import Embedder, Vectors
from router.embedding.indexing import ProgressCallback

if TYPE_CHECKING:
    import psycopg

    from router.embedding.cache import EmbeddingCache
    from router.store.postgres.connections import Connections

# The store's one logger, whichever of its parts writes: its lines read as they always have.
logger = logging.getLogger(__name__)

_BATCH = 64
LOAD_CHUNK = 5000
"""Rows a seed batch holds, and rows a read of the index table fetches at a time."""
FILL_LOCK_TIMEOUT = "15min"
"""How long a replica waits for another that is embedding the same catalog."""


def fill_missing(
    connections: Connections,
    table: str,
    embedder: Embedder,
    missing: Sequence[str],
    text_of: Mapping[str, str],
    on_progress: ProgressCallback | None,
    *,
    namespace: str,
    seed: EmbeddingCache | None,
) -> set[str]:
    """Put `missing` into the index table, one replica at a time: whoever holds the lock
    copies what the shared cache (or the local `seed` cache) has and embeds the rest;
    whoever waited finds them there. Returns what this process embedded."""
    import psycopg
    from psycopg import sql

    where = connections.where
    embedded: set[str] = set()
    with connections.connection() as connection:
        connection.execute(f"SET lock_timeout = '{FILL_LOCK_TIMEOUT}'")
        try:
            connection.execute("SELECT pg_advisory_lock(%s)", (lock_key(table),))
        except psycopg.errors.LockNotAvailable:
            raise StoreError(
                f"store {where}: another replica has been filling namespace "
                f"{namespace!r} for {FILL_LOCK_TIMEOUT}; this one ranks with BM25 "
                "until it is done"
            ) from None
        try:
            present = stored_on(connection, table, missing)
            still = [fp for fp in missing if fp not in present]
            if not still:
                return embedded
            copied = sql.SQL(
                "INSERT INTO {} (fingerprint, embedding) "
                "SELECT fingerprint, embedding FROM mcp_router_embeddings "
                "WHERE model_id = %s AND fingerprint = ANY(%s) ON CONFLICT DO NOTHING"
            ).format(sql.Identifier(table))
            connection.execute(copied, (embedder.model_id, still))
            present = stored_on(connection, table, still)
            still = [fp for fp in still if fp not in present]
            if still and seed is not None:
                seeded: dict[str, Vectors] = {}
                for fingerprint, vector in seed.iter_vectors(embedder.model_id, still):
                    seeded[fingerprint] = vector
                    if len(seeded) == LOAD_CHUNK:
                        _insert(connection, table, embedder.model_id, seeded)
                        present.update(seeded)
                        seeded = {}
                _insert(connection, table, embedder.model_id, seeded)
                present.update(seeded)
                still = [fp for fp in still if fp not in present]
            if on_progress and still:
                on_progress(0, len(still))
            for start in range(0, len(still), _BATCH):
                batch = still[start : start + _BATCH]
                vectors = embedder.embed_documents([text_of[fp] for fp in batch])
                made = dict(zip(batch, vectors, strict=True))
                _insert(connection, table, embedder.model_id, made)
                embedded.update(batch)
                if on_progress:
                    on_progress(start + len(batch), len(still))
        finally:
            connection.execute("SELECT pg_advisory_unlock(%s)", (lock_key(table),))
            connection.execute("RESET lock_timeout")
    if embedded:
        logger.info("store %s: embedded %d tools for all replicas", where, len(embedded))
    return embedded


def _insert(
    connection: psycopg.Connection[Any],
    table: str,
    model_id: str,
    vectors: Mapping[str, Vectors],
) -> None:
    """Into the shared cache and the index table, in one transaction (a batch at a time,
    so an interrupted fill keeps what it made): one binary COPY into a staging table,
    then two inserts that skip what is there already."""
    from psycopg import sql

    if not vectors:
        return
    with connection.transaction():
        connection.execute(
            "CREATE TEMP TABLE IF NOT EXISTS mcp_router_staging "
            "(fingerprint text NOT NULL, embedding vector NOT NULL) ON COMMIT DELETE ROWS"
        )
        with (
            connection.cursor() as cursor,
            cursor.copy(
                "COPY mcp_router_staging (fingerprint, embedding) FROM STDIN (FORMAT BINARY)"
            ) as copy,
        ):
            copy.set_types(["text", "vector"])
            for fingerprint, vector in vectors.items():
                copy.write_row((fingerprint, np.asarray(vector, dtype=np.float32)))
        connection.execute(
            "INSERT INTO mcp_router_embeddings (model_id, fingerprint, embedding) "
            "SELECT %s, fingerprint, embedding FROM mcp_router_staging "
            "ON CONFLICT DO NOTHING",
            (model_id,),
        )
        connection.execute(
            sql.SQL(
                "INSERT INTO {} (fingerprint, embedding) "
                "SELECT fingerprint, embedding FROM mcp_router_staging ON CONFLICT DO NOTHING"
            ).format(sql.Identifier(table))
        )


def stored_on(
    connection: psycopg.Connection[Any], table: str, among: Sequence[str] | None = None
) -> set[str]:
    """The fingerprints `table` holds (of `among`, if given)."""
    from psycopg import sql

    query = sql.SQL("SELECT fingerprint FROM {}").format(sql.Identifier(table))
    if among is None:
        rows = connection.execute(query).fetchall()
    else:
        query = sql.SQL("{} WHERE fingerprint = ANY(%s)").format(query)
        rows = connection.execute(query, (list(among),)).fetchall()
    return {str(row[0]) for row in rows}


def lock_key(name: str) -> int:
    """A signed 64-bit advisory-lock key for a name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)
