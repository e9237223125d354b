"""The shared store: tool vectors and their HNSW index in PostgreSQL with pgvector.

Replicas configured with one `router.store` share one index per (namespace, model). The
first to see a tool embeds it, under an advisory lock, so replicas that start together wait
for it instead of embedding the same tools again; any later replica reads the vectors and
embeds nothing. Each then searches the dense signal either in memory (`exact`: the vectors
read into a matrix, as the local store does) or in the database (`hnsw`: nothing held), by
`router.store.search`.

`PostgresStore` is the store itself, composed of its parts: the pool and its reconnection
(`router.store.postgres.connections`), the COPY fill (`router.store.postgres.fill`), served-day
marking
(`router.store.postgres.seen`) and the exact mode's matrix (`router.store.postgres.exact`). It owns
the index
tables and the HNSW index's build.

psycopg is synchronous here on purpose: the index builder and every search already run in
worker threads (`LiveIndex`, `Searcher.search`), so a blocking driver never blocks the
event loop, and the retriever stays one synchronous code path for every store.
"""

from __future__ import annotations

import hashlib
import logging
import secrets
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from router.core.catalog import ToolRecord
from router.core.errors import StoreError
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import EmbeddingStats, ProgressCallback
from router.store.base import StoreStatus
from router.store.nonces import PgNonces
from router.store.pins import PostgresPins
from router.store.postgres.connections import STATEMENT_TIMEOUT, Connections
from router.store.postgres.exact import ExactMatrix
from router.store.postgres.fill import FILL_LOCK_TIMEOUT, fill_missing, lock_key, stored_on
from router.store.postgres.schema import hnsw_ddl, index_table_ddl, seen_table_ddl
from router.store.postgres.seen import ServedDays
from router.store.postgres.tuning import DEFAULT_EF_SEARCH, DEFAULT_EXACT_MAX_TOOLS
from router.store.quota_buckets import SharedBuckets
from router.store.shared_records import PostgresRecords
from router.store.usage import PostgresUsage
from router.vectors.dense import DenseIndex, DenseSearch

if TYPE_CHECKING:
    from psycopg import sql

logger = logging.getLogger(__name__)

