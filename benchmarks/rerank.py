"""`python -m benchmarks.rerank --reranker DIR`: the cross-encoder reranker, measured.

The reranker (`router.retrieval.rerank`) re-scores the hybrid ranking's top N and blends its
verdict with that ranking's score at a weight. This ranks the people's requests and the
public sets (MSC-Bench, BFCL, MetaTool; at most `PER_HALF` requests a half) with the shipped
model at each set's own size and with 20k distractors from the pools, scores each request's
top N with the reranker for each N of `DEPTHS` (a pair met twice is scored once), and reads
every weight of `WEIGHTS` from those logits; N = 5 at weight 0 is the shipped ranking. N and
the weight are chosen on the dev halves (the best mean of top-1 and hit@5 over every dev
cell); the test halves report them against no reranker, with paired bootstrap intervals.

Its cost (`--cost`) is measured at 20k tools on one core (`MCP_ROUTER_EMBED_THREADS=1`):
search p50/p99 without and with the reranker at the chosen N, the reranker's cold start
(load and first scores) and the resident memory it adds.

Writes `benchmarks/results/rerank.json` and the section of benchmarks/README.md between the
rerank markers.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import head_commit
from benchmarks.server_signal import measured_cells, people_set, ranked_cells, summary_of
from benchmarks.suite import data
from benchmarks.suite.bootstrap import format_margin
from benchmarks.suite.readme import replace_between
from router.core.catalog import Catalog
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import load_embedder
from router.embedding.manifest import DEFAULT_MODEL
from router.evaluation.dataset import Query
from router.evaluation.metrics import resolve_gold
from router.retrieval.rerank import Reranker, rerank
from router.retrieval.retriever import Retriever
from router.retrieval.types import ScoredTool

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "rerank.json"
README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- rerank:start -->", "<!-- rerank:end -->"
DEPTHS = (5, 10, 20)
WEIGHTS = (0.0, 0.1, 0.2, 0.3, 0.5, 0.7, 1.0)
PER_HALF = 300
SEED = 35
K = 5
FIGURES = ("top1", "hit@5")
COST_QUERIES = 120
DEFAULT_P50_MS = 25.0
"""The most a default reranked search may take at 20k tools on one core (p50)."""


def _hits(
    found: Sequence[ScoredTool], catalog: Catalog, groups: Sequence[Any]
) -> tuple[float, float]:
    positions = [catalog.position(r.qualified_name) for r in found[:K]]
    top1 = float(bool(positions) and any(positions[0] in g for g in groups))
    hit = float(all(any(p in g for p in positions) for g in groups))
    return top1, hit


def _per_query(
    retriever: Retriever,
    reranker: Reranker,
    queries: Sequence[Query],
    logits_seen: dict[tuple[str, str], float],
) -> dict[str, dict[str, list[float]]]:
    """Each (N, weight)'s per-query top-1 and hit@5; `logits_seen` keeps every (request,
    tool text) logit, so a set's two sizes score their shared candidates once."""
    resolved, _ = resolve_gold(retriever.catalog, list(queries))
    out: dict[str, dict[str, list[float]]] = {}
    for item in resolved:
        text = item.query.text
        for depth in DEPTHS:
            # the router searches k = N, then reorders those N: at N = 5 and weight 0 this
            # is exactly the shipped ranking (`_spread` shares out the top k it is asked for)
            found = retriever.search(text, k=depth)
            texts = [r.tool.search_text for r in found]
            missing = [t for t in dict.fromkeys(texts) if (text, t) not in logits_seen]
            for t, logit in zip(missing, reranker.scores(text, missing), strict=True):
                logits_seen[(text, t)] = float(logit)
            logits = [logits_seen[(text, t)] for t in texts]
            for weight in WEIGHTS:
                top1, hit = _hits(rerank(found, logits, weight), retriever.catalog, item.groups)
                rows = out.setdefault(f"{depth}@{weight:g}", {"top1": [], "hit@5": []})
                rows["top1"].append(top1)
                rows["hit@5"].append(hit)
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    embedder = load_embedder(args.model, args.cache_dir)
    reranker = Reranker(args.reranker, args.cache_dir)
    logits_seen: dict[str, dict[tuple[str, str], float]] = {}  # a set's sizes share theirs
    cells = measured_cells(
        ranked_cells(args, embedder, PER_HALF),
        lambda name, retriever, queries: _per_query(
            retriever, reranker, queries, logits_seen.setdefault(name, {})
        ),
    )
    return {
        "schema": "mcp-router.rerank/1",
        "commit": head_commit(),
        "model": embedder.model_id,
        "reranker": _reranker_record(args.reranker),
        "depths": list(DEPTHS),
        "weights": list(WEIGHTS),
        "k": K,
        "cells": cells,
    }


