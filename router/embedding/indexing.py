"""Embedding a whole catalog, reusing cached vectors and reporting progress."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from router.catalog import ToolRecord
from router.embedding.base import Embedder, Vectors
from router.embedding.cache import EmbeddingCache

ProgressCallback = Callable[[int, int], None]
"""Called with (tools embedded so far, tools to embed) after each batch."""

_BATCH = 64


@dataclass(frozen=True, slots=True)
class EmbeddingStats:
    total: int
    from_cache: int
    embedded: int


def embed_records(
    records: Sequence[ToolRecord],
    embedder: Embedder,
    cache: EmbeddingCache | None = None,
    on_progress: ProgressCallback | None = None,
) -> tuple[Vectors, EmbeddingStats]:
    """Vectors for `records` in order (shape (n, dim)); only cache misses are embedded."""
    cached = cache.get_many(embedder.model_id, (r.fingerprint for r in records)) if cache else {}
    missing = list(dict.fromkeys(r.fingerprint for r in records if r.fingerprint not in cached))
    text_of = {r.fingerprint: r.search_text for r in records}
    fresh: dict[str, Vectors] = {}
    if on_progress and missing:
        on_progress(0, len(missing))
    for start in range(0, len(missing), _BATCH):
        batch = missing[start : start + _BATCH]
        vectors = embedder.embed_documents([text_of[fp] for fp in batch])
        batch_vectors = dict(zip(batch, vectors, strict=True))
        fresh.update(batch_vectors)
        if cache is not None:
            cache.put_many(embedder.model_id, batch_vectors)  # progress survives an interrupt
        if on_progress:
            on_progress(len(fresh), len(missing))
    known = {**cached, **fresh}
    matrix = (
        np.stack([known[r.fingerprint] for r in records]).astype(np.float32, copy=False)
        if records
        else np.zeros((0, embedder.dim), dtype=np.float32)
    )
    stats = EmbeddingStats(
        total=len(records),
        from_cache=len(records) - _count_fresh(records, fresh),
        embedded=len(fresh),
    )
    return matrix, stats


def _count_fresh(records: Sequence[ToolRecord], fresh: dict[str, Vectors]) -> int:
    return sum(1 for r in records if r.fingerprint in fresh)
