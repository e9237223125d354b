"""The default store: the SQLite embedding cache and an exact in-memory scan."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from router.approvals.sealing import MemoryNonces, NonceLedger
from router.store.base import StoreStatus
from router.store.nonces import SqliteNonces

if TYPE_CHECKING:  # numpy loads with the first index build, in its worker thread
    from router.core.catalog import ToolRecord
    from router.embedding.base import Embedder
    from router.embedding.cache import EmbeddingCache
    from router.embedding.indexing import EmbeddingStats, ProgressCallback
    from router.pinning.backend import PinBackend
    from router.store.quota_buckets import SharedBuckets
    from router.store.records import Records
    from router.store.usage import PostgresUsage
    from router.vectors.dense import DenseSearch


class LocalStore:
    """One process's vectors: read from the cache file, the rest embedded and written back."""

    def __init__(self, cache: EmbeddingCache | None) -> None:
        self._cache = cache
        self._embedded = 0
        self._from_store = 0
        # The routers sharing the cache folder spend nonces in one file; without one, memory.
        self._nonces: NonceLedger = (
            SqliteNonces(cache.path.parent) if cache is not None else MemoryNonces()
        )

    def index(
        self,
        records: Sequence[ToolRecord],
        embedder: Embedder,
        on_progress: ProgressCallback | None = None,
    ) -> tuple[DenseSearch, EmbeddingStats]:
        from router.vectors.indexing import exact_index

        dense, stats = exact_index(records, embedder, self._cache, on_progress)
        self._embedded += stats.embedded
        self._from_store = stats.from_cache
        return dense, stats

    def status(self) -> StoreStatus:
        return StoreStatus("local", "ok", "exact", self._embedded, self._from_store)

    def touch(self, records: Sequence[ToolRecord]) -> None:
        pass  # the cache file keeps every vector it was given, as it always has

    def shared_secret(self, name: str) -> bytes | None:
        return None  # one process: nothing to share

    def nonce_ledger(self) -> NonceLedger:
        return self._nonces

    def pin_backend(self) -> PinBackend | None:
        return None  # the pins stay in the cache folder's file

    def records(self) -> Records | None:
        return None  # credentials and listings stay in the cache folder's files

    def quota_buckets(self) -> SharedBuckets | None:
        return None

    def usage(self) -> PostgresUsage | None:
        return None  # usage pairs stay in the cache folder's files

    def close(self) -> None:
        pass