def _reranker_record(folder: Path) -> dict[str, Any]:
    config = json.loads((folder / "reranker.json").read_text("utf-8"))
    return {"folder": folder.name, **config}


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    """Means per cell and setting, the setting chosen on dev (ties to the fewest pairs to
    score, then the smallest weight), and its test margins against no reranker."""
    return summary_of(
        report,
        f"{report['depths'][0]}@0",
        lambda s: (-int(s.split("@")[0]), -float(s.split("@")[1])),
    )


def packed(report: dict[str, Any]) -> dict[str, Any]:
    """`report` with each per-query list of 0s and 1s as a string of digits ("0110..."), so
    that the file stays small; the summary holds every figure the tables print."""
    cells = {
        label: {
            **cell,
            "per_query": {
                setting: {f: "".join(str(int(v)) for v in values) for f, values in rows.items()}
                for setting, rows in cell["per_query"].items()
            },
        }
        for label, cell in report["cells"].items()
    }
    return {**report, "cells": cells}


def write_config(folder: Path, chosen: str) -> None:
    """`chosen` (`N@weight`) as the folder's `depth` and `weight`, which the router serves."""
    path = folder / "reranker.json"
    config = json.loads(path.read_text("utf-8"))
    depth, weight = chosen.split("@")
    config.update(depth=int(depth), weight=float(weight))
    path.write_text(json.dumps(config, indent=2) + "\n", encoding="utf-8")


def _rss_mib() -> float:
    for line in Path("/proc/self/status").read_text("utf-8").splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def cost(args: argparse.Namespace, depth: int) -> dict[str, Any]:
    """Search p50/p99 at 20k tools on one core, without and with the reranker at `depth`;
    the reranker's cold start and the memory it adds."""
    os.environ["MCP_ROUTER_EMBED_THREADS"] = "1"
    embedder = load_embedder(args.model, args.cache_dir)
    cache = EmbeddingCache(args.cache_dir or default_cache_dir())
    pool = data.load_pool(args.data)
    query_set, halves = people_set()
    order = data.distractor_order(pool, data.copies_of(pool, query_set), 0)
    specs = data.scaled_specs(query_set, order, 20000)
    retriever, _ = Retriever.build(Catalog.from_specs(specs), embedder, cache)
    texts = [q.text for q in halves["dev"]][:COST_QUERIES]
    retriever.search(texts[0], k=K)  # warm the embedder
    before = _rss_mib()
    started = time.perf_counter()
    reranker = Reranker(args.reranker, args.cache_dir)
    reranker.scores(texts[0], [r.tool.search_text for r in retriever.search(texts[0], k=depth)])
    cold = time.perf_counter() - started
    added = _rss_mib() - before
    plain: list[float] = []
    reranked: list[float] = []
    for text in texts:
        started = time.perf_counter()
        retriever.search(text, k=K)
        plain.append(time.perf_counter() - started)
        started = time.perf_counter()
        found = retriever.search(text, k=depth)
        rerank(found, reranker.scores(text, [r.tool.search_text for r in found]), 0.5)
        reranked.append(time.perf_counter() - started)

    def ms(values: list[float], q: float) -> float:
        return round(float(np.percentile(values, q)) * 1000, 1)

    return {
        "tools": len(specs),
        "queries": len(texts),
        "threads": 1,
        "depth": depth,
        "search_ms": {"p50": ms(plain, 50), "p99": ms(plain, 99)},
        "reranked_search_ms": {"p50": ms(reranked, 50), "p99": ms(reranked, 99)},
        "cold_start_s": round(cold, 2),
        "rss_added_mib": round(added, 1),
    }