SearchChoice = Literal["auto", "exact", "hnsw"]


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
        self._connections = Connections(url, ef_search=ef_search, connect_timeout=connect_timeout)
        self.url = url
        self.where = self._connections.where
        self.namespace = namespace
        self.search = search
        self.exact_max_tools = exact_max_tools
        self._seed = seed
        self._served = ServedDays(self._connections)
        self._exact = ExactMatrix(self._connections)
        self._embedded = 0
        self._from_store = 0
        self._mode = "exact"
        self._table: str | None = None
        self._nonces = PgNonces(self._connections)

    # -- connecting (router.store.postgres.connections)

    @property
    def ef_search(self) -> int:
        return self._connections.ef_search

    @ef_search.setter
    def ef_search(self, value: int) -> None:
        self._connections.ef_search = value

    @property
    def connect_timeout(self) -> float:
        return self._connections.connect_timeout

    @connect_timeout.setter
    def connect_timeout(self, value: float) -> None:
        self._connections.connect_timeout = value

    @property
    def retry_after(self) -> float:
        """Seconds after a failure during which uses fail at once (`Connections`)."""
        return self._connections.retry_after

    @retry_after.setter
    def retry_after(self, value: float) -> None:
        self._connections.retry_after = value

    def open(self) -> None:
        """Connect, migrate the schema and open the pool; a clear `StoreError` if the
        database cannot be reached in `connect_timeout` seconds or is not usable."""
        self._connections.open()
        logger.info("store %s: connected (namespace %r)", self.where, self.namespace)

    def close(self) -> None:
        self._connections.close()

    def fetch(self, query: sql.Composed, params: Mapping[str, Any]) -> list[tuple[Any, ...]]:
        """Rows of one read (the HNSW index's searches)."""
        with self._connections.connection() as connection:
            rows: list[tuple[Any, ...]] = connection.execute(query, params).fetchall()
        return rows

    # -- what the replicas share -------------------------------------------------------------

    def shared_secret(self, name: str) -> bytes:
        """A random 32-byte key made once per store and read by every replica: what one
        replica seals (a confirmation's state), any other can open."""
        with self._connections.connection() as connection:
            connection.execute(
                "INSERT INTO mcp_router_meta VALUES (%s, %s) ON CONFLICT (key) DO NOTHING",
                (f"secret:{name}", secrets.token_hex(32)),
            )
            row = connection.execute(
                "SELECT value FROM mcp_router_meta WHERE key = %s", (f"secret:{name}",)
            ).fetchone()
        assert row is not None
        return bytes.fromhex(str(row[0]))

    def nonce_ledger(self) -> PgNonces:
        """The nonces every replica of this store spends (`mcp_router_nonces`)."""
        return self._nonces

    def pin_backend(self) -> PostgresPins:
        """The tool pins of this namespace, one table for every replica (`router.store.pins`)."""
        return PostgresPins(self._connections, self.namespace)

    def records(self) -> PostgresRecords:
        """Upstream credentials and listings of this namespace, read alike by every replica
        (`router.store.shared_records`)."""
        return PostgresRecords(self._connections, self.namespace)

    def quota_buckets(self) -> SharedBuckets:
        """The quota buckets of this namespace, every replica's (`router.store.quota_buckets`)."""
        return SharedBuckets(self._connections, self.namespace)

    def usage(self) -> PostgresUsage:
        """The usage pairs of this namespace, every principal's apart (`router.store.usage`)."""
        return PostgresUsage(self._connections, self.namespace)

    def status(self) -> StoreStatus:
        state: Literal["ok", "unreachable"] = (
            "ok" if self._connections.error is None else "unreachable"
        )
        return StoreStatus(
            "postgresql",
            state,
            self._mode,
            self._embedded,
            self._from_store,
            self._connections.error,
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
            from router.store.postgres.hnsw import HnswIndex

            dense = HnswIndex(self, table, fingerprints, stale)
            self._exact.forget()
        else:
            dense = DenseIndex(self._exact.load(table, fingerprints, embedder.dim))
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
            embedded = fill_missing(
                self._connections,
                table,
                embedder,
                missing,
                text_of,
                on_progress,
                namespace=self.namespace,
                seed=self._seed,
            )
        self._table = table
        self._served.remember(table, unique)
        return table, embedded, len(stored - set(unique))

    def touch(self, records: Sequence[ToolRecord]) -> None:
        """Mark the catalog's rows as served today (a long-lived replica calls it daily,
        `LiveIndex`), so another replica's pruning never takes a tool still in use."""
        if self._table is not None:
            self._served.remember(self._table, [r.fingerprint for r in records], again=True)

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
        with self._connections.connection() as connection, connection.transaction():
            connection.execute("SELECT pg_advisory_xact_lock(%s)", (lock_key(table),))
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
        with self._connections.connection() as connection:
            return stored_on(connection, table)

    def _ensure_hnsw(self, table: str) -> None:
        """Build the HNSW index once, after the first fill (a bulk build is far faster than
        growing it row by row); later rows join it as they are inserted."""
        from psycopg import sql

        with self._connections.connection() as connection:
            present = connection.execute(
                "SELECT 1 FROM pg_indexes WHERE indexname = %s", (f"{table}_hnsw",)
            ).fetchone()
            if present:
                return
            connection.execute(f"SET lock_timeout = '{FILL_LOCK_TIMEOUT}'")
            connection.execute("SET statement_timeout = 0")  # grows with the catalog: no limit
            connection.execute("SET maintenance_work_mem = '1GB'")
            connection.execute("SELECT pg_advisory_lock(%s)", (lock_key(table),))
            try:
                logger.info("store %s: building the HNSW index of %s", self.where, table)
                connection.execute(hnsw_ddl(table))
                connection.execute(sql.SQL("ANALYZE {}").format(sql.Identifier(table)))
            finally:
                connection.execute("SELECT pg_advisory_unlock(%s)", (lock_key(table),))
                connection.execute("RESET maintenance_work_mem")
                connection.execute(f"SET statement_timeout = '{STATEMENT_TIMEOUT}'")
                connection.execute("RESET lock_timeout")
