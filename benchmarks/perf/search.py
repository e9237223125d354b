"""In-process costs: search latency per catalog size, and embedding throughput.

Search: `Retriever.search(query, k=5)` one query at a time, hybrid (query embedding
included) on each backend and BM25 alone, each method over all queries in a block of its
own (interleaved query by query, the ONNX query embedding was markedly slower: the PyTorch
calls between them cleared the caches it works in, and a router never has PyTorch loaded),
in a new seeded order of methods each size; FastMCP's
`BM25SearchTransform._search` (as `benchmarks.suite.fastmcp_peer` times it: its catalog
hash check included) on the first queries after. Every backend searches the ONNX document
vectors: a dense scan costs the same whatever the values, and only the query's embedding
differs between backends (embedding 20k documents on torch would take minutes for nothing).

Embedding: `embed_documents` on the same real tool texts with no cache, the model loaded
and warmed first, best of a few rounds; and one query's embedding (`embed_query`).
"""

from __future__ import annotations

import random
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any

from benchmarks.perf.catalogs import Workload
from benchmarks.perf.figures import latency
from router.core.catalog import Catalog
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache
from router.embedding.indexing import embed_records
from router.retrieval.retriever import Retriever

WARMUP = 10


def _progress(message: str) -> None:
    print(f"perf: {message}", file=sys.stderr, flush=True)


def _timed(call: Callable[[], object]) -> float:
    started = time.perf_counter()
    call()
    return (time.perf_counter() - started) * 1000


def _methods(
    catalog: Catalog, backends: Mapping[str, Embedder], cache: EmbeddingCache | None
) -> tuple[dict[str, Callable[[str], object]], dict[str, Any]]:
    primary = backends["onnx"]
    started = time.perf_counter()
    vectors, stats = embed_records(catalog.records, primary, cache)
    index = {
        "embed_seconds": round(time.perf_counter() - started, 3),
        "embedded": stats.embedded,
        "from_cache": stats.from_cache,
    }
    methods: dict[str, Callable[[str], object]] = {}
    for name, embedder in backends.items():
        retriever = Retriever(catalog, embedder, vectors)
        methods[f"router_{name}_hybrid"] = partial(retriever.search, k=5)
        if name == "onnx":
            methods["router_bm25"] = partial(retriever.search, k=5, mode="bm25")
    return methods, index


def search_latency(
    workload: Workload,
    backends: Mapping[str, Embedder],
    cache: EmbeddingCache | None,
    fastmcp_queries: int,
) -> dict[str, Any]:
    """Per size: the index's cost and each method's latency."""
    from benchmarks.suite.fastmcp_peer import FastMCPRanker

    queries = workload.queries
    sizes: list[dict[str, Any]] = []
    for size, specs in workload.specs.items():
        catalog = Catalog.from_specs(specs)
        _progress(f"search latency at {len(catalog)} tools (embedding what the cache lacks)")
        methods, index = _methods(catalog, backends, cache)
        samples: dict[str, list[float]] = {name: [] for name in methods}
        order = list(methods)
        random.Random(size).shuffle(order)
        for name in order:
            method = methods[name]
            for query in queries[:WARMUP]:
                method(query)
            samples[name] = [_timed(partial(method, query)) for query in queries]
        figures = {name: latency(ms) for name, ms in samples.items()}
        if fastmcp_queries:
            peer = FastMCPRanker(catalog, queries)
            chosen = range(min(fastmcp_queries, len(queries)))
            figures["fastmcp_bm25"] = latency(peer.search_latencies(chosen))
        sizes.append({"size": size, "tools": len(catalog), "index": index, "methods": figures})
    return {"set": workload.set_name, "queries": len(queries), "k": 5, "sizes": sizes}


def throughput(
    texts: Sequence[str], queries: Sequence[str], backends: Mapping[str, Embedder], rounds: int
) -> dict[str, Any]:
    """Documents a second (best of `rounds`) and one query's latency, per backend."""
    for name, embedder in backends.items():
        _progress(f"loading the {name} embedder")
        embedder.load()
        embedder.embed_documents(list(texts[:8]))
    best: dict[str, float] = {}
    for _ in range(rounds):
        for name, embedder in backends.items():
            seconds = _timed(partial(embedder.embed_documents, list(texts))) / 1000
            best[name] = min(best.get(name, seconds), seconds)
    query_ms: dict[str, list[float]] = {
        name: [_timed(partial(embedder.embed_query, query)) for query in queries]
        for name, embedder in backends.items()  # one block per backend, as for search
    }
    report: dict[str, Any] = {
        name: {
            "model": embedder.model_id,
            "texts": len(texts),
            "seconds": round(best[name], 3),
            "docs_per_s": round(len(texts) / best[name], 1),
            "query": latency(query_ms[name]),
        }
        for name, embedder in backends.items()
    }
    result: dict[str, Any] = {"rounds": rounds, "backends": report}
    if "onnx" in report and "torch" in report:
        ratio = report["onnx"]["docs_per_s"] / report["torch"]["docs_per_s"]
        result["onnx_over_torch"] = round(ratio, 2)
    return result


def sample_texts(specs: Sequence[Any], n: int, seed: int) -> list[str]:
    """The search texts (what is embedded) of `n` seeded tools of a catalog."""
    records = Catalog.from_specs(specs).records
    chosen = random.Random(seed).sample(range(len(records)), min(n, len(records)))
    return [records[i].search_text for i in sorted(chosen)]
