"""The shared store: tool vectors and their HNSW index in PostgreSQL with pgvector.

Replicas configured with one `router.store` share one index per (namespace, model). The
first to see a tool embeds it, under an advisory lock, so replicas that start together wait
for it instead of embedding the same tools again; any later replica reads the vectors and
embeds nothing. Each then searches the dense signal either in memory (`exact`: the vectors
read into a matrix, as the local store does) or in the database (`hnsw`: nothing held), by
`router.store.search`.

psycopg is synchronous here on purpose: the index builder and every search already run in
worker threads (`LiveIndex`, `RouterState.search`), so a blocking driver never blocks the
event loop, and the retriever stays one synchronous code path for every store.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import numpy as np

from router.catalog import ToolRecord
from router.embedding.base import Embedder, Vectors
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import EmbeddingStats, ProgressCallback
from router.errors import StoreError
from router.retrieval.dense import DenseIndex, DenseSearch
from router.store.base import StoreStatus
from router.store.schema import hnsw_ddl, index_table_ddl, migrate

if TYPE_CHECKING:
    import psycopg
    from psycopg import sql
    from psycopg_pool import ConnectionPool

logger = logging.getLogger(__name__)

SearchChoice = Literal["auto", "exact", "hnsw"]

_BATCH = 64
_LOAD_CHUNK = 5000
_POOL_SIZE = 8
_CHECKOUT_TIMEOUT = 3.0
"""Seconds a search or an index build waits for a pooled connection."""
_RETRY_AFTER = 5.0
"""Once the store failed, uses within this many seconds fail at once (searches rank with
BM25 alone) instead of each waiting out a connection attempt."""
_FILL_LOCK_TIMEOUT = "15min"
"""How long a replica waits for another that is embedding the same catalog."""
_STATEMENT_TIMEOUT = "30s"
"""A search that takes longer has lost its database; say so instead of hanging."""


def redact(url: str) -> str:
    """The URL without its password, for messages and logs."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if parts.port:
        host = f"{host}:{parts.port}"
    user = f"{parts.username}@" if parts.username else ""
    return parts._replace(netloc=f"{user}{host}", query="").geturl()


