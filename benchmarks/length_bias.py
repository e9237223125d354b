"""`python -m benchmarks.length_bias`: does a long description win requests that are not its
own, and does a length correction help? (issue 50, item 4)

Both people's sets and the public sets (MSC-Bench, BFCL, MetaTool; at most `PER_HALF`
seeded requests a half) are ranked by the router's default retrieval with the shipped model,
at each set's own size and with 20k distractors from the pools (`--sizes`).

**The diagnosis**, with the default ranking: for each request whose first tool is wrong, is
that tool's description longer than the gold tool's (the best-ranked gold tool, else its
first)? Without a length effect that share would match the share of the catalog's other
tools that are longer than the gold (`base rate`). Beside it: the median log2 ratio of the
wrong tool's description length to the gold's, and top-1 for requests whose gold description
is shorter and longer than the catalog's median.

**The corrections**, each a setting beside the default (`base`, BM25 `b` = 0.75):

- `b=X`: BM25's field-length normalisation `b` (`Ranking.bm25_b`): a long text's term counts
  are divided by its length relative to the mean (1: fully);
- `prior=G`: a length-aware fusion: each of the first `PRIOR_DEPTH` tools loses `G` times the
  best fused score times log2 of its description's length over the catalog's median
  (smoothed by `SMOOTH` characters, clipped to [-2, 2]), so a long tool pays and a terse one
  gains. The prior re-orders the default's first `PRIOR_DEPTH` (a search for that many, whose
  one-server cap is `Ranking.server_share` of 30, not of 5).

The setting is chosen on the dev halves (the best mean of top-1 and hit@5 over every dev
cell; ties to the default), and the test halves report it against the default with paired
bootstrap intervals. It is adopted only if the dev halves choose another setting, no test
cell gets worse beyond its interval and the test margins' mean is not negative. A run per
size (`--sizes 0`, `--sizes 20000`, each with its own `--out`) can be merged with
`--combine`. Writes `benchmarks/results/length-bias.json`
and the section of benchmarks/README.md between the length-bias markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import head_commit
from benchmarks.server_signal import SEED, people_sets, public_set, summary_of
from benchmarks.suite import data
from benchmarks.suite.bootstrap import format_margin, paired_margin
from benchmarks.suite.readme import replace_between
from router.core.catalog import Catalog, ToolSpec
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import load_embedder
from router.embedding.manifest import DEFAULT_MODEL
from router.evaluation.dataset import Query
from router.evaluation.metrics import ResolvedQuery, resolve_gold
from router.retrieval.retriever import Retriever
from router.retrieval.types import DEFAULT, ScoredTool

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "length-bias.json"
README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- length-bias:start -->", "<!-- length-bias:end -->"
SCHEMA = "mcp-router.length-bias/1"
K = 5
PER_HALF = 300
SIZES = (0, 20000)
BS = (0.9, 1.0)
PRIORS = (0.03, 0.1)
PRIOR_DEPTH = 30
SMOOTH = 50
FIGURES = ("top1", "hit@5")
BASE = "base"


def settings() -> list[str]:
    return [BASE, *(f"b={b:g}" for b in BS), *(f"prior={g:g}" for g in PRIORS)]


def _length(spec_description: str) -> int:
    return len(spec_description.strip())


def with_prior(
    found: Sequence[ScoredTool],
    lengths: np.ndarray,
    median: float,
    weight: float,
    positions: list[int],
) -> list[int]:
    """The positions of `found` re-ordered by the length prior (see the module's text)."""
    if not found:
        return []
    best = max(abs(r.score) for r in found) or 1.0
    scored = []
    for order, (result, position) in enumerate(zip(found, positions, strict=True)):
        ratio = math.log2((lengths[position] + SMOOTH) / (median + SMOOTH))
        scored.append((result.score - weight * best * max(-2.0, min(2.0, ratio)), -order, position))
    scored.sort(reverse=True)
    return [position for _, _, position in scored]


def _gold_length(item: ResolvedQuery, ranked: Sequence[int], lengths: np.ndarray) -> int:
    gold = set().union(*item.groups)
    for position in ranked:
        if position in gold:
            return int(lengths[position])
    return int(lengths[min(next(iter(g)) for g in item.groups)]) if gold else 0


def _figures(item: ResolvedQuery, ranked: Sequence[int]) -> tuple[float, float]:
    top1 = float(bool(ranked) and any(ranked[0] in g for g in item.groups))
    hit = float(all(any(p in g for p in ranked[:K]) for g in item.groups))
    return top1, hit


def per_query(
    retrievers: dict[str, Retriever], queries: Sequence[Query]
) -> tuple[dict[str, dict[str, list[float]]], dict[str, list[float]]]:
    """Each setting's per-query top-1, hit@5 and `long_wrong` (the first tool is wrong and
    its description longer than the gold's), and the default's length diagnostics."""
    base = retrievers[BASE]
    catalog = base.catalog
    lengths = np.array([_length(r.description) for r in catalog.records], dtype=np.float64)
    median = float(np.median(lengths))
    resolved, _ = resolve_gold(catalog, list(queries))
    out: dict[str, dict[str, list[float]]] = {
        s: {"top1": [], "hit@5": [], "long_wrong": []} for s in settings()
    }
    diagnostics: dict[str, list[float]] = {
        "gold_len": [],
        "top1_len": [],
        "base_rate": [],
        "gold_rank": [],
        "ms": [],
    }
    for item in resolved:
        vectors = base.embed_query(item.query.text)
        started = time.perf_counter()
        first = base.search(item.query.text, k=K, query_vectors=vectors)
        diagnostics["ms"].append((time.perf_counter() - started) * 1000)
        found = base.search(item.query.text, k=PRIOR_DEPTH, query_vectors=vectors)
        deeper = [catalog.position(r.qualified_name) for r in found]
        base_positions = [catalog.position(r.qualified_name) for r in first]
        gold_len = _gold_length(item, deeper, lengths)
        ranked_by: dict[str, list[int]] = {BASE: base_positions}
        for setting, retriever in retrievers.items():
            if setting != BASE:
                hits = retriever.search(item.query.text, k=K, query_vectors=vectors)
                ranked_by[setting] = [catalog.position(r.qualified_name) for r in hits]
        for weight in PRIORS:
            ranked_by[f"prior={weight:g}"] = with_prior(found, lengths, median, weight, deeper)
        for setting, ranked in ranked_by.items():
            top1, hit = _figures(item, ranked)
            out[setting]["top1"].append(top1)
            out[setting]["hit@5"].append(hit)
            longer = bool(ranked) and not top1 and lengths[ranked[0]] > gold_len
            out[setting]["long_wrong"].append(float(longer))
        gold = set().union(*item.groups)
        others = np.delete(lengths, sorted(gold))
        diagnostics["gold_len"].append(gold_len)
        diagnostics["top1_len"].append(float(lengths[base_positions[0]]) if found else 0.0)
        diagnostics["base_rate"].append(float(np.mean(others > gold_len)))
        rank = next((i for i, p in enumerate(deeper, 1) if p in gold), 0)
        diagnostics["gold_rank"].append(float(rank))
    diagnostics["catalog_median"] = [median]
    return out, diagnostics


Cell = tuple[str, int, int, dict[str, Retriever], dict[str, list[Query]]]


def cells(args: argparse.Namespace) -> Iterator[Cell]:
    """Each set at each size, with a retriever per `b` (the dense vectors from the cache)."""
    embedder = load_embedder(args.model, args.cache_dir)
    cache = EmbeddingCache(args.cache_dir or default_cache_dir())
    pool = data.load_pool(args.data)
    sets = people_sets()
    for name in ("msc_bench", "bfcl", "metatool"):
        sets[name] = public_set(args.data, name, args.per_half)
    for name, (query_set, halves) in sets.items():
        order = data.distractor_order(pool, data.copies_of(pool, query_set), 0)
        for size in args.sizes:
            specs: Sequence[ToolSpec] = data.scaled_specs(query_set, order, size)
            catalog = Catalog.from_specs(specs)
            retrievers = {BASE: Retriever.build(catalog, embedder, cache)[0]}
            for b in BS:
                ranking = dataclasses.replace(DEFAULT, bm25_b=b)
                retrievers[f"b={b:g}"] = Retriever.build(catalog, embedder, cache, ranking=ranking)[
                    0
                ]
            yield name, size, len(specs), retrievers, halves
            print(f"{name} +{size}: ranked", file=sys.stderr, flush=True)


def measure(args: argparse.Namespace) -> dict[str, Any]:
    measured: dict[str, Any] = {}
    for name, size, tools, retrievers, halves in cells(args):
        for split, queries in halves.items():
            rows, diagnostics = per_query(retrievers, queries)
            measured[f"{name} +{size} {split}"] = {
                "set": name,
                "size": size,
                "split": split,
                "tools": tools,
                "queries": len(queries),
                "per_query": rows,
                "diagnostics": diagnostics,
            }
    return {
        "schema": SCHEMA,
        "commit": head_commit(),
        "model": args.model,
        "k": K,
        "per_half": args.per_half,
        "settings": settings(),
        "prior": {"depth": PRIOR_DEPTH, "smooth_chars": SMOOTH, "clip": 2.0},
        "cells": measured,
    }


def diagnosis(cell: dict[str, Any]) -> dict[str, Any]:
    """The default's length figures for one cell."""
    rows, diag = cell["per_query"][BASE], cell["diagnostics"]
    wrong = [i for i, top1 in enumerate(rows["top1"]) if not top1 and diag["top1_len"][i] > 0]
    longer = [rows["long_wrong"][i] for i in wrong]
    ratios = [math.log2((diag["top1_len"][i] + 1) / (diag["gold_len"][i] + 1)) for i in wrong]
    median = diag["catalog_median"][0]
    short = [t for t, g in zip(rows["top1"], diag["gold_len"], strict=True) if g <= median]
    long_ = [t for t, g in zip(rows["top1"], diag["gold_len"], strict=True) if g > median]
    return {
        "wrong": len(wrong),
        "longer_share": round(float(np.mean(longer)), 4) if longer else 0.0,
        "base_rate": round(float(np.mean([diag["base_rate"][i] for i in wrong])), 4)
        if wrong
        else 0.0,
        "median_log2_ratio": round(float(np.median(ratios)), 3) if ratios else 0.0,
        "top1_short_gold": [round(float(np.mean(short)), 4) if short else 0.0, len(short)],
        "top1_long_gold": [round(float(np.mean(long_)), 4) if long_ else 0.0, len(long_)],
        "search_ms_p50": round(float(np.percentile(diag["ms"], 50)), 2),
    }


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    order = report["settings"]
    summary = summary_of(report, BASE, _prefer_default(order))
    summary["diagnosis"] = {label: diagnosis(cell) for label, cell in report["cells"].items()}
    summary["long_wrong"] = {
        label: {
            s: round(float(np.mean(rows["long_wrong"])), 4) for s, rows in cell["per_query"].items()
        }
        for label, cell in report["cells"].items()
    }
    margins = summary["test_margins"]
    summary["adopted"] = (
        summary["chosen"] != BASE
        and all(m[f]["high"] >= 0 for m in margins.values() for f in FIGURES)
        and float(np.mean([m[f]["mean"] for m in margins.values() for f in FIGURES])) >= 0
    )
    summary["test_margins_all"] = {
        setting: _test_margins(report, setting) for setting in order if setting != BASE
    }
    return summary


def _prefer_default(order: Sequence[str]) -> Callable[[str], int]:
    """Ties go to the default, then to the earlier setting."""
    return lambda setting: -order.index(setting)


def markdown(report: dict[str, Any]) -> str:
    summary = report["summary"]
    chosen, names = summary["chosen"], report["settings"]
    sizes = sorted({cell["size"] for cell in report["cells"].values()})
    lines = [
        f"Model `{report['model']}`, k = {report['k']}, commit `{report['commit']}`, at most "
        f"{report['per_half']} requests a public half, sizes "
        + ", ".join(f"+{s:,}" for s in sizes)
        + ". **The default's first tool when it is wrong** (descriptions in characters; p50: the "
        "default's search as this run timed it on the shared 2 cores while other work ran, not "
        "a latency figure: `benchmarks/perf` has those):",
        "",
        "| cell | wrong top-1 | longer than the gold | base rate | median log2(wrong / gold) "
        "| top-1, gold shorter than median | top-1, gold longer | p50 ms |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for label, d in summary["diagnosis"].items():
        lines.append(
            f"| {label} | {d['wrong']} | {d['longer_share']:.3f} | {d['base_rate']:.3f} "
            f"| {d['median_log2_ratio']:+.2f} | {d['top1_short_gold'][0]:.3f} "
            f"({d['top1_short_gold'][1]}) | {d['top1_long_gold'][0]:.3f} "
            f"({d['top1_long_gold'][1]}) | {d['search_ms_p50']:.1f} |"
        )
    lines += [
        "",
        "Mean of top-1 and hit@5 over the dev cells, by setting: "
        + ", ".join(f"{s}: {summary['dev_score'][s]:.4f}" for s in names)
        + f". Chosen on dev: **{chosen}**"
        + (
            "; adopted (no test cell worse beyond its interval)."
            if summary["adopted"]
            else ("; not adopted." if chosen != BASE else "; the default stays.")
        ),
        "",
        "| cell | " + " | ".join(f"top-1 / hit@5 / long-wrong, {s}" for s in names) + " |",
        "|---|" + "---|" * len(names),
    ]
    for label, by_setting in summary["means"].items():
        long_wrong = summary["long_wrong"][label]
        row = [
            f"{by_setting[s]['top1']:.3f} / {by_setting[s]['hit@5']:.3f} / {long_wrong[s]:.3f}"
            for s in names
        ]
        lines.append(f"| {label} | " + " | ".join(row) + " |")
    others = [s for s in names if s != BASE]
    lines += [
        "",
        "Test halves, each correction against the default, top-1 and hit@5 (paired bootstrap, "
        "95%):",
        "",
        "| cell | " + " | ".join(f"{s}: top-1 | {s}: hit@5" for s in others) + " |",
        "|---|" + "---|---|" * len(others),
    ]
    test_labels = next(iter(summary["test_margins_all"].values()))
    for label in test_labels:
        cells = []
        for setting in others:
            margin = summary["test_margins_all"][setting][label]
            cells += [format_margin(margin["top1"]), format_margin(margin["hit@5"])]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _test_margins(report: dict[str, Any], setting: str) -> dict[str, Any]:
    return {
        label: {
            f: paired_margin(cell["per_query"][setting][f], cell["per_query"][BASE][f], seed=SEED)
            for f in FIGURES
        }
        for label, cell in report["cells"].items()
        if cell["split"] == "test"
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.length_bias")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--per-half", type=int, default=PER_HALF)
    parser.add_argument(
        "--sizes", type=lambda t: tuple(int(s) for s in t.split(",")), default=SIZES
    )
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument("--table-only", action="store_true")
    parser.add_argument(
        "--combine", type=Path, nargs="+", help="merge these runs' cells (one size each) into --out"
    )
    args = parser.parse_args(argv)
    if args.table_only:
        report = json.loads(args.out.read_text("utf-8"))
    elif args.combine:
        runs = [json.loads(path.read_text("utf-8")) for path in args.combine]
        report = runs[0] | {"cells": {k: v for run in runs for k, v in run["cells"].items()}}
        report["summary"] = summarise(report)
        args.out.write_text(json.dumps(report) + "\n", "utf-8")
    else:
        report = measure(args)
        report["summary"] = summarise(report)
        args.out.write_text(json.dumps(report) + "\n", "utf-8")
    text = README.read_text("utf-8")
    README.write_text(replace_between(text, START, END, markdown(report)), "utf-8")
    print(markdown(report))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
