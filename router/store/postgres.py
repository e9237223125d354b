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

import datetime
import hashlib
import logging
import secrets
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Literal
from urllib.parse import urlsplit

import numpy as np

from router.catalog import ToolRecord
from router.config import DEFAULT_EF_SEARCH, DEFAULT_EXACT_MAX_TOOLS
from router.embedding.base import Embedder, Vectors
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import EmbeddingStats, ProgressCallback
from router.errors import StoreError
from router.store.base import StoreStatus
from router.store.schema import hnsw_ddl, index_table_ddl, migrate, seen_table, seen_table_ddl
from router.vectors.dense import DenseIndex, DenseSearch

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
PRUNE_AFTER_DAYS = 7
"""Rows no replica served for this many days are deleted: tools gone from every upstream.
A live replica marks its rows every day (`touch`), however long it runs without a change."""
_RECONNECT_TIMEOUT = 2.0
"""Seconds one retry after a failure waits for the database."""
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
        exact_max_tools: int = DEFAULT_EXACT_MAX_TOOLS,
        ef_search: int = DEFAULT_EF_SEARCH,
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
        self._reopening = threading.Lock()
        self._embedded = 0
        self._from_store = 0
        self._mode = "exact"
        self._error: str | None = None
        self._failed_at = 0.0
        self._table: str | None = None
        self._remembered: tuple[tuple[str, datetime.date] | None, set[str]] = (None, set())
        """The fingerprints marked as served today in which table (`_remember`)."""
        self._loaded: tuple[str, dict[str, int], Vectors] | None = None
        """The last exact snapshot's table, rows by fingerprint and matrix (shared with it)."""

    # -- connecting -------------------------------------------------------------------------

    def open(self) -> None:
        """Connect, migrate the schema and open the pool; a clear `StoreError` if the
        database cannot be reached in `connect_timeout` seconds or is not usable."""
        import psycopg

        try:
            with psycopg.connect(
                self.url, connect_timeout=max(1, round(self.connect_timeout)), autocommit=True
            ) as connection:
                found = migrate(connection, self.where)
        except psycopg.Error as exc:
            raise StoreError(f"store {self.where} is unreachable: {_reason(exc)}") from exc
        if found == 0:
            logger.info("store %s: schema created", self.where)
        self._pool = self._new_pool(self.connect_timeout)
        logger.info("store %s: connected (namespace %r)", self.where, self.namespace)

    def _new_pool(self, timeout: float) -> ConnectionPool[Any]:
        """A pool holding one live connection (or a `StoreError` after `timeout` s)."""
        from psycopg_pool import ConnectionPool

        pool: ConnectionPool[Any] = ConnectionPool(
            self.url,
            min_size=1,
            max_size=_POOL_SIZE,
            open=False,
            timeout=_CHECKOUT_TIMEOUT,
            kwargs={"autocommit": True, "connect_timeout": max(1, round(timeout))},
            configure=self._configure,
            # A connection the database dropped (a restart) is found at checkout and replaced,
            # not handed to a search to fail.
            check=ConnectionPool.check_connection,
        )
        try:
            pool.open(wait=True, timeout=timeout)
        except Exception as exc:
            pool.close(timeout=0)
            raise StoreError(f"store {self.where} is unreachable: {_reason(exc)}") from exc
        return pool

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

        pool = self._usable_pool()
        try:
            with pool.connection() as connection:
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

    def _usable_pool(self) -> ConnectionPool[Any]:
        """The pool; after a failure, a fresh one once `retry_after` has passed. The pool's
        own reconnection backs off for minutes, so a database that is back would wait for
        it; a new pool connects at once, or fails fast and the store stays down."""
        if self._pool is None:
            raise StoreError(f"store {self.where} is not open")
        if self._error is None:
            return self._pool
        down = StoreError(f"store {self.where} is unreachable: {self._error}")
        if time.monotonic() - self._failed_at < self.retry_after:
            raise down
        if not self._reopening.acquire(blocking=False):
            raise down  # another thread is trying: this search does not wait for it
        try:
            if self._error is None:
                return self._pool
            try:
                fresh = self._new_pool(_RECONNECT_TIMEOUT)
            except StoreError as exc:
                self._failed(exc)
                raise
            stale, self._pool = self._pool, fresh
            stale.close(timeout=0)
            return fresh
        finally:
            self._reopening.release()

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
        table, embedded, stale = self._sync(records, embedder, on_progress)
        mode = self._choose(len(set(fingerprints)))
        dense: DenseSearch
        if mode == "hnsw":
            self._ensure_hnsw(table)
            from router.store.hnsw import HnswIndex

            dense = HnswIndex(self, table, fingerprints, stale)
            self._loaded = None
        else:
            dense = DenseIndex(self._load(table, fingerprints, embedder.dim))
        self._mode = mode
        return dense, self._count(records, embedded)

    def fill(
        self,
        records: Sequence[ToolRecord],
        embedder: Embedder,
        on_progress: ProgressCallback | None = None,
    ) -> EmbeddingStats:
        """Put the catalog's vectors in the store (embedding what neither the store nor the
        seed cache has), without reading anything back or building the HNSW index (the
        first replica in `hnsw` mode builds it): `benchmarks.store_scale` times a first
        fill this way."""
        _, embedded, _ = self._sync(records, embedder, on_progress)
        return self._count(records, embedded)

    def _sync(
        self,
        records: Sequence[ToolRecord],
        embedder: Embedder,
        on_progress: ProgressCallback | None,
    ) -> tuple[str, set[str], int]:
        """The index table, what this process embedded into it, and how many of its rows
        are not this catalog's (stale)."""
        unique = list(dict.fromkeys(r.fingerprint for r in records))
        table = self._index_table(embedder)
        stored = self._stored(table)
        missing = [fp for fp in unique if fp not in stored]
        embedded: set[str] = set()
        if missing:
            text_of = {r.fingerprint: r.search_text for r in records}
            embedded = self._fill(table, embedder, missing, text_of, on_progress)
        self._table = table
        self._remember(table, unique)
        return table, embedded, len(stored - set(unique))

    def touch(self, records: Sequence[ToolRecord]) -> None:
        """Mark the catalog's rows as served today (a long-lived replica calls it daily,
        `LiveIndex`), so another replica's pruning never takes a tool still in use."""
        if self._table is not None:
            self._remember(self._table, [r.fingerprint for r in records], again=True)

    def _remember(self, table: str, fingerprints: Sequence[str], again: bool = False) -> None:
        """Rows of `fingerprints` served today; rows no replica served for
        `PRUNE_AFTER_DAYS` deleted (tools gone from every upstream: stale HNSW candidates).
        A rebuild skips what this process marked today already; `again` (the periodic touch)
        writes them all."""
        from psycopg import sql

        today = datetime.date.today()
        if again or self._remembered[0] != (table, today):
            self._remembered = ((table, today), set())
        done = self._remembered[1]
        fresh = [fp for fp in fingerprints if fp not in done]
        if not fresh:
            return  # once a day per tool is enough: a rebuild at 250k tools costs no 1.3 s
        seen = sql.Identifier(seen_table(table))
        with self._connection() as connection, connection.transaction():
            connection.execute(
                sql.SQL(
                    "INSERT INTO {seen} AS s (fingerprint) SELECT unnest(%s::text[]) "
                    "ON CONFLICT (fingerprint) DO UPDATE SET last_seen = current_date "
                    "WHERE s.last_seen < current_date"
                ).format(seen=seen),
                (fresh,),
            )
            pruned = connection.execute(
                sql.SQL(
                    "WITH gone AS (DELETE FROM {seen} WHERE last_seen < current_date - %s "
                    "RETURNING fingerprint) "
                    "DELETE FROM {table} WHERE fingerprint IN (SELECT fingerprint FROM gone)"
                ).format(seen=seen, table=sql.Identifier(table)),
                (PRUNE_AFTER_DAYS,),
            ).rowcount
        done.update(fresh)
        if pruned:
            logger.info(
                "store %s: pruned %d tools no replica served for %d days",
                self.where,
                pruned,
                PRUNE_AFTER_DAYS,
            )

    def _count(self, records: Sequence[ToolRecord], embedded: set[str]) -> EmbeddingStats:
        done_here = sum(1 for r in records if r.fingerprint in embedded)
        self._embedded += len(embedded)
        self._from_store = len(records) - done_here
        return EmbeddingStats(
            total=len(records), from_cache=len(records) - done_here, embedded=len(embedded)
        )

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
            connection.execute(seen_table_ddl(table))
            if row is None:
                connection.execute(
                    "INSERT INTO mcp_router_indexes (namespace, model_id, dim, table_name) "
                    "VALUES (%s, %s, %s, %s)",
                    (self.namespace, model_id, embedder.dim, table),
                )
        return table

    def _stored(self, table: str) -> set[str]:
        with self._connection() as connection:
            return _stored_on(connection, table)

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
        import psycopg
        from psycopg import sql

        embedded: set[str] = set()
        with self._connection() as connection:
            connection.execute(f"SET lock_timeout = '{_FILL_LOCK_TIMEOUT}'")
            try:
                connection.execute("SELECT pg_advisory_lock(%s)", (_lock_key(table),))
            except psycopg.errors.LockNotAvailable:
                raise StoreError(
                    f"store {self.where}: another replica has been filling namespace "
                    f"{self.namespace!r} for {_FILL_LOCK_TIMEOUT}; this one ranks with BM25 "
                    "until it is done"
                ) from None
            try:
                present = _stored_on(connection, table, missing)
                still = [fp for fp in missing if fp not in present]
                if not still:
                    return embedded
                copied = sql.SQL(
                    "INSERT INTO {} (fingerprint, embedding) "
                    "SELECT fingerprint, embedding FROM mcp_router_embeddings "
                    "WHERE model_id = %s AND fingerprint = ANY(%s) ON CONFLICT DO NOTHING"
                ).format(sql.Identifier(table))
                connection.execute(copied, (embedder.model_id, still))
                present = _stored_on(connection, table, still)
                still = [fp for fp in still if fp not in present]
                if still and self._seed is not None:
                    seeded: dict[str, Vectors] = {}
                    for fingerprint, vector in self._seed.iter_vectors(embedder.model_id, still):
                        seeded[fingerprint] = vector
                        if len(seeded) == _LOAD_CHUNK:
                            self._insert(connection, table, embedder.model_id, seeded)
                            present.update(seeded)
                            seeded = {}
                    self._insert(connection, table, embedder.model_id, seeded)
                    present.update(seeded)
                    still = [fp for fp in still if fp not in present]
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


def _stored_on(
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


def _lock_key(name: str) -> int:
    """A signed 64-bit advisory-lock key for a name."""
    return int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big", signed=True)


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
