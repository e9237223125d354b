"""The default store: the SQLite embedding cache and an exact in-memory scan."""

from __future__ import annotations

from collections.abc import Sequence

from router.catalog import ToolRecord
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import EmbeddingStats, ProgressCallback, embed_records
from router.retrieval.dense import DenseIndex, DenseSearch
from router.store.base import StoreStatus


class LocalStore:
    """One process's vectors: read from the cache file, the rest embedded and written back."""

    def __init__(self, cache: EmbeddingCache | None) -> None:
        self._cache = cache
        self._embedded = 0
        self._from_store = 0

    def index(
        self,
        records: Sequence[ToolRecord],
        embedder: Embedder,
        on_progress: ProgressCallback | None = None,
    ) -> tuple[DenseSearch, EmbeddingStats]:
        vectors, stats = embed_records(records, embedder, self._cache, on_progress)
        self._embedded += stats.embedded
        self._from_store = stats.from_cache
        return DenseIndex(vectors), stats

    def status(self) -> StoreStatus:
        return StoreStatus("local", "ok", "exact", self._embedded, self._from_store)

    def close(self) -> None:
        pass
