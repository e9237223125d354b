"""`python -m benchmarks.redescription`: what a user's redescription (a tool transform's
`description`, `router.shaping.transforms`) does for retrieval, measured.

The public sets' worst-described tools (BFCL's tools of at most 6 words, MetaTool's of at most
8, that some query asks for; MSC-Bench has none that short, its descriptions were rewritten
by Smithery) were redescribed the way a user fixes one in their config: from the tool's name,
its text, its parameters and what the product is, never from the queries
(`benchmarks/data/redescriptions/transforms.json`, each set's `tools` sections by server).

Each set is ranked with the shipped model and ranking at each size of `--distractors` (its
own size, 0, by default; 20000 adds that many pool tools), once as the upstreams describe
their tools and once through the
transforms (the router's own `Transforms.apply`, as a served index reads them). Reported:
top-1 and hit@5 (every group in the top 5) over the requests that ask for a redescribed
tool, and over every request of the half (the other tools' requests must not lose), on the
test halves, with paired bootstrap intervals; the dev halves are shown too. Nothing is tuned
here: the descriptions were written once.

Writes `benchmarks/results/redescription.json` and the section of benchmarks/README.md
between the redescription markers.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import head_commit
from benchmarks.suite import data
from benchmarks.suite.bootstrap import format_margin, paired_margin
from benchmarks.suite.readme import replace_between
from router.config.shaping import ToolTransform
from router.core.catalog import Catalog, ToolSpec
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import load_embedder
from router.embedding.manifest import DEFAULT_MODEL
from router.evaluation.dataset import Query
from router.evaluation.metrics import ResolvedQuery, resolve_gold
from router.retrieval.retriever import Retriever
from router.shaping.transforms import Transforms

ROOT = Path(__file__).resolve().parents[1]
TRANSFORMS = ROOT / "benchmarks" / "data" / "redescriptions" / "transforms.json"
OUT = ROOT / "benchmarks" / "results" / "redescription.json"
README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- redescription:start -->", "<!-- redescription:end -->"
SETS = ("bfcl", "metatool")
DISTRACTORS = (0,)
PER_HALF = 600
"""Requests of a half drawn for the 'every request' rows (all that ask for a redescribed
tool are kept)."""
SEED = 37
K = 5
FIGURES = ("top1", "hit@5")


def transforms_of(name: str) -> Transforms:
    """One set's redescriptions, as the config's `tools` sections would give them."""
    raw = json.loads(TRANSFORMS.read_text("utf-8"))[name]
    return Transforms(
        {
            server: [(tool, ToolTransform.model_validate(entry)) for tool, entry in tools.items()]
            for server, tools in raw.items()
        }
    )


def redescribed(transforms: Transforms, specs: Sequence[ToolSpec]) -> frozenset[tuple[str, str]]:
    return frozenset(
        (s.server, s.name) for s, t in zip(specs, transforms.apply(specs), strict=True) if s != t
    )


def figures(retriever: Retriever, resolved: Sequence[ResolvedQuery]) -> dict[str, list[float]]:
    top1, hit = [], []
    for item in resolved:
        found = retriever.search(item.query.text, k=K)
        positions = [retriever.catalog.position(r.qualified_name) for r in found]
        top1.append(float(bool(positions) and any(positions[0] in g for g in item.groups)))
        hit.append(float(all(any(p in g for p in positions) for g in item.groups)))
    return {"top1": top1, "hit@5": hit}


def halves(name: str, queries: Sequence[Query], touched: frozenset[tuple[str, str]]) -> Any:
    """Per half: the requests asking for a redescribed tool, and a sample of every request."""
    out: dict[str, dict[str, list[Query]]] = {}
    for split in ("dev", "test"):
        mine = [q for q in queries if data.half(name, q.id) == split]
        asking = [q for q in mine if any(k in touched for g in q.gold_groups for k in g)]
        out[split] = {"redescribed": asking, "every": list(data.sample(mine, PER_HALF, SEED))}
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    embedder: Embedder = load_embedder(args.model, args.cache_dir)
    cache = EmbeddingCache(args.cache_dir or default_cache_dir())
    pool = data.load_pool(args.data)
    cells: dict[str, Any] = {}
    for name in SETS:
        query_set = data.load_set(args.data, name, max_queries=None, scale_queries=None, seed=0)
        transforms = transforms_of(name)
        touched = redescribed(transforms, query_set.specs)
        order = data.distractor_order(pool, data.copies_of(pool, query_set), 0)
        by_half = halves(name, query_set.queries, touched)
        for size in args.distractors:
            specs = data.scaled_specs(query_set, order, size)
            ranked = {}
            for label, shaped in (("as listed", specs), ("redescribed", transforms.apply(specs))):
                retriever, _ = Retriever.build(Catalog.from_specs(shaped), embedder, cache)
                ranked[label] = retriever
            for split, groups in by_half.items():
                for subset, queries in groups.items():
                    rows = {}
                    for label, retriever in ranked.items():
                        resolved, _ = resolve_gold(retriever.catalog, queries)
                        rows[label] = figures(retriever, resolved)
                    cells[f"{name} +{size} {split} {subset}"] = {
                        "set": name,
                        "size": size,
                        "split": split,
                        "subset": subset,
                        "tools": len(specs),
                        "redescribed_tools": len(touched),
                        "queries": len(queries),
                        "per_query": rows,
                    }
            print(f"{name} +{size}: done", file=sys.stderr)
    return {
        "schema": "mcp-router.redescription/1",
        "commit": head_commit(),
        "model": embedder.model_id,
        "k": K,
        "cells": cells,
    }


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    out = {}
    for label, cell in report["cells"].items():
        rows = cell["per_query"]
        out[label] = {
            "means": {
                setting: {f: round(float(np.mean(rows[setting][f] or [0.0])), 4) for f in FIGURES}
                for setting in rows
            },
            "margin": {
                f: paired_margin(rows["redescribed"][f], rows["as listed"][f], seed=SEED)
                for f in FIGURES
            },
        }
    return out


def markdown(report: dict[str, Any]) -> str:
    summary = report["summary"]
    lines = [
        f"Model `{report['model']}`, k = {report['k']}, commit `{report['commit']}`. "
        "Top-1 / hit@5 as the upstreams describe the tools, then redescribed; the margin is "
        "redescribed minus as listed (paired bootstrap, 95%).",
        "",
        "| cell | requests | as listed | redescribed | top-1 margin | hit@5 margin |",
        "|---|---|---|---|---|---|",
    ]
    ordered = sorted(report["cells"], key=lambda c: report["cells"][c]["split"] != "test")
    for label in ordered:
        cell, row = report["cells"][label], summary[label]
        means = row["means"]
        lines.append(
            f"| {label} | {cell['queries']} "
            f"| {means['as listed']['top1']:.3f} / {means['as listed']['hit@5']:.3f} "
            f"| {means['redescribed']['top1']:.3f} / {means['redescribed']['hit@5']:.3f} "
            f"| {format_margin(row['margin']['top1'])} | {format_margin(row['margin']['hit@5'])} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.redescription")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
    parser.add_argument(
        "--distractors", type=int, nargs="+", default=list(DISTRACTORS), help="pool tools added"
    )
    parser.add_argument("--table-only", action="store_true")
    args = parser.parse_args(argv)
    if args.table_only:
        report = json.loads(args.out.read_text("utf-8"))
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
