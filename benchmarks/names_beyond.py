"""`python -m benchmarks.names_beyond`: how many tools past the top k `search_tools` names.

A search answer shows the top k tools with their full schemas and then names the next N,
one line each (`router.names_after_k`, `router.name_line_chars`;
`router.server.listing.rendering.nearby_lines`): a model that sees the tool it meant there
asks for it by name. This ranks the people's requests and the public sets (MSC-Bench, BFCL,
MetaTool; at most `PER_HALF` seeded requests a half) at each set's own size, as the router
ranks them (`Retriever.search` with `more`: the top k are the same for every N), and reports
for each N of `NS`:

- hit@k: every gold tool among the k full schemas (the same for every N: today's answer);
- hit@(k+N): every gold tool shown, by schema or by name;
- tokens per search (cl100k, `router.accounting.tokens`): the answer's text for the k tools
  as `search_tools` renders it, and what the N name lines add to the text and to the
  structured content.

N is chosen on the dev halves: the largest N whose last step of 5 names finds at least
`MIN_GAIN_PER_100` more of the requests (mean over the dev cells) per 100 tokens it adds to
the text; the test halves then report it against N = 0 with paired intervals. Writes
`benchmarks/results/names-beyond.json` and the section of benchmarks/README.md between the
names-beyond markers.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.provenance import head_commit
from benchmarks.server_signal import people_sets, public_set
from benchmarks.suite.bootstrap import format_margin, paired_margin
from benchmarks.suite.readme import replace_between
from router.accounting.tokens import TokenCounter
from router.core.catalog import Catalog
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import load_embedder
from router.embedding.manifest import DEFAULT_MODEL
from router.evaluation.dataset import Query
from router.evaluation.metrics import resolve_gold
from router.retrieval.retriever import Retriever
from router.retrieval.types import ScoredTool
from router.server.listing.rendering import NEARBY, nearby_line, tool_lines

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "benchmarks" / "results" / "names-beyond.json"
README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- names-beyond:start -->", "<!-- names-beyond:end -->"
SCHEMA = "mcp-router.names-beyond/1"
K = 5
NS = (0, 5, 10, 15)
LINE_CHARS = 80
PER_HALF = 300
SEED = 35
MIN_GAIN_PER_100 = 0.01
"""A step of names is worth it while it finds one request in a hundred more for every 100
tokens it costs."""


def _per_query(
    retriever: Retriever, queries: Sequence[Query], counter: TokenCounter
) -> dict[str, list[float]]:
    """Per request: the rank past which every gold tool is shown (0 when one is not in the
    first K + max(NS)), the tokens of the K tools' text, and each N's name lines' tokens in
    the text and in the structured content."""
    resolved, _ = resolve_gold(retriever.catalog, list(queries))
    out: dict[str, list[float]] = {"reach": [], "schema_tokens": []}
    for n in NS:
        out[f"text+{n}"], out[f"json+{n}"] = [], []
    for item in resolved:
        found = retriever.search(item.query.text, k=K, more=max(NS))
        positions = [retriever.catalog.position(r.qualified_name) for r in found]
        firsts = [next((i for i, p in enumerate(positions, 1) if p in g), 0) for g in item.groups]
        out["reach"].append(0 if 0 in firsts else max(firsts))
        out["schema_tokens"].append(_count_lines(counter, _schema_lines(found[:K])))
        for n in NS:
            named = found[K : K + n]
            lines = ["", NEARBY, *(nearby_line(r, LINE_CHARS) for r in named)] if named else []
            out[f"text+{n}"].append(_count_lines(counter, lines))
            rows = [{"name": r.qualified_name, "description": _line(r)} for r in named]
            out[f"json+{n}"].append(counter.count_text(json.dumps({"nearby": rows})))
    return out


def _schema_lines(results: Sequence[ScoredTool]) -> list[str]:
    lines: list[str] = []
    for r in results:
        lines += ["", *tool_lines(r)]
    return lines


def _line(result: ScoredTool) -> str:
    return nearby_line(result, LINE_CHARS).split(" — ", 1)[1]


def _count_lines(counter: TokenCounter, lines: Sequence[str]) -> int:
    return counter.count_text("\n".join(lines)) if lines else 0


def measure(args: argparse.Namespace) -> dict[str, Any]:
    embedder = load_embedder(args.model, args.cache_dir)
    cache = EmbeddingCache(args.cache_dir or default_cache_dir())
    counter = TokenCounter()
    sets = people_sets()
    for name in ("msc_bench", "bfcl", "metatool"):
        sets[name] = public_set(args.data, name, args.per_half)
    cells: dict[str, Any] = {}
    for name, (query_set, halves) in sets.items():
        retriever, _ = Retriever.build(Catalog.from_specs(query_set.specs), embedder, cache)
        for split, queries in halves.items():
            cells[f"{name} {split}"] = {
                "set": name,
                "split": split,
                "tools": len(query_set.specs),
                "queries": len(queries),
                "per_query": _per_query(retriever, queries, counter),
            }
        print(f"{name}: done", file=sys.stderr)
    return {
        "schema": SCHEMA,
        "commit": head_commit(),
        "model": embedder.model_id,
        "k": K,
        "ns": list(NS),
        "line_chars": LINE_CHARS,
        "per_half": args.per_half,
        "cells": cells,
    }


def _hits(reach: Sequence[float], shown: int) -> list[float]:
    return [float(0 < r <= shown) for r in reach]


def summarise(report: dict[str, Any]) -> dict[str, Any]:
    """Each cell's means per N, the N chosen on dev, and its test margins against N = 0."""
    k, ns = report["k"], report["ns"]
    means: dict[str, Any] = {}
    for label, cell in report["cells"].items():
        rows = cell["per_query"]
        means[label] = {
            "hit@k": round(float(np.mean(_hits(rows["reach"], k))), 4),
            "schema_tokens": round(float(np.mean(rows["schema_tokens"])), 1),
            "by_n": {
                str(n): {
                    "hit@k+n": round(float(np.mean(_hits(rows["reach"], k + n))), 4),
                    "text_tokens": round(float(np.mean(rows[f"text+{n}"])), 1),
                    "json_tokens": round(float(np.mean(rows[f"json+{n}"])), 1),
                }
                for n in ns
            },
        }
    dev = [label for label, cell in report["cells"].items() if cell["split"] == "dev"]

    def dev_mean(n: int, figure: str) -> float:
        return float(np.mean([means[c]["by_n"][str(n)][figure] for c in dev]))

    chosen = ns[0]
    for before, n in itertools.pairwise(ns):
        cost = dev_mean(n, "text_tokens") - dev_mean(before, "text_tokens")
        gain = dev_mean(n, "hit@k+n") - dev_mean(before, "hit@k+n")
        if cost <= 0 or gain / cost * 100 < MIN_GAIN_PER_100:
            break
        chosen = n
    margins = {
        label: paired_margin(
            _hits(cell["per_query"]["reach"], k + chosen),
            _hits(cell["per_query"]["reach"], k),
            seed=SEED,
        )
        for label, cell in report["cells"].items()
        if cell["split"] == "test"
    }
    return {"means": means, "chosen": chosen, "test_margins": margins}


