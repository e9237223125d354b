"""Usage learning, honest and adversarial: what the learning rule gains and what a client
that calls wrong tools can do with it (issue 22).

    python -m benchmarks.usage_steering [--sets msc_bench,bfcl] [--max-queries 1000]

On the development half of each public set, at its own size: half of the sampled queries
(`benchmarks.suite.data.half`) are replayed as usage, twice each (two searches followed by a
call), and the other half is ranked with that memory. **Honest**: the remembered call is the
first tool of each gold group. **Adversarial**: a client that calls a wrong tool, the 50th of
the query's own ranking, for every remembered query. Two rules: the previous one (a single
search teaches, the lift is `usage_bonus` times the best score, uncapped) and the current one
(`MIN_CALLS` searches, lift capped at `Ranking.usage_cap`). Reported: Recall@5 / all-hit@5 /
MRR of the held-out half, and for the adversarial replay the share of held-out queries whose
top 5 the memory changed to hold a wrong tool it lifted (`steered@5`).
Results: benchmarks/results/usage-steering.json.
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

from benchmarks.provenance import head_commit
from benchmarks.suite import data
from router.core.catalog import Catalog
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import load_embedder
from router.evaluation.metrics import resolve_gold, score_ranking
from router.retrieval.retriever import CANDIDATE_DEPTH, Retriever
from router.retrieval.types import DEFAULT, Ranking
from router.retrieval.usage import MIN_CALLS, UsageMemory

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "usage-steering.json"
SETS = ("msc_bench", "bfcl", "metatool")
WRONG_RANK = 50
"""The rank, in the query's own ranking, of the wrong tool an adversarial client calls."""
METRICS = ("recall@5", "all_hit@5", "mrr")
RULES: dict[str, tuple[int, Ranking]] = {
    "none": (MIN_CALLS, dataclasses.replace(DEFAULT, usage_bonus=0.0)),
    "previous": (1, dataclasses.replace(DEFAULT, usage_cap=DEFAULT.usage_bonus)),
    "current": (MIN_CALLS, DEFAULT),
}


def run_set(name: str, options: argparse.Namespace, embedder: Any) -> dict[str, Any]:
    query_set = data.load_set(
        options.data, name, max_queries=options.max_queries, scale_queries=None, seed=0, split="dev"
    )
    queries = query_set.sample
    catalog = Catalog.from_specs(data.scaled_specs(query_set, [], 0))
    retriever, _ = Retriever.build(catalog, embedder, EmbeddingCache(options.cache_dir))
    vectors = [retriever.embed_query(q.text) for q in queries]
    resolved, _ = resolve_gold(catalog, queries)
    taught: list[int] = []
    held: list[int] = []
    for index, query in enumerate(queries):
        (taught if data.half(f"usage/{query.id}", query.id) == "dev" else held).append(index)
    plain = {
        i: retriever.search(queries[i].text, k=CANDIDATE_DEPTH, query_vectors=vectors[i])
        for i in taught
    }
    honest = {i: [next(iter(g)) for g in queries[i].gold_groups if g] for i in taught}
    wrong = {i: [plain[i][min(WRONG_RANK, len(plain[i])) - 1].tool.key] for i in taught}
    base_top = {
        i: {r.tool.key for r in retriever.search(queries[i].text, k=5, query_vectors=vectors[i])}
        for i in held
    }
    out: dict[str, Any] = {"tools": len(catalog), "taught": len(taught), "held_out": len(held)}
    for replay, remembered in (("honest", honest), ("adversarial", wrong)):
        for rule, (min_calls, ranking) in RULES.items():
            memory = UsageMemory("replay", min_calls=min_calls)
            for index, tools in remembered.items():
                for _ in range(2):  # two searches, each followed by the call
                    memory.record(queries[index].text, vectors[index][0], tools)
            ranker = retriever.with_ranking(ranking)
            rows, hits = [], 0
            for index in held:
                ranked = ranker.search(
                    queries[index].text,
                    k=CANDIDATE_DEPTH,
                    query_vectors=vectors[index],
                    lift=memory.lift(vectors[index][0]),
                )
                positions = [catalog.position(r.qualified_name) for r in ranked]
                rows.append(score_ranking(positions, resolved[index].groups))
                gold = {t for group in queries[index].gold_groups for t in group}
                lifted = set(memory.lift(vectors[index][0])) - gold
                entered = {r.tool.key for r in ranked[:5]} - base_top[index]
                hits += bool(entered & lifted)
            row = {m: round(float(np.mean([r[m] for r in rows])), 4) for m in METRICS}
            if replay == "adversarial":
                row["steered@5"] = round(hits / max(1, len(held)), 4)
            out[f"{replay}/{rule}"] = row
    print(f"{name}: done", file=sys.stderr)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.usage_steering")
    parser.add_argument("--data", type=Path, default=HERE.parent.parent / "shared" / "data")
    parser.add_argument("--max-queries", type=int, default=1000)
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--cache-dir", type=Path, default=None)
    args = parser.parse_args(argv)
    args.cache_dir = args.cache_dir or default_cache_dir()
    embedder = load_embedder(None, args.cache_dir)
    embedder.load()
    started = time.perf_counter()
    report: dict[str, Any] = {
        "schema": "mcp-router.usage-steering/1",
        "commit": head_commit(),
        "split": "dev",
        "wrong_rank": WRONG_RANK,
        "sets": {name: run_set(name, args, embedder) for name in args.sets.split(",") if name},
    }
    report["wall_seconds"] = round(time.perf_counter() - started, 1)
    OUT.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report["sets"], indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
