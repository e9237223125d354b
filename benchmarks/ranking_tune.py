"""The hybrid ranking's weights chosen for a trained model, on dev halves that model never saw.

    python -m benchmarks.ranking_tune --models msc_bench=DIR,bfcl=DIR,metatool=DIR

The tool-search model is trained on the dev halves of the public sets, so tuning its ranking
there would reward whatever the model memorised. Each set is ranked here instead with the
model trained without that set (the leave-one-set-out models of `benchmarks/README.md`:
`python -m models.training.data --sets <the other two>`, `python -m models.train`,
`python -m models.training.export`), on that set's dev half, at its own size and with 20k
distractors. Each ranking of the grid (the BM25 weight of score fusion, without step
clauses and with them) is scored by Recall@5, and the one with the best mean over the six
cells is chosen; the test halves then report it (`benchmarks.model_compare`, the suite).
Results: benchmarks/results/ranking-tune.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.model_compare import candidate_spec
from benchmarks.provenance import head_commit
from benchmarks.suite import data
from router.core.catalog import Catalog
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import backend_embedder
from router.evaluation.metrics import resolve_gold, score_ranking
from router.retrieval.retriever import CANDIDATE_DEPTH, Retriever
from router.retrieval.types import DEFAULT, Ranking

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "ranking-tune.json"
SIZES = (0, 20000)
METRICS = ("recall@5", "all_hit@5", "mrr")
BM25_WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.4, 0.6)
STEP_WEIGHTS = (0.8, 0.9, 1.0)
STEP_PARTS = (4, 8)


def grid() -> dict[str, Ranking]:
    """Each BM25 weight without step clauses; the two closest to the default with each step
    clause weight and most clauses."""
    rankings = {
        f"bm25 {weight:g}, steps 0": dataclasses.replace(DEFAULT, bm25_weight=weight, step_weight=0)
        for weight in BM25_WEIGHTS
    }
    for weight in (0.3, 0.4):
        for steps in STEP_WEIGHTS:
            for parts in STEP_PARTS:
                rankings[f"bm25 {weight:g}, steps {steps:g} x{parts}"] = dataclasses.replace(
                    DEFAULT, bm25_weight=weight, step_weight=steps, step_parts=parts
                )
    return rankings


def run_set(
    name: str, model: Path, options: argparse.Namespace, pool: list[data.PoolTool]
) -> dict[str, Any]:
    query_set = data.load_set(
        options.data,
        name,
        max_queries=options.max_queries,
        scale_queries=None,
        seed=0,
        split="dev",
    )
    queries = list(query_set.sample)
    # the id `model_compare` gives it: the tools embedded there are reused from the cache
    embedder = backend_embedder(candidate_spec(model, f"candidate:{model.name}"))
    cache = EmbeddingCache(options.cache_dir or default_cache_dir())
    order = data.distractor_order(pool, data.copies_of(pool, query_set), 0)
    rankings = grid()
    vectors: dict[int, list[Any]] = {}
    sizes: dict[str, Any] = {}
    for size in SIZES:
        catalog = Catalog.from_specs(data.scaled_specs(query_set, order, size))
        retriever, _ = Retriever.build(catalog, embedder, cache)
        # the query and its clauses, once for every ranking and size
        for parts in {ranking.step_parts for ranking in rankings.values()}:
            if parts not in vectors:
                splitting = retriever.with_ranking(
                    dataclasses.replace(DEFAULT, step_weight=1.0, step_parts=parts)
                )
                vectors[parts] = [splitting.embed_query(q.text) for q in queries]
        resolved, _ = resolve_gold(catalog, queries)
        results: dict[str, Any] = {}
        for label, ranking in rankings.items():
            ranker = retriever.with_ranking(ranking)
            rows, l4, millis = [], [], []
            embedded = vectors[ranking.step_parts]
            for query, row_vectors, gold in zip(queries, embedded, resolved, strict=True):
                texts = ranker.query_texts(query.text)
                started = time.perf_counter()
                ranked = ranker.search(
                    query.text, k=CANDIDATE_DEPTH, query_vectors=row_vectors[: len(texts)]
                )
                millis.append((time.perf_counter() - started) * 1000)
                metrics = score_ranking(
                    [catalog.position(r.qualified_name) for r in ranked], gold.groups
                )
                rows.append(metrics)
                if query.field("level") == "4":
                    l4.append(metrics["recall@5"])
            results[label] = {
                m: round(float(np.mean([r[m] for r in rows])), 4) for m in METRICS
            } | {"search_ms_p50": round(float(np.percentile(millis, 50)), 2)}
            if l4:
                results[label]["L4_recall@5"] = round(float(np.mean(l4)), 4)
        sizes[str(size)] = {"tools": len(catalog), "rankings": results}
        print(f"{name} +{size}: done", file=sys.stderr)
    return {"model": str(model), "queries": len(queries), "sizes": sizes}


def choose(sets: dict[str, Any]) -> dict[str, Any]:
    """The ranking with the best mean Recall@5 over every set and size."""
    means = {
        label: round(
            float(
                np.mean(
                    [
                        size["rankings"][label]["recall@5"]
                        for result in sets.values()
                        for size in result["sizes"].values()
                    ]
                )
            ),
            4,
        )
        for label in grid()
    }
    best = max(means, key=lambda label: means[label])
    return {"mean_recall@5": means, "chosen": best}


def markdown(report: dict[str, Any]) -> str:
    sets = report["sets"]
    header = " | ".join(f"{name} own | {name} +20k" for name in sets)
    lines = [
        "| ranking | " + header + " | mean |",
        "|---|" + "---|---|" * len(sets) + "---|",
    ]
    for label in grid():
        cells = [
            f"{result['sizes'][size]['rankings'][label]['recall@5']:.3f}"
            for result in sets.values()
            for size in ("0", "20000")
        ]
        mean = report["choice"]["mean_recall@5"][label]
        bold = "**" if label == report["choice"]["chosen"] else ""
        lines.append(f"| {bold}{label}{bold} | " + " | ".join(cells) + f" | {mean:.4f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ranking_tune")
    parser.add_argument(
        "--models",
        required=True,
        help="set=folder,...: for each set, the ONNX model trained without it",
    )
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--max-queries", type=int, default=1000)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    options = parser.parse_args(argv)
    models = dict(pair.split("=", 1) for pair in options.models.split(","))
    pool = data.load_pool(options.data)
    sets = {name: run_set(name, Path(folder), options, pool) for name, folder in models.items()}
    report = {
        "schema": "mcp-router.ranking-tune/1",
        "commit": head_commit(),
        "split": "dev",
        "sets": sets,
    }
    report["choice"] = choose(sets)
    options.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