def markdown(report: dict[str, Any]) -> str:
    summary = report["summary"]
    chosen, base = summary["chosen"], summary["base"]
    depth, weight = chosen.split("@")
    lines = [
        f"Model `{report['model']}`, reranker `{report['reranker']['folder']}` (max length "
        f"{report['reranker']['max_length']}, sha256 `{report['reranker']['sha256'][:12]}…`), "
        f"k = {report['k']}, commit `{report['commit']}`. Chosen on dev (mean of top-1 and "
        f"hit@5 over the dev cells): **N = {depth}, weight {weight}** "
        f"({summary['dev_score'][chosen]:.4f} against {summary['dev_score'][base]:.4f} "
        "without the reranker).",
        "",
        "| cell | without | N 10, weight 0.3 | N 10, weight 1 | chosen |",
        "|---|---|---|---|---|",
    ]
    for label, by_setting in summary["means"].items():
        row = [by_setting[s] for s in (base, "10@0.3", "10@1", chosen)]
        lines.append(
            f"| {label} | " + " | ".join(f"{m['top1']:.3f} / {m['hit@5']:.3f}" for m in row) + " |"
        )
    if chosen != base:
        lines += [
            "",
            f"Test halves, N = {depth} at weight {weight} against no reranker (paired "
            "bootstrap, 95%):",
            "",
            "| cell | top-1 | hit@5 |",
            "|---|---|---|",
        ]
        for label, margin in summary["test_margins"].items():
            lines.append(
                f"| {label} | {format_margin(margin['top1'])} | {format_margin(margin['hit@5'])} |"
            )
    spent = report.get("cost")
    if chosen != base:
        lines += ["", verdict(summary, spent)]
    if spent:
        lines += [
            "",
            f"Cost at {spent['tools']:,} tools on one core ({spent['queries']} requests, N = "
            f"{spent['depth']}): search p50 {spent['search_ms']['p50']} ms / p99 "
            f"{spent['search_ms']['p99']} ms without the reranker, "
            f"{spent['reranked_search_ms']['p50']} ms / {spent['reranked_search_ms']['p99']} ms "
            f"with it; cold start {spent['cold_start_s']} s; {spent['rss_added_mib']} MiB more "
            "resident memory.",
        ]
    return "\n".join(lines)


def verdict(summary: dict[str, Any], spent: dict[str, Any] | None) -> str:
    """The rule of issue 35: the default only if it wins on the mean, loses nowhere beyond
    the interval, and keeps search p50 at 20k tools on one core within `DEFAULT_P50_MS`."""
    margins = [
        (label.removesuffix(" test"), figure, margin)
        for label, by_figure in summary["test_margins"].items()
        for figure, margin in by_figure.items()
    ]
    mean = float(np.mean([m["mean"] for _, _, m in margins]))
    wins = [f"{cell} {figure}" for cell, figure, m in margins if m["low"] > 0]
    losses = [f"{cell} {figure}" for cell, figure, m in margins if m["high"] < 0]
    p50 = None if spent is None else spent["reranked_search_ms"]["p50"]
    fast = p50 is not None and p50 <= DEFAULT_P50_MS
    default = mean > 0 and not losses and fast
    why = (
        "it is the default"
        if default
        else "it is not the default ("
        + "; ".join(
            reason
            for reason, failed in (
                ("no gain on the mean", mean <= 0),
                ("a loss beyond the interval", bool(losses)),
                (
                    f"search p50 {p50} ms over {DEFAULT_P50_MS} ms"
                    if p50 is not None
                    else "cost not measured",
                    not fast,
                ),
            )
            if failed
        )
        + ') and is served with `"rerank": true`'
    )
    return (
        f"Mean test margin {mean:+.4f}. Beyond the interval: gains "
        f"{', '.join(wins) or 'none'}; losses {', '.join(losses) or 'none'}. So {why}."
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.rerank")
    parser.add_argument("--reranker", type=Path, required=False, default=None)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--cost", action="store_true", help="measure search cost too")
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument(
        "--write-config",
        action="store_true",
        help="write the N and weight chosen on dev into the reranker folder's reranker.json",
    )
    args = parser.parse_args(argv)
    if args.table_only:
        report = json.loads(args.out.read_text("utf-8"))
    else:
        if args.reranker is None:
            parser.error("--reranker DIR is needed unless --table-only")
        report = measure(args)
        report["summary"] = summarise(report)
        if args.cost:
            report["cost"] = cost(args, int(report["summary"]["chosen"].split("@")[0]))
        args.out.write_text(json.dumps(packed(report), indent=1) + "\n", encoding="utf-8")
        if args.write_config:
            write_config(args.reranker, report["summary"]["chosen"])
    README.write_text(
        replace_between(README.read_text("utf-8"), START, END, markdown(report)), encoding="utf-8"
    )
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
