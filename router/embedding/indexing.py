"""Embedding a whole catalog, reusing cached vectors and reporting progress."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from router.core.catalog import ToolRecord, fingerprint_text
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
    """Vectors for `records` in order (shape (n, dim)); only cache misses are embedded.

    Each vector goes straight into its rows of the result as it is read or made: at 20k tools
    a dict of per-tool arrays stacked at the end cost more RSS, left behind as heap fragments
    (tried; the RSS it reaches now is `memory.runs` of `benchmarks/results/perf.json`).
    """
    text_of = {r.fingerprint: r.search_text for r in records}
    return _embed([r.fingerprint for r in records], text_of, embedder, cache, on_progress)


def embed_texts(
    texts: Sequence[str], embedder: Embedder, cache: EmbeddingCache | None = None
) -> tuple[Vectors, EmbeddingStats]:
    """Vectors for `texts` in order, through the same cache as a catalog's (keyed by each
    text's fingerprint), so texts a catalog already embedded are not embedded again."""
    fingerprints = [fingerprint_text(text) for text in texts]
    return _embed(fingerprints, dict(zip(fingerprints, texts, strict=True)), embedder, cache)


def _embed(
    fingerprints: Sequence[str],
    text_of: Mapping[str, str],
    embedder: Embedder,
    cache: EmbeddingCache | None,
    on_progress: ProgressCallback | None = None,
) -> tuple[Vectors, EmbeddingStats]:
    """Vectors for each fingerprint in order (the text of each in `text_of`)."""
    rows: dict[str, list[int]] = {}
    for position, fingerprint in enumerate(fingerprints):
        rows.setdefault(fingerprint, []).append(position)
    matrix: Vectors | None = None

    def place(fingerprint: str, vector: Vectors) -> None:
        nonlocal matrix
        if matrix is None:
            matrix = np.empty((len(fingerprints), vector.shape[0]), dtype=np.float32)
        matrix[rows[fingerprint]] = vector

    found: set[str] = set()
    if cache is not None:
        for fingerprint, vector in cache.iter_vectors(embedder.model_id, rows):
            place(fingerprint, vector)
            found.add(fingerprint)
    missing = [fp for fp in rows if fp not in found]
    if on_progress and missing:
        on_progress(0, len(missing))
    for start in range(0, len(missing), _BATCH):
        batch = missing[start : start + _BATCH]
        vectors = embedder.embed_documents([text_of[fp] for fp in batch])
        for fingerprint, vector in zip(batch, vectors, strict=True):
            place(fingerprint, vector)
        if cache is not None:  # stored batch by batch: progress survives an interrupt
            cache.put_many(embedder.model_id, dict(zip(batch, vectors, strict=True)))
        if on_progress:
            on_progress(start + len(batch), len(missing))
    if matrix is None:
        matrix = np.zeros((0, embedder.dim), dtype=np.float32)
    embedded = len(missing)
    stats = EmbeddingStats(
        total=len(fingerprints),
        from_cache=sum(len(rows[fp]) for fp in found),
        embedded=embedded,
    )
    return matrix, stats
