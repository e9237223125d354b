"""`python -m benchmarks.peoples_requests [--split dev|test] [--second]`: a people's-requests
set ranked by the router's default retrieval, with 95% bootstrap intervals (`--second`: the
second set, benchmarks/data/peoples_requests_2/, into `peoples-requests-2-<split>.json` and
its own README section).

The index and the metrics are `mcp-router eval`'s own (`router.cli.indexing.build_index`,
`router.evaluation.metrics.evaluate`): the shipped model (`--model`, default the manifest's)
and the default hybrid ranking, with dense and BM25 alone beside it. What this adds is the
per-query view: each figure's interval (a percentile bootstrap of the queries, fixed seed)
and a breakdown by language, steps, typos and server. The figures:

- **top-1**: the first tool is a gold tool (it satisfies one of the query's groups);
- **hit@5**: every group has a member in the top 5 (`all_hit@5`), what an agent needs;
- **Recall@5**: the share of a query's groups with a member in the top 5.

Writes `benchmarks/results/peoples-requests-<split>.json` and rewrites the section between
the markers in `benchmarks/README.md` from whichever halves have results. The test half
is reported, never tuned on (benchmarks/data/peoples_requests/README.md).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import time
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.peoples_requests import second, table
from benchmarks.peoples_requests.split import DATA, SPLITS
from benchmarks.provenance import head_commit
from benchmarks.suite.bootstrap import CONFIDENCE, RESAMPLES
from router.accounting.tokens import TokenCounter
from router.cli.indexing import add_index_arguments, build_index
from router.cli.option_types import search_modes
from router.evaluation.dataset import OnError, Query, load_queries
from router.evaluation.metrics import ResolvedQuery, evaluate, resolve_gold
from router.retrieval.retriever import CANDIDATE_DEPTH
from router.retrieval.types import SearchMode

RESULTS = Path(__file__).resolve().parents[1] / "results"
SCHEMA = "mcp-router.peoples-requests/1"
SEED = 35
K = 5
FIGURES = ("top1", "hit@5", "recall@5")
BREAKDOWN = ("lang", "steps", "typo", "server")
"""Query fields the figures are broken down by."""


def result_path(split: str, second_set: bool = False) -> Path:
    """Where a half's result lives (`second`: the second set's, `peoples-requests-2-*`)."""
    return RESULTS / f"peoples-requests{'-2' if second_set else ''}-{split}.json"


def interval(values: Sequence[float], seed: int = SEED) -> dict[str, float]:
    """The mean of `values` and its percentile-bootstrap interval over the queries."""
    data = np.asarray(values, dtype=np.float64)
    if data.size == 0:
        return {"mean": 0.0, "low": 0.0, "high": 0.0}
    rng = np.random.default_rng(seed)
    means = data[rng.integers(0, data.size, size=(RESAMPLES, data.size))].mean(axis=1)
    tail = (1 - CONFIDENCE) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return {
        "mean": round(float(data.mean()), 4),
        "low": round(float(low), 4),
        "high": round(float(high), 4),
    }


def figures_of(row: dict[str, float]) -> dict[str, float]:
    """One query's three figures from its `score_ranking` metrics (MRR 1: rank 1 is gold)."""
    return {
        "top1": 1.0 if row["mrr"] == 1.0 else 0.0,
        "hit@5": row["all_hit@5"],
        "recall@5": row["recall@5"],
    }


def _summary(rows: Sequence[dict[str, float]]) -> dict[str, Any]:
    return {name: interval([row[name] for row in rows]) for name in FIGURES}


def _breakdown(queries: Sequence[Query], rows: Sequence[dict[str, float]]) -> dict[str, Any]:
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for query, row in zip(queries, rows, strict=True):
        for name in BREAKDOWN:
            value = query.field(name)
            if name == "typo":
                value = "yes" if value else "no"
            if value is not None:
                groups[f"{name}={value}"].append(row)
    return {
        label: {"count": len(members)} | {n: interval([r[n] for r in members]) for n in FIGURES}
        for label, members in sorted(groups.items())
    }


