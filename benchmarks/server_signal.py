"""`python -m benchmarks.server_signal`: whole servers as a ranking signal, measured.

`Ranking.server_bonus` lifts the tools of the servers nearest the request as wholes
(`router.retrieval.server_signal`: each server the centroid of its tools' vectors, blended
with what it says about itself where the catalog has it). This ranks both people's sets
and the public sets (MSC-Bench, BFCL, MetaTool; at most `PER_HALF` requests a half) with the
shipped model at each set's own size and with 20k distractors from the pools, for each
weight of `WEIGHTS`. The weight is chosen on the dev halves (the best mean of top-1 and
hit@5 over every dev cell) and the test halves report it against no server signal, with
paired bootstrap intervals. The shipped model was trained on the public sets' dev halves,
never on the people's requests: those are the cleanest dev reading.

Writes `benchmarks/results/server-signal.json` and the section of benchmarks/README.md
between the server-signal markers.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.peoples_requests.second import DATA as PEOPLE_2
from benchmarks.peoples_requests.split import DATA as PEOPLE
from benchmarks.provenance import head_commit
from benchmarks.suite import data
from benchmarks.suite.bootstrap import format_margin, paired_margin
from benchmarks.suite.readme import replace_between
from router.core.catalog import Catalog, ToolSpec
from router.embedding.base import Embedder
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import load_embedder
from router.embedding.manifest import DEFAULT_MODEL
from router.evaluation.dataset import Query, load_queries
from router.evaluation.metrics import resolve_gold
from router.retrieval.retriever import Retriever
from router.retrieval.types import DEFAULT

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "server-signal.json"
README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- server-signal:start -->", "<!-- server-signal:end -->"
WEIGHTS = (0.0, 0.05, 0.1, 0.2)
SIZES = (0, 20000)
PER_HALF = 600
SEED = 35
K = 5
FIGURES = ("top1", "hit@5")


def people_set(folder: Path = PEOPLE) -> tuple[data.QuerySet, dict[str, list[Query]]]:
    """A people's set (the first, or `PEOPLE_2`: issue 50's second) as one set over its
    catalog, and its dev and test halves."""
    specs = tuple(
        data.spec_of(json.loads(line))
        for line in (folder / "catalog.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    )
    halves = {split: load_queries(folder / f"{split}.jsonl")[0] for split in ("dev", "test")}
    every = tuple(q for split in halves.values() for q in split)
    return data.QuerySet(folder.name, specs, every, every, ()), halves


def people_sets() -> dict[str, tuple[data.QuerySet, dict[str, list[Query]]]]:
    """Both people's sets, by name: `peoples_requests` and `peoples_requests_2`."""
    return {folder.name: people_set(folder) for folder in (PEOPLE, PEOPLE_2)}


def public_set(
    root: Path, name: str, per_half: int = PER_HALF
) -> tuple[data.QuerySet, dict[str, list[Query]]]:
    """A public set, and at most `per_half` seeded requests of each of its halves."""
    query_set = data.load_set(root, name, max_queries=None, scale_queries=None, seed=0)
    halves = {
        split: list(
            data.sample(
                [q for q in query_set.queries if data.half(name, q.id) == split], per_half, SEED
            )
        )
        for split in ("dev", "test")
    }
    return query_set, halves


def _per_query(
    retriever: Retriever, queries: Sequence[Query], weights: Sequence[float]
) -> dict[str, dict[str, list[float]]]:
    """Each weight's per-query top-1 and hit@5 (every group in the top K)."""
    resolved, _ = resolve_gold(retriever.catalog, list(queries))
    vectors = [retriever.embed_query(item.query.text) for item in resolved]
    out: dict[str, dict[str, list[float]]] = {}
    for weight in weights:
        ranker = retriever.with_ranking(dataclasses.replace(DEFAULT, server_bonus=weight))
        top1, hit = [], []
        for item, row in zip(resolved, vectors, strict=True):
            found = ranker.search(item.query.text, k=K, query_vectors=row)
            positions = [retriever.catalog.position(r.qualified_name) for r in found]
            top1.append(float(bool(positions) and any(positions[0] in g for g in item.groups)))
            hit.append(float(all(any(p in g for p in positions) for g in item.groups)))
        out[f"{weight:g}"] = {"top1": top1, "hit@5": hit}
    return out


Cell = tuple[str, int, int, Retriever, dict[str, list[Query]]]
"""A set at one size: its name, the distractors added, its tools, a retriever over them, and
its dev and test halves."""