class PostgresStore:
    """A `VectorStore` in PostgreSQL. `open()` connects and migrates; blocking throughout."""

    def __init__(
        self,
        url: str,
        *,
        namespace: str = "default",
        search: SearchChoice = "auto",
        exact_max_tools: int = 100_000,
        ef_search: int = 100,
        connect_timeout: float = 10.0,
        seed: EmbeddingCache | None = None,
    ) -> None:
        self.url = url
        self.where = redact(url)
        self.namespace = namespace
        self.search = search
        self.exact_max_tools = exact_max_tools
        self.ef_search = ef_search
        self.connect_timeout = connect_timeout
        self._seed = seed
        self._pool: ConnectionPool[Any] | None = None
        self.retry_after = _RETRY_AFTER
        self._embedded = 0
        self._from_store = 0
        self._mode = "exact"
        self._error: str | None = None
        self._failed_at = 0.0
        self._loaded: tuple[str, dict[str, int], Vectors] | None = None
        """The last exact snapshot's table, rows by fingerprint and matrix (shared with it)."""

    # -- connecting -------------------------------------------------------------------------

    def open(self) -> None:
        """Connect, migrate the schema and open the pool; a clear `StoreError` if the
        database cannot be reached in `connect_timeout` seconds or is not usable."""
        import psycopg
        from psycopg_pool import ConnectionPool

        try:
            with psycopg.connect(
                self.url, connect_timeout=max(1, round(self.connect_timeout)), autocommit=True
            ) as connection:
                found = migrate(connection, self.where)
        except psycopg.Error as exc:
            raise StoreError(f"store {self.where} is unreachable: {_reason(exc)}") from exc
        if found == 0:
            logger.info("store %s: schema created", self.where)
        pool: ConnectionPool[Any] = ConnectionPool(
            self.url,
            min_size=1,
            max_size=_POOL_SIZE,
            open=False,
            timeout=_CHECKOUT_TIMEOUT,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(self.connect_timeout))},
            configure=self._configure,
            # A connection the database dropped (a restart) is found at checkout and replaced,
            # not handed to a search to fail.
            check=ConnectionPool.check_connection,
        )
        try:
            pool.open(wait=True, timeout=self.connect_timeout)
        except Exception as exc:
            pool.close()
            raise StoreError(f"store {self.where} is unreachable: {_reason(exc)}") from exc
        self._pool = pool
        logger.info("store %s: connected (namespace %r)", self.where, self.namespace)

    def _configure(self, connection: psycopg.Connection[Any]) -> None:
        from pgvector.psycopg import register_vector

        register_vector(connection)
        connection.execute(f"SET statement_timeout = '{_STATEMENT_TIMEOUT}'")
        connection.execute(f"SET hnsw.ef_search = {int(self.ef_search)}")
        # Past ef_search the scan goes on instead of stopping short of the depth asked for.
        connection.execute("SET hnsw.iterative_scan = relaxed_order")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.close()
            self._pool = None

    @contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        import psycopg
        from psycopg_pool import PoolTimeout

        if self._pool is None:
            raise StoreError(f"store {self.where} is not open")
        if self._error is not None and time.monotonic() - self._failed_at < self.retry_after:
            raise StoreError(f"store {self.where} is unreachable: {self._error}")
        try:
            with self._pool.connection() as connection:
                yield connection
        except (psycopg.OperationalError, PoolTimeout) as exc:
            self._failed(exc)
            raise StoreError(f"store {self.where} is unreachable: {_reason(exc)}") from exc
        except psycopg.Error as exc:
            self._failed(exc)
            raise StoreError(f"store {self.where}: {_reason(exc)}") from exc
        else:
            if self._error is not None:
                logger.info("store %s: reachable again", self.where)
            self._error = None

    def _failed(self, exc: BaseException) -> None:
        if self._error is None:
            logger.error("store %s: %s", self.where, _reason(exc))
        self._error = _reason(exc)
        self._failed_at = time.monotonic()

    def fetch(self, query: sql.Composed, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Rows of one read (the HNSW index's searches)."""
        with self._connection() as connection:
            rows: list[tuple[Any, ...]] = connection.execute(query, params).fetchall()
        return rows

    # -- what the replicas share -------------------------------------------------------------

    def shared_secret(self, name: str) -> bytes:
        """A random 32-byte key made once per store and read by every replica: what one
        replica seals (a confirmation's state), any other can open."""
        with self._connection() as connection:
            connection.execute(
                "INSERT INTO mcp_router_meta VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                (f"secret:{name}", secrets.token_hex(32)),
            )
            row = connection.execute(
                "SELECT value FROM mcp_router_meta WHERE key = %s", (f"secret:{name}",)
            ).fetchone()
        assert row is not None
        return bytes.fromhex(str(row[0]))

    def status(self) -> StoreStatus:
        state: Literal["ok", "unreachable"] = "ok" if self._error is None else "unreachable"
        return StoreStatus(
            "postgresql", state, self._mode, self._embedded, self._from_store, self._error
        )

    # -- indexing ----------------------------------------------------------------------------

    def index(
        self,
        records: Sequence[ToolRecord],
        embedder: Embedder,
        on_progress: ProgressCallback | None = None,
    ) -> tuple[DenseSearch, EmbeddingStats]:
        fingerprints = [r.fingerprint for r in records]
        unique = list(dict.fromkeys(fingerprints))
        table = self._index_table(embedder)
        stored = self._stored(table)
        missing = [fp for fp in unique if fp not in stored]
        embedded: set[str] = set()
        if missing:
            text_of = {r.fingerprint: r.search_text for r in records}
            embedded = self._fill(table, embedder, missing, text_of, on_progress)
        stale = len(stored - set(unique))
        mode = self._choose(len(unique))
        dense: DenseSearch
        if mode == "hnsw":
            self._ensure_hnsw(table)
            from router.store.hnsw import HnswIndex

            dense = HnswIndex(self, table, fingerprints, stale)
            self._loaded = None
        else:
            dense = DenseIndex(self._load(table, fingerprints, embedder.dim))
        self._mode = mode
        done_here = sum(1 for fp in fingerprints if fp in embedded)
        self._embedded += len(embedded)
        self._from_store = len(records) - done_here
        stats = EmbeddingStats(
            total=len(records), from_cache=len(records) - done_here, embedded=len(embedded)
        )
        return dense, stats

    def _choose(self, tools: int) -> str:
        if self.search != "auto":
            return self.search
        return "hnsw" if tools > self.exact_max_tools else "exact"

    def _index_table(self, embedder: Embedder) -> str:
        """The table of this namespace's vectors for this model, made if absent."""
        model_id = embedder.model_id
        key = hashlib.sha256(f"{self.namespace}\0{model_id}".encode()).hexdigest()[:16]
        table = f"mcp_router_index_{key}"
        with self._connection() as connection, connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (_lock_key(table),))
            row = connection.execute(
                "SELECT table_name, dim FROM mcp_router_indexes "
                "WHERE namespace = %s AND model_id = %s",
                (self.namespace, model_id),
            ).fetchone()
            if row is not None and int(row[1]) != embedder.dim:
                raise StoreError(
                    f"store {self.where}: namespace {self.namespace!r} holds {row[1]}-dimension "
                    f"vectors of {model_id}, which now gives {embedder.dim}"
                )
            connection.execute(index_table_ddl(table, embedder.dim))
            if row is None:
                connection.execute(
                    "INSERT INTO mcp_router_indexes (namespace, model_id, dim, table_name) "
                    "VALUES (%s, %s, %s, %s)",
                    (self.namespace, model_id, embedder.dim, table),
                )
        return table

    def _stored(self, table: str, among: Sequence[str] | None = None) -> set[str]:
        from psycopg import sql

        with self._connection() as connection:
            if among is None:
                query = sql.SQL("SELECT fingerprint FROM {}").format(sql.Identifier(table))
                rows = connection.execute(query).fetchall()
            else:
                query = sql.SQL("SELECT fingerprint FROM {} WHERE fingerprint = ANY(%s)").format(
                    sql.Identifier(table)
                )
                rows = connection.execute(query, (list(among),)).fetchall()
        return {str(row[0]) for row in rows}

    def _fill(
        self,
        table: str,
        embedder: Embedder,
        missing: Sequence[str],
        text_of: Mapping[str, str],
        on_progress: ProgressCallback | None,
    ) -> set[str]:
        """Put `missing` into the index table, one replica at a time: whoever holds the lock
        copies what the shared cache (or the local `seed` cache) has and embeds the rest;
        whoever waited finds them there. Returns what this process embedded."""
        from psycopg import sql

        embedded: set[str] = set()
        with self._connection() as connection:
            connection.execute(f"SET lock_timeout = '{_FILL_LOCK_TIMEOUT}'")
            connection.execute("SELECT pg_advisory_lock(%s)", (_lock_key(table),))
            try:
                still = [fp for fp in missing if fp not in self._stored(table, missing)]
                if not still:
                    return embedded
                insert = sql.SQL(
                    "INSERT INTO {} (fingerprint, embedding) "
                    "SELECT fingerprint, embedding FROM mcp_router_embeddings "
                    "WHERE model_id = %s AND fingerprint = ANY(%s) ON CONFLICT DO NOTHING"
                ).format(sql.Identifier(table))
                connection.execute(insert, (embedder.model_id, still))
                still = [fp for fp in still if fp not in self._stored(table, still)]
                if still and self._seed is not None:
                    seeded = dict(self._seed.iter_vectors(embedder.model_id, still))
                    self._insert(connection, table, embedder.model_id, seeded)
                    still = [fp for fp in still if fp not in seeded]
                if on_progress and still:
                    on_progress(0, len(still))
                for start in range(0, len(still), _BATCH):
                    batch = still[start : start + _BATCH]
                    vectors = embedder.embed_documents([text_of[fp] for fp in batch])
                    made = dict(zip(batch, vectors, strict=True))
                    self._insert(connection, table, embedder.model_id, made)
                    embedded.update(batch)
                    if on_progress:
                        on_progress(start + len(batch), len(still))
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (_lock_key(table),))
                connection.execute("RESET lock_timeout")
        if embedded:
            logger.info("store %s: embedded %d tools for all replicas", self.where, len(embedded))
        return embedded

    def _insert(
        self,
        connection: psycopg.Connection[Any],
        table: str,
        model_id: str,
        vectors: Mapping[str, Vectors],
    ) -> None:
        """Into the shared cache and the index table, in one transaction (a batch at a time,
        so an interrupted fill keeps what it made)."""
        from psycopg import sql

        if not vectors:
            return
        rows = [(fp, np.asarray(v, dtype=np.float32)) for fp, v in vectors.items()]
        with connection.transaction(), connection.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO mcp_router_embeddings (model_id, fingerprint, embedding) "
                "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(model_id, fp, v) for fp, v in rows],
            )
            cursor.executemany(
                sql.SQL(
                    "INSERT INTO {} (fingerprint, embedding) VALUES (%s, %s) ON CONFLICT DO NOTHING"
                ).format(sql.Identifier(table)),
                rows,
            )

    def _ensure_hnsw(self, table: str) -> None:
        """Build the HNSW index once, after the first fill (a bulk build is far faster than
        growing it row by row); later rows join it as they are inserted."""
        from psycopg import sql

        with self._connection() as connection:
            present = connection.execute(
                "SELECT 1 FROM pg_indexes WHERE indexname = %s", (f"{table}_hnsw",)
            ).fetchone()
            if present:
                return
            connection.execute(f"SET lock_timeout = '{_FILL_LOCK_TIMEOUT}'")
            connection.execute("SET statement_timeout = 0")  # 250k tools: minutes
            connection.execute("SET maintenance_work_mem = '1GB'")
            connection.execute("SELECT pg_advisory_lock(%s)", (_lock_key(table),))
            try:
                logger.info("store %s: building the HNSW index of %s", self.where, table)
                connection.execute(hnsw_ddl(table))
                connection.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (_lock_key(table),))
                connection.execute("RESET maintenance_work_mem")
                connection.execute(f"SET statement_timeout = '{_STATEMENT_TIMEOUT}'")
                connection.execute("RESET lock_timeout")

    def _load(self, table: str, fingerprints: Sequence[str], dim: int) -> Vectors:
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
                self._connection() as connection,
                connection.transaction(),
                connection.cursor(name="mcp_router_load", binary=True) as cursor,
            ):
                cursor.itersize = _LOAD_CHUNK
                for fingerprint, vector in cursor.execute(query, params):
                    if fingerprint in wanted:
                        matrix[rows[fingerprint]] = vector.to_numpy()
                        wanted.discard(fingerprint)
        if wanted:
            raise StoreError(
                f"store {self.where}: {len(wanted)} tools' vectors vanished from {table} "
                "while it was read"
            )
        self._loaded = (table, {fp: placed[0] for fp, placed in rows.items()}, matrix)
        return matrix


def _lock_key(name: str) -> int:
    """A signed 64-bit advisory-lock key for a name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