def _misses(
    retriever: Any, resolved: Sequence[ResolvedQuery], rows: Sequence[dict[str, float]]
) -> list[dict[str, Any]]:
    """The dev half's hybrid misses (hit@5 0), each with its top 5: what a dev reading
    looks at. The test half lists none, so that nobody tunes on it by reading it."""
    records = retriever.catalog.records
    missed = []
    for item, row in zip(resolved, rows, strict=True):
        if row["hit@5"] == 1.0:
            continue
        ranked = retriever.search(item.query.text, k=K, mode=SearchMode.HYBRID)
        gold = [[records[p].qualified_name for p in sorted(group)] for group in item.groups]
        missed.append(
            {
                "id": item.query.id,
                "query": item.query.text,
                "gold": gold,
                "top5": [s.qualified_name for s in ranked],
            }
        )
    return missed


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Rank one half in every mode asked for; the report `table` renders."""
    started = time.perf_counter()
    queries_path: Path = args.data / f"{args.split}.jsonl"
    queries, problems = load_queries(queries_path, OnError.STOP)
    del problems  # STOP: a malformed line has already raised
    modes: list[SearchMode] = args.mode
    index = build_index(args, modes)
    resolved, unknown = resolve_gold(index.catalog, queries)
    if unknown:
        raise SystemExit(f"{unknown} gold tools of {queries_path} are not in the catalog")
    ranked_at = time.perf_counter()
    results = evaluate(index.retriever, resolved, modes, k=K, counter=TokenCounter())
    ranking_seconds = time.perf_counter() - ranked_at
    runs = []
    for result in results:
        rows = [figures_of(row) for row in result.per_query]
        run: dict[str, Any] = {
            "mode": str(result.mode),
            "figures": _summary(rows),
            "latency_ms": result.summary(1)["latency_ms"],
            "groups": _breakdown(queries, rows),
        }
        if result.mode is SearchMode.HYBRID and args.split == "dev":
            run["misses"] = _misses(index.retriever, resolved, rows)
        runs.append(run)
    return {
        "schema": SCHEMA,
        "split": args.split,
        "commit": head_commit(),
        "machine": f"{platform.machine()} {platform.system()}",
        "cpus": os.cpu_count() or 0,
        "python": platform.python_version(),
        "model": index.model_id,
        "k": K,
        "candidate_depth": CANDIDATE_DEPTH,
        "catalog": _file(args.catalog) | {"tools": len(index.catalog)},
        "queries": _file(queries_path) | {"count": len(resolved)},
        "bootstrap": {"resamples": RESAMPLES, "confidence": CONFIDENCE, "seed": SEED},
        "seconds": {
            "index": round(index.build_seconds, 2),
            "ranking": round(ranking_seconds, 2),
            "total": round(time.perf_counter() - started, 2),
        },
        "runs": runs,
    }


def _file(path: Path) -> dict[str, str]:
    try:
        shown = path.resolve().relative_to(RESULTS.parents[1]).as_posix()
    except ValueError:
        shown = str(path)
    return {"path": shown, "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}


def parser() -> argparse.ArgumentParser:
    built = argparse.ArgumentParser(prog="python -m benchmarks.peoples_requests")
    add_index_arguments(built)
    built.set_defaults(catalog=DATA / "catalog.jsonl")
    built.add_argument("--split", choices=SPLITS, default="dev")
    built.add_argument("--data", type=Path, default=DATA, help="the set's folder")
    built.add_argument(
        "--second", action="store_true", help="the second set (data/peoples_requests_2/)"
    )
    built.add_argument("--mode", type=search_modes, default="hybrid,dense,bm25")
    built.add_argument("--out", type=Path, default=None, help="default: results/")
    built.add_argument("--table-only", action="store_true", help="re-render from results/")
    built.add_argument("--no-readme", action="store_true", help="leave the README as it is")
    return built


def main(argv: Sequence[str] | None = None) -> int:
    arguments = list(sys.argv[1:] if argv is None else argv)
    data = second.DATA if "--second" in arguments else DATA
    if not any(a == "--catalog" or a.startswith("--catalog=") for a in arguments):
        arguments += ["--catalog", str(data / "catalog.jsonl")]
    if not any(a == "--data" or a.startswith("--data=") for a in arguments):
        arguments += ["--data", str(data)]
    args = parser().parse_args(arguments)
    if not args.table_only:
        report = measure(args)
        out: Path = args.out or result_path(args.split, args.second)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        print(table.summary_line(report), file=sys.stderr)
    if not args.no_readme:
        reports = {
            s: json.loads(p.read_text())
            for s in SPLITS
            if (p := result_path(s, args.second)).is_file()
        }
        markers = table.SECOND if args.second else (table.START, table.END)
        table.update_readme(reports, markers=markers)
    return 0
