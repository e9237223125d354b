"""A new replica starting against a filled store, in a fresh process so its memory is its own.

    python -m benchmarks.store_scale.replica '<json: a ReplicaSpec>'

The process builds the catalog (as a replica gets it from its upstreams), loads the model,
then times what the store's mode decides: opening the store and indexing the catalog
(`exact`: every vector read from PostgreSQL into a matrix; `hnsw`: nothing to read; `local`:
today's default, the vectors read from the SQLite embedding cache), then the retriever's
in-process indexes (BM25, names). It runs a few searches and prints one JSON line: the
times, its resident memory before the store was opened and once ready, and its peak since
the store was opened (Linux `VmHWM`, reset first through `/proc/self/clear_refs`).
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from benchmarks.store_scale import corpus
from router.embedding.base import Embedder

SEARCHES = (
    "send a message to a slack channel",
    "what is the weather in Paris tomorrow",
    "create a github issue for this bug",
    "convert 100 dollars to euros",
    "list the files in a folder",
)
MODES = ("exact", "hnsw", "local")
ROOT = Path(__file__).resolve().parent.parent.parent


@dataclass(frozen=True, slots=True)
class ReplicaSpec:
    data: str
    sets: tuple[str, ...]
    seed: int
    queries: int
    limit: int | None
    size: int
    mode: str
    url: str
    namespace: str
    model: str | None
    """None: the hashing test embedder."""
    cache_dir: str
    ef_search: int = 100


def make_embedder(model: str | None) -> Embedder:
    if model is None:
        from router.embedding.hashing import HashingEmbedder

        return HashingEmbedder(384)
    from router.embedding.loading import load_embedder

    return load_embedder(model, None)


def _status() -> dict[str, float]:
    """VmRSS and VmHWM of this process, MiB."""
    found: dict[str, float] = {}
    for line in Path("/proc/self/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            found[key] = int(value.split()[0]) / 1024
    return found


def _reset_peak() -> bool:
    try:
        Path("/proc/self/clear_refs").write_text("5")
    except OSError:
        return False
    return True


def run(spec: ReplicaSpec) -> dict[str, Any]:
    from router.embedding.cache import EmbeddingCache
    from router.retrieval.retriever import Retriever
    from router.store.local import LocalStore
    from router.store.postgres.store import PostgresStore
    from router.vectors.dense import DenseSearch

    started = time.perf_counter()
    source = corpus.load_source(
        Path(spec.data), spec.sets, spec.queries, spec.seed, limit=spec.limit
    )
    catalog = corpus.catalog(source, spec.size)
    del source
    catalog_s = time.perf_counter() - started
    embedder = make_embedder(spec.model)
    embedder.load()
    gc.collect()
    base = _status()["VmRSS"]
    peak_reset = _reset_peak()

    start = time.perf_counter()
    store: LocalStore | PostgresStore
    if spec.mode == "local":
        store = LocalStore(EmbeddingCache(Path(spec.cache_dir)))
    else:
        store = PostgresStore(
            spec.url,
            namespace=spec.namespace,
            search="exact" if spec.mode == "exact" else "hnsw",
            ef_search=spec.ef_search,
        )
        store.open()
    opened_s = time.perf_counter() - start
    dense: DenseSearch
    dense, stats = store.index(catalog.records, embedder)
    store_s = time.perf_counter() - start
    retriever = Retriever(catalog, embedder, dense)
    ready_s = time.perf_counter() - start
    for query in SEARCHES:
        retriever.search(query, k=5)
    gc.collect()
    after = _status()
    store.close()
    return {
        "size": spec.size,
        "mode": spec.mode,
        "tools": len(catalog),
        "embedded": stats.embedded,
        "catalog_s": round(catalog_s, 2),
        "open_s": round(opened_s, 3),
        "store_s": round(store_s, 3),
        "ready_s": round(ready_s, 3),
        "retriever_s": round(ready_s - store_s, 3),
        "rss_before_mb": round(base, 1),
        "rss_mb": round(after["VmRSS"], 1),
        "index_mb": round(after["VmRSS"] - base, 1),
        "peak_mb": round(after["VmHWM"], 1) if peak_reset else None,
    }


def measure(spec: ReplicaSpec, timeout_s: float) -> dict[str, Any]:
    """`run(spec)` in a fresh interpreter; its JSON line."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.store_scale.replica", json.dumps(asdict(spec))],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=timeout_s,
        check=False,
    )
    if done.returncode != 0:
        raise RuntimeError(f"replica {spec.mode} at {spec.size} failed:\n{done.stderr[-4000:]}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str]) -> None:
    raw = json.loads(argv[0])
    raw["sets"] = tuple(raw["sets"])
    print(json.dumps(run(ReplicaSpec(**raw))))


if __name__ == "__main__":
    main(sys.argv[1:])