def ranked_cells(
    args: argparse.Namespace, embedder: Embedder, per_half: int = PER_HALF
) -> Iterator[Cell]:
    """The people's requests and the public sets, each at each size of `SIZES`, ranked with
    `embedder` (at most `per_half` requests a public half)."""
    cache = EmbeddingCache(args.cache_dir or default_cache_dir())
    pool = data.load_pool(args.data)
    sets = people_sets()
    for name in ("msc_bench", "bfcl", "metatool"):
        sets[name] = public_set(args.data, name, per_half)
    for name, (query_set, halves) in sets.items():
        order = data.distractor_order(pool, data.copies_of(pool, query_set), 0)
        for size in SIZES:
            specs: Sequence[ToolSpec] = data.scaled_specs(query_set, order, size)
            retriever, _ = Retriever.build(Catalog.from_specs(specs), embedder, cache)
            yield name, size, len(specs), retriever, halves
            print(f"{name} +{size}: done", file=sys.stderr)


def measured_cells(
    cells: Iterator[Cell],
    per_query: Callable[[str, Retriever, Sequence[Query]], dict[str, dict[str, list[float]]]],
) -> dict[str, Any]:
    """Each cell's halves, labelled `set +size split`, with `per_query(set, retriever,
    queries)`: each setting's per-query figures."""
    measured: dict[str, Any] = {}
    for name, size, tools, retriever, halves in cells:
        for split, queries in halves.items():
            measured[f"{name} +{size} {split}"] = {
                "set": name,
                "size": size,
                "split": split,
                "tools": tools,
                "queries": len(queries),
                "per_query": per_query(name, retriever, queries),
            }
    return measured


def measure(args: argparse.Namespace, weights: Sequence[float] = WEIGHTS) -> dict[str, Any]:
    embedder = load_embedder(args.model, args.cache_dir)
    measured = measured_cells(
        ranked_cells(args, embedder),
        lambda _, retriever, queries: _per_query(retriever, queries, weights),
    )
    return {
        "schema": "mcp-router.server-signal/1",
        "commit": head_commit(),
        "model": embedder.model_id,
        "weights": list(weights),
        "k": K,
        "cells": measured,
    }


def summary_of(report: dict[str, Any], base: str, cheaper: Callable[[str], Any]) -> dict[str, Any]:
    """Means per cell and setting, the setting chosen on dev (the best mean of top-1 and
    hit@5 over every dev cell; ties to the greatest `cheaper`), and its test margins against
    `base`."""
    means: dict[str, dict[str, dict[str, float]]] = {}
    for label, cell in report["cells"].items():
        means[label] = {
            setting: {f: round(float(np.mean(rows[f])), 4) for f in FIGURES}
            for setting, rows in cell["per_query"].items()
        }
    dev = [label for label, cell in report["cells"].items() if cell["split"] == "dev"]
    settings = list(next(iter(report["cells"].values()))["per_query"])
    score = {
        s: round(float(np.mean([np.mean([means[c][s][f] for f in FIGURES]) for c in dev])), 4)
        for s in settings
    }
    chosen = max(score, key=lambda s: (score[s], cheaper(s)))
    margins = {
        label: {
            f: paired_margin(cell["per_query"][chosen][f], cell["per_query"][base][f], seed=SEED)
            for f in FIGURES
        }
        for label, cell in report["cells"].items()
        if cell["split"] == "test"
    }
    return {
        "means": means,
        "dev_score": score,
        "chosen": chosen,
        "base": base,
        "test_margins": margins,
    }


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    """Means per cell and weight, the weight chosen on dev (ties to the smallest), and its
    test margins against no server signal."""
    return summary_of(report, "0", lambda weight: -float(weight))


def markdown(report: dict[str, Any]) -> str:
    summary = report["summary"]
    chosen, weights = summary["chosen"], [f"{w:g}" for w in report["weights"]]
    lines = [
        f"Model `{report['model']}`, k = {report['k']}, commit `{report['commit']}`. Mean of "
        "top-1 and hit@5 over the dev cells, by weight: "
        + ", ".join(f"{w}: {summary['dev_score'][w]:.4f}" for w in weights)
        + f". Chosen on dev: **{chosen}**.",
        "",
        "| cell | " + " | ".join(f"top-1 / hit@5 at {w}" for w in weights) + " |",
        "|---|" + "---|" * len(weights),
    ]
    for label, by_weight in summary["means"].items():
        cells = [f"{by_weight[w]['top1']:.3f} / {by_weight[w]['hit@5']:.3f}" for w in weights]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
    if chosen != "0":
        lines += [
            "",
            f"Test halves, {chosen} against no server signal (paired bootstrap, 95%):",
            "",
            "| cell | top-1 | hit@5 |",
            "|---|---|---|",
        ]
        for label, margin in summary["test_margins"].items():
            lines.append(
                f"| {label} | {format_margin(margin['top1'])} | {format_margin(margin['hit@5'])} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.server_signal")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=OUT)
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
