"""Ranking ablation on the development half: the previous ranking, the current one, and the
current one without each of its ideas, on every public set at its own size and with 20k
distractors.

    python -m benchmarks.ablation [--split dev] [--max-queries 1000] [--models set=DIR,...]

Rankings are chosen here, on the dev half (`benchmarks.suite.data.half`); the benchmark
suite reports on the test half. The default model is trained on the dev halves, so
`--models` ranks each set with an ONNX model trained without it instead (the
leave-one-set-out models of benchmarks/README.md), as `benchmarks.ranking_tune` does.
Results: benchmarks/results/ablation-<split>.json and the ablation section of benchmarks/README.md.
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
from benchmarks.suite.readme import replace_between
from router.core.catalog import Catalog
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import backend_embedder, load_embedder
from router.evaluation.metrics import resolve_gold, score_ranking
from router.retrieval.retriever import CANDIDATE_DEPTH, Retriever
from router.retrieval.types import DEFAULT, PREVIOUS, Ranking
from router.retrieval.usage import UsageMemory

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
README = HERE / "README.md"
START, END = "<!-- ablation:start -->", "<!-- ablation:end -->"
SETS = ("msc_bench", "bfcl", "metatool")
SIZES = (0, 20000)

VARIANTS: dict[str, Ranking] = {
    "previous (RRF)": PREVIOUS,
    "current": DEFAULT,
    "- score fusion (RRF)": dataclasses.replace(DEFAULT, fusion="rrf"),
    "- step clauses": dataclasses.replace(DEFAULT, step_weight=0.0),
    "- named servers": dataclasses.replace(DEFAULT, named_server_bonus=0.0),
    "+ companions": dataclasses.replace(DEFAULT, companion_bonus=0.1),
}
"""Each kept idea is measured by taking it out of the current ranking, each dropped one by
putting it in."""

METRICS = ("recall@5", "all_hit@5", "mrr")
USAGE_BONUSES = (0.25, 0.5, 1.0)
"""Usage replay: the bonus of a tool called after a similar query, as tried."""


def run_set(
    name: str, options: argparse.Namespace, pool: list[data.PoolTool], embedder: Any
) -> dict[str, Any]:
    query_set = data.load_set(
        options.data,
        name,
        max_queries=options.max_queries,
        scale_queries=None,
        seed=0,
        split=options.split,
    )
    queries = query_set.sample
    cache = EmbeddingCache(options.cache_dir or default_cache_dir())
    order = data.distractor_order(pool, data.copies_of(pool, query_set), 0)
    vectors: list[Any] = []
    sizes: dict[str, Any] = {}
    for size in SIZES:
        catalog = Catalog.from_specs(data.scaled_specs(query_set, order, size))
        retriever, _ = Retriever.build(catalog, embedder, cache)
        if not vectors:  # the query and its step clauses, for every ranking and size
            vectors = [retriever.with_ranking(DEFAULT).embed_query(q.text) for q in queries]
        resolved, _ = resolve_gold(catalog, queries)
        results: dict[str, Any] = {}
        for label, ranking in VARIANTS.items():
            ranker = retriever.with_ranking(ranking)
            rows: list[dict[str, float]] = []
            levels: dict[str, list[dict[str, float]]] = {}
            millis: list[float] = []
            for query, row_vectors, gold in zip(queries, vectors, resolved, strict=True):
                texts = ranker.query_texts(query.text)
                started = time.perf_counter()
                ranked = ranker.search(
                    query.text, k=CANDIDATE_DEPTH, query_vectors=row_vectors[: len(texts)]
                )
                millis.append((time.perf_counter() - started) * 1000)
                positions = [catalog.position(r.qualified_name) for r in ranked]
                metrics = score_ranking(positions, gold.groups)
                rows.append(metrics)
                level = query.field("level")
                if level:
                    levels.setdefault(f"L{level}", []).append(metrics)
            results[label] = {
                "metrics": _mean(rows),
                "levels": {lv: _mean(r) | {"count": len(r)} for lv, r in sorted(levels.items())},
                "search_ms_p50": round(float(np.percentile(millis, 50)), 2),
            }
        sizes[str(size)] = {
            "tools": len(catalog),
            "variants": results,
            "usage": _usage_replay(retriever, catalog, queries, vectors, resolved),
        }
        print(f"{name} +{size}: done", file=sys.stderr)
    return {"queries": len(queries), "sizes": sizes}


def _usage_replay(
    retriever: Retriever,
    catalog: Catalog,
    queries: Any,
    vectors: list[Any],
    resolved: Any,
) -> dict[str, Any]:
    """One half of the sample replayed as usage (each query followed by a call to the first
    tool of each of its gold groups), the other half ranked with and without that memory."""
    memory = UsageMemory("replay")
    held = []
    for index, query in enumerate(queries):
        if data.half(f"usage/{query.id}", query.id) == "dev":
            tools = [next(iter(group)) for group in query.gold_groups if group]
            memory.record(query.text, vectors[index][0], tools)
        else:
            held.append(index)
    out: dict[str, Any] = {"remembered_pairs": len(memory), "held_out_queries": len(held)}
    for bonus in (0.0, *USAGE_BONUSES):
        ranker = retriever.with_ranking(dataclasses.replace(DEFAULT, usage_bonus=bonus))
        rows = []
        for index in held:
            query = queries[index]
            texts = ranker.query_texts(query.text)
            lift = memory.lift(vectors[index][0]) if bonus else None
            ranked = ranker.search(
                query.text,
                k=CANDIDATE_DEPTH,
                query_vectors=vectors[index][: len(texts)],
                lift=lift,
            )
            positions = [catalog.position(r.qualified_name) for r in ranked]
            rows.append(score_ranking(positions, resolved[index].groups))
        out[f"bonus {bonus:g}"] = _mean(rows)
    return out


def _mean(rows: list[dict[str, float]]) -> dict[str, float]:
    return {m: round(float(np.mean([r[m] for r in rows])), 4) for m in METRICS}


def _triple(metrics: dict[str, float]) -> str:
    return " / ".join(f"{metrics[m]:.3f}" for m in METRICS)


def markdown(report: dict[str, Any]) -> str:
    lines = [
        f"Ablation on the **{report['split']}** half (commit `{report['commit']}`): each idea "
        "taken out of the current ranking in turn (a dropped one put in). "
        + (
            "Each set is ranked by the model trained without it (`--models`). "
            if report.get("models_given")
            else ""
        )
        + "Recall@5 / all-hit@5 / MRR; search p50 (ms, embedding excluded) in the last column.",
        "",
        "| set | queries | ranking | own size | +20k | p50 ms +20k |",
        "|---|---|---|---|---|---|",
    ]
    for name, result in report["sets"].items():
        own, big = result["sizes"]["0"]["variants"], result["sizes"]["20000"]["variants"]
        for label in report["variants"]:
            cells = [_triple(v[label]["metrics"]) for v in (own, big)]
            lines.append(
                f"| {name} | {result['queries']} | {label} | {cells[0]} | {cells[1]} "
                f"| {big[label]['search_ms_p50']:.1f} |"
            )
    msc = report["sets"].get("msc_bench")
    if msc:
        lines += ["", "MSC-Bench by level, Recall@5 / all-hit@5 at its own size:", ""]
        levels = sorted(msc["sizes"]["0"]["variants"]["current"]["levels"])
        lines.append("| ranking | " + " | ".join(levels) + " |")
        lines.append("|---|" + "---|" * len(levels))
        for label in report["variants"]:
            by = msc["sizes"]["0"]["variants"][label]["levels"]
            cells = [f"{by[lv]['recall@5']:.3f} / {by[lv]['all_hit@5']:.3f}" for lv in levels]
            lines.append(f"| {label} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "Usage feedback, replayed: half of each sample is remembered as usage (the query, "
        "then a call to one tool of each gold group) and the other half is ranked with that "
        "memory, at each usage bonus (0 = no memory). Recall@5 / all-hit@5 / MRR.",
        "",
        "| set | remembered | held out | usage bonus | own size | +20k |",
        "|---|---|---|---|---|---|",
    ]
    for name, result in report["sets"].items():
        own, big = result["sizes"]["0"]["usage"], result["sizes"]["20000"]["usage"]
        for bonus in (0.0, *USAGE_BONUSES):
            label = f"bonus {bonus:g}"
            lines.append(
                f"| {name} | {own['remembered_pairs']} | {own['held_out_queries']} | {bonus:g} "
                f"| {_triple(own[label])} | {_triple(big[label])} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ablation")
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--split", choices=data.SPLITS, default="dev")
    parser.add_argument("--max-queries", type=int, default=1000)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument(
        "--models", default="", help="set=folder,...: the ONNX model each set is ranked with"
    )
    parser.add_argument("--table-only", action="store_true", help="re-render from results/")
    args = parser.parse_args(argv)
    out = RESULTS / f"ablation-{args.split}.json"
    if args.table_only:
        report = json.loads(out.read_text(encoding="utf-8"))
    else:
        names = [name for name in args.sets.split(",") if name]
        folders = dict(pair.split("=", 1) for pair in args.models.split(",") if pair)
        default = load_embedder(None, args.cache_dir)
        embedders = {
            name: backend_embedder(candidate_spec(Path(f), f"candidate:{Path(f).name}"))
            for name, f in folders.items()
        }
        pool = data.load_pool(args.data)
        started = time.perf_counter()
        report = {
            "schema": "mcp-router.ablation/1",
            "commit": head_commit(),
            "split": args.split,
            "max_queries": args.max_queries,
            "models": {name: folders.get(name, default.model_id) for name in names},
            "models_given": sorted(folders),  # the sets ranked by a model of their own
            "variants": {label: dataclasses.asdict(r) for label, r in VARIANTS.items()},
            "sets": {
                name: run_set(name, args, pool, embedders.get(name, default)) for name in names
            },
        }
        report["wall_seconds"] = round(time.perf_counter() - started, 1)
        out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    text = README.read_text(encoding="utf-8")
    if START in text:
        README.write_text(replace_between(text, START, END, markdown(report)), encoding="utf-8")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