def markdown(report: dict[str, Any]) -> str:
    """The section of benchmarks/README.md, from the result file alone."""
    summary, k, ns = report["summary"], report["k"], report["ns"]
    chosen = summary["chosen"]
    lines = [
        f"Model `{report['model']}` at each set's own size, k = {k}, lines of "
        f"{report['line_chars']} characters, at most {report['per_half']} requests a public "
        f"half, commit `{report['commit']}`. hit@k: every gold tool among the k full schemas "
        "(today's answer, the same for every N); hit@k+N: shown by schema or by name. Tokens "
        "(cl100k, mean per search): the k tools' text, then what the N name lines add to the "
        f"text / to the structured content. Chosen on dev (a step of 5 names must find "
        f"{MIN_GAIN_PER_100:g} of the requests per 100 text tokens): "
        f"**N = {chosen}** (`router.names_after_k`).",
        "",
        "| cell | tools | requests | hit@k | k tools' tokens | "
        + " | ".join(f"N = {n}: hit@k+N, +tokens" for n in ns if n)
        + " |",
        "|---|---|---|---|---|" + "---|" * len([n for n in ns if n]),
    ]
    for label, cell in report["cells"].items():
        mean = summary["means"][label]
        figures = [
            f"{mean['by_n'][str(n)]['hit@k+n']:.3f}, +{mean['by_n'][str(n)]['text_tokens']:.0f}"
            f" / +{mean['by_n'][str(n)]['json_tokens']:.0f}"
            for n in ns
            if n
        ]
        lines.append(
            f"| {label} | {cell['tools']} | {cell['queries']} | {mean['hit@k']:.3f} | "
            f"{mean['schema_tokens']:.0f} | " + " | ".join(figures) + " |"
        )
    if chosen:
        lines += [
            "",
            f"Test halves, hit@k+{chosen} (names) against hit@k (schemas alone), paired "
            "bootstrap, 95%:",
            "",
            "| cell | gain |",
            "|---|---|",
        ]
        for label, margin in summary["test_margins"].items():
            lines.append(f"| {label} | {format_margin(margin)} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.names_beyond")
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--per-half", type=int, default=PER_HALF)
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
