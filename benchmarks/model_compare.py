"""One embedding model against another, as the router ranks with each: Recall@5, all-hit@5 and
MRR of the hybrid ranking and of dense alone, on every public set at its own size and with
20k distractors, with the paired-bootstrap margin of the candidate over the base per query.

    python -m benchmarks.model_compare --candidate models/minilm-tools [--split test]

The candidate is an ONNX model folder (`model.onnx`, `tokenizer.json`, the pooling config)
run as the router runs a manifest model: int8 matrix products (`int8-dynamic`), so what is
measured is what would ship. The base is all-MiniLM-L6-v2 unless `--base` names another.
BM25 alone is the same for both and is reported once.
Results: benchmarks/results/model-compare-<split>.json.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import head_commit
from benchmarks.suite import data
from benchmarks.suite.bootstrap import paired_margin
from router.core.catalog import Catalog
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import backend_embedder, load_embedder
from router.embedding.manifest import ModelSpec
from router.evaluation.metrics import resolve_gold, score_ranking
from router.retrieval.retriever import CANDIDATE_DEPTH, Retriever
from router.retrieval.types import DEFAULT, SearchMode

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
SETS = ("msc_bench", "bfcl", "metatool")
SIZES = (0, 20000)
METRICS = ("recall@5", "all_hit@5", "mrr")
MODES = (SearchMode.HYBRID, SearchMode.DENSE)
BASE = "all-MiniLM-L6-v2"
"""The model the tool-search model was trained from (the default before it)."""


def candidate_spec(folder: Path, model_id: str) -> ModelSpec:
    model = folder / "model.onnx"
    return ModelSpec(
        id=model_id,
        source=f"path:{model}",
        backend="onnx",
        quantization="int8-dynamic",
        tokenizer=f"path:{folder}",
        sha256=hashlib.sha256(model.read_bytes()).hexdigest(),
        dimension=384,
        max_seq_length=256,
    )


def _rows(
    retriever: Retriever, catalog: Catalog, queries: list[Any], mode: SearchMode
) -> list[dict[str, float]]:
    resolved, _ = resolve_gold(catalog, queries)
    vectors = None
    if mode is not SearchMode.BM25:
        vectors = [retriever.embed_query(q.text) for q in queries]
    rows = []
    for index, (query, gold) in enumerate(zip(queries, resolved, strict=True)):
        ranked = retriever.search(
            query.text,
            k=CANDIDATE_DEPTH,
            mode=mode,
            query_vectors=None if vectors is None else vectors[index],
        )
        positions = [catalog.position(r.qualified_name) for r in ranked]
        rows.append(score_ranking(positions, gold.groups))
    return rows


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: round(float(np.mean([r[m] for r in rows])), 4) for m in METRICS}


def run_set(
    name: str, options: argparse.Namespace, pool: list[data.PoolTool], models: dict[str, Any]
) -> dict[str, Any]:
    query_set = data.load_set(
        options.data,
        name,
        max_queries=options.max_queries,
        scale_queries=None,
        seed=0,
        split=options.split,
    )
    queries = list(query_set.sample)
    cache = EmbeddingCache(options.cache_dir or default_cache_dir())
    order = data.distractor_order(pool, data.copies_of(pool, query_set), 0)
    sizes: dict[str, Any] = {}
    for size in options.sizes:
        catalog = Catalog.from_specs(data.scaled_specs(query_set, order, size))
        per_model: dict[str, dict[str, list[dict[str, float]]]] = {}
        bm25: list[dict[str, float]] = []
        for label, embedder in models.items():
            started = time.perf_counter()
            retriever, _ = Retriever.build(catalog, embedder, cache)
            retriever = retriever.with_ranking(
                dataclasses.replace(DEFAULT, step_weight=options.step_weight)
            )
            built = time.perf_counter() - started
            per_model[label] = {
                mode.value: _rows(retriever, catalog, queries, mode) for mode in MODES
            }
            if not bm25:
                bm25 = _rows(retriever, catalog, queries, SearchMode.BM25)
            print(f"{name} +{size} {label}: built in {built:.0f}s", file=sys.stderr)
        result: dict[str, Any] = {"tools": len(catalog), "bm25": _mean(bm25)}
        for label, modes in per_model.items():
            result[label] = {mode: _mean(rows) for mode, rows in modes.items()}
        for mode in MODES:
            ours = [r["recall@5"] for r in per_model["candidate"][mode.value]]
            theirs = [r["recall@5"] for r in per_model["base"][mode.value]]
            result[f"margin_recall@5_{mode.value}"] = paired_margin(ours, theirs)
        hybrid = [r["recall@5"] for r in per_model["candidate"]["hybrid"]]
        result["margin_recall@5_over_bm25"] = paired_margin(hybrid, [r["recall@5"] for r in bm25])
        levels: dict[str, dict[str, float]] = {}
        for label in ("base", "candidate"):
            by_level: dict[str, list[float]] = {}
            for query, row in zip(queries, per_model[label]["hybrid"], strict=True):
                level = query.field("level")
                if level:
                    by_level.setdefault(f"L{level}", []).append(row["recall@5"])
            for level, values in sorted(by_level.items()):
                levels.setdefault(level, {})[label] = round(float(np.mean(values)), 4)
        if levels:
            result["levels_recall@5_hybrid"] = levels
        sizes[str(size)] = result
    return {"queries": len(queries), "sizes": sizes}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.model_compare")
    parser.add_argument("--candidate", type=Path, required=True, help="an ONNX model folder")
    parser.add_argument("--base", default=BASE, help=f"the model to beat (default {BASE})")
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--split", choices=("dev", "test"), default="test")
    parser.add_argument("--max-queries", type=int, default=2000)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--step-weight",
        type=float,
        default=DEFAULT.step_weight,
        help="rank multi-step requests' step clauses too, at this weight (router.steps)",
    )
    options = parser.parse_args(argv)
    options.sizes = [int(s) for s in options.sizes.split(",") if s]
    cache_dir = options.cache_dir or default_cache_dir()
    spec = candidate_spec(options.candidate, f"candidate:{options.candidate.name}")
    models = {
        "base": load_embedder(options.base, cache_dir),
        "candidate": backend_embedder(spec, cache_dir),
    }
    pool = data.load_pool(options.data)
    started = time.perf_counter()
    report = {
        "schema": "mcp-router.model-compare/1",
        "commit": head_commit(),
        "split": options.split,
        "candidate": str(options.candidate),
        "candidate_sha256": spec.sha256,
        "base": options.base,
        "step_weight": options.step_weight,
        "sets": {
            name: run_set(name, options, pool, models) for name in options.sets.split(",") if name
        },
    }
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    out = options.out or RESULTS / f"model-compare-{options.split}.json"
    out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    sys.stdout.write(json.dumps(report, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
