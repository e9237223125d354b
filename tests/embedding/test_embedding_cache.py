from pathlib import Path

import numpy as np

from router.core.catalog import Catalog, ToolSpec
from router.embedding.cache import EmbeddingCache
from router.embedding.hashing import HashingEmbedder
from router.embedding.indexing import embed_records


def _catalog(description: str = "Read a file from disk") -> Catalog:
    return Catalog.from_specs(
        [
            ToolSpec("fs", "read_file", description),
            ToolSpec("fs", "write_file", "Write text to a file"),
            ToolSpec("time", "now", "Current time in a timezone"),
        ]
    )


def test_second_run_embeds_nothing(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    first_embedder = HashingEmbedder()
    vectors, stats = embed_records(_catalog().records, first_embedder, cache)
    assert (stats.embedded, stats.from_cache) == (3, 0)

    second_embedder = HashingEmbedder()
    again, stats = embed_records(_catalog().records, second_embedder, cache)
    assert (stats.embedded, stats.from_cache) == (0, 3)
    assert second_embedder.documents_embedded == 0
    np.testing.assert_array_equal(vectors, again)


def test_changed_description_re_embeds_only_that_tool(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    embed_records(_catalog().records, HashingEmbedder(), cache)
    embedder = HashingEmbedder()
    _, stats = embed_records(_catalog("Read a text file").records, embedder, cache)
    assert (stats.embedded, stats.from_cache) == (1, 2)
    assert embedder.documents_embedded == 1


def test_cache_is_keyed_by_model(tmp_path: Path) -> None:
    cache = EmbeddingCache(tmp_path)
    embed_records(_catalog().records, HashingEmbedder(dim=64), cache)
    _, stats = embed_records(_catalog().records, HashingEmbedder(dim=32), cache)
    assert stats.embedded == 3


def test_progress_is_reported_up_to_the_total(tmp_path: Path) -> None:
    seen: list[tuple[int, int]] = []
    embed_records(
        _catalog().records,
        HashingEmbedder(),
        EmbeddingCache(tmp_path),
        lambda done, total: seen.append((done, total)),
    )
    assert seen[0] == (0, 3)
    assert seen[-1] == (3, 3)
