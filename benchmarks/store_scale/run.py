"""One size end to end: the catalog, the store filled and its HNSW index built, the search
comparison in this process, then a new replica per mode in a fresh process."""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import psycopg

from benchmarks.store_scale import corpus, replica, search
from benchmarks.store_scale.replica import ReplicaSpec
from router.embedding.base import Embedder, Vectors
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import embed_records
from router.evaluation.metrics import resolve_gold
from router.retrieval.retriever import Retriever
from router.store.postgres.store import PostgresStore
from router.vectors.dense import DenseSearch

logger = logging.getLogger(__name__)

_QUERY_BATCH = 64
REPLICA_TIMEOUT_S = 900.0


@dataclass(frozen=True, slots=True)
class Settings:
    data: Path
    sets: tuple[str, ...]
    seed: int
    queries: int
    limit: int | None
    model: str | None
    cache_dir: Path
    ef_search: tuple[int, ...]
    replica_modes: tuple[str, ...]


def namespace(size: int) -> str:
    return f"store-scale-{size}"


def _timed(action: Callable[[], Any]) -> tuple[Any, float]:
    start = time.perf_counter()
    value = action()
    return value, round(time.perf_counter() - start, 3)


def measure_size(
    settings: Settings,
    source: corpus.Source,
    embedder: Embedder,
    url: str,
    size: int,
) -> dict[str, Any]:
    catalog = corpus.catalog(source, size)
    real = min(size, source.real)
    cache = EmbeddingCache(settings.cache_dir)
    logger.info("%d tools: embedding what the cache lacks", size)
    vectors, stats = embed_records(catalog.records, embedder, cache)
    stores: list[PostgresStore] = []

    def opened(mode: str, ef_search: int = 100) -> PostgresStore:
        store = PostgresStore(
            url,
            namespace=namespace(size),
            search="exact" if mode == "exact" else "hnsw",
            ef_search=ef_search,
            seed=cache,
        )
        store.open()
        stores.append(store)
        return store

    try:
        logger.info("%d tools: filling the store", size)
        # The store's own first fill, as a first replica does it: every vector from its local
        # cache (the seed), copied in binary batches; nothing embedded.
        del vectors
        gc.collect()
        filler = opened("hnsw")
        _, fill_s = _timed(lambda: filler.fill(catalog.records, embedder))
        _vacuum(url, size)
        exact_store = opened("exact")
        (exact_dense, _), load_s = _timed(lambda: exact_store.index(catalog.records, embedder))
        logger.info("%d tools: building the HNSW index", size)
        dense: dict[str, DenseSearch] = {"exact": exact_dense}
        build_s = 0.0
        for position, ef in enumerate(settings.ef_search):
            store = opened("hnsw", ef)
            start = time.perf_counter()
            index, _ = store.index(catalog.records, embedder)
            took = round(time.perf_counter() - start, 3)
            if position == 0:
                build_s = took
            dense[f"hnsw-ef{ef}"] = index
        sizes = _relation_sizes(url, size)
        logger.info("%d tools: searching", size)
        modes = [
            search.Mode(name, index, Retriever(catalog, embedder, index))
            for name, index in dense.items()
        ]
        queries = [q for name in settings.sets for q in source.queries[name]]
        resolved, unknown = resolve_gold(catalog, queries)
        query_vectors = _embed_queries(embedder, [q.text for q in queries])
        figures = search.run(modes, resolved, query_vectors)
    finally:
        for store in stores:
            store.close()
    del modes, dense
    gc.collect()
    replicas: dict[str, Any] = {}
    for mode in settings.replica_modes:
        logger.info("%d tools: a new %s replica", size, mode)
        spec = ReplicaSpec(
            data=str(settings.data),
            sets=settings.sets,
            seed=settings.seed,
            queries=settings.queries,
            limit=settings.limit,
            size=size,
            mode=mode,
            url=url,
            namespace=namespace(size),
            model=settings.model,
            cache_dir=str(settings.cache_dir),
            ef_search=settings.ef_search[0],
        )
        replicas[mode] = replica.measure(spec, REPLICA_TIMEOUT_S)
    return {
        "tools": len(catalog),
        "real_tools": real,
        "copies": len(catalog) - real,
        "queries": len(resolved),
        "unknown_gold_tools": unknown,
        "embedded_now": stats.embedded,
        "store": {
            "fill_s": fill_s,
            "exact_load_s": load_s,
            "hnsw_build_s": build_s,
            **sizes,
        },
        "search": figures,
        "replicas": replicas,
    }


def _table(connection: psycopg.Connection[Any], size: int) -> str:
    row = connection.execute(
        "SELECT table_name FROM mcp_router_indexes WHERE namespace = %s", (namespace(size),)
    ).fetchone()
    assert row is not None
    return str(row[0])


def _vacuum(url: str, size: int) -> None:
    """What autovacuum would do soon after a bulk fill: the searches should not race it."""
    from psycopg import sql

    with psycopg.connect(url, autocommit=True) as connection:
        table = _table(connection, size)
        connection.execute(sql.SQL("VACUUM (ANALYZE) {}").format(sql.Identifier(table)))


def _embed_queries(embedder: Embedder, texts: Sequence[str]) -> list[Vectors]:
    rows: list[Vectors] = []
    for start in range(0, len(texts), _QUERY_BATCH):
        rows.extend(embedder.embed_queries(list(texts[start : start + _QUERY_BATCH])))
    return [np.asarray(row, dtype=np.float32) for row in rows]


def _relation_sizes(url: str, size: int) -> dict[str, float]:
    """MiB on disk of the size's vector table and of its HNSW index (shared by replicas)."""
    with psycopg.connect(url, autocommit=True) as connection:
        table = _table(connection, size)
        sizes = connection.execute(
            "SELECT pg_total_relation_size(%s::regclass), pg_relation_size(%s::regclass)",
            (table, f"{table}_hnsw"),
        ).fetchone()
    assert sizes is not None
    total, hnsw = (int(str(v)) for v in sizes)
    return {
        "table_mb": round((total - hnsw) / 2**20, 1),
        "hnsw_mb": round(hnsw / 2**20, 1),
    }


def server_versions(url: str) -> dict[str, str]:
    with psycopg.connect(url, autocommit=True) as connection:
        server = connection.execute("SHOW server_version").fetchone()
        vector = connection.execute(
            "SELECT default_version FROM pg_available_extensions WHERE name = 'vector'"
        ).fetchone()
        settings = {
            name: connection.execute(f"SHOW {name}").fetchone()
            for name in ("shared_buffers", "maintenance_work_mem")
        }
    return {
        "postgresql": str(server[0]) if server else "?",
        "pgvector": str(vector[0]) if vector else "?",
        **{name: str(row[0]) if row else "?" for name, row in settings.items()},
        "psycopg": psycopg.__version__,
    }
