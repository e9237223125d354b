"""What the retriever needs from wherever its vectors live, and the in-process answer.

The retriever is handed a `DenseIndexer` (a store from `router.store`, or nothing for the
exact scan over the embedding cache) and never imports one: stores sit beside retrieval,
not under it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:  # numpy loads with the first index build, in its worker thread
    from router.core.catalog import ToolRecord
    from router.embedding.base import Embedder
    from router.embedding.cache import EmbeddingCache
    from router.embedding.indexing import EmbeddingStats, ProgressCallback
    from router.vectors.dense import DenseIndex, DenseSearch


class DenseIndexer(Protocol):
    """Vectors for a catalog's tools, embedding only what is missing, and their search
    (blocking: the index builder calls it in a worker thread)."""

    def index(
        self,
        records: Sequence[ToolRecord],
        embedder: Embedder,
        on_progress: ProgressCallback | None = None,
    ) -> tuple[DenseSearch, EmbeddingStats]: ...


def exact_index(
    records: Sequence[ToolRecord],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    on_progress: ProgressCallback | None = None,
) -> tuple[DenseIndex, EmbeddingStats]:
    """Every tool's vector, read from `cache` or embedded (and written back), scanned exactly."""
    from router.embedding.indexing import embed_records
    from router.vectors.dense import DenseIndex

    vectors, stats = embed_records(records, embedder, cache, on_progress)
    return DenseIndex(vectors), stats
