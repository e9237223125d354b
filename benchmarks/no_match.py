"""`python -m benchmarks.no_match`: the floor below which `search_tools` says nothing fits,
calibrated on dev halves, and how often it is wrong on test halves.

A search says that no tool matches well when the best cosine among its results is below the
model's floor (`router.retrieval.fit`). Two kinds of request measure that:

- requests that have a gold tool: the people's-requests set (on the example servers and
  the others it was written on) and the public sets MSC-Bench, BFCL and MetaTool, each
  searched in its own catalog. Flagging one of these is a false alarm; it is counted over
  every request, and over those whose gold is in the top 5 (there the search did find it);
- requests that have none: MSC-Bench's infeasible requests ("pause the TV"), searched in
  MSC-Bench's catalog. Flagging one of these is right.

The floor chosen is the highest at which, on every dev half, at most `MAX_FALSE_ALARM` of the
requests whose gold is in the top 5 are flagged: a weak answer still lists its candidates,
but it tells the model to doubt them, so it must be rare where they are right. Every figure
is then reported on the test halves, which never choose anything. Writes
`benchmarks/results/no-match.json`; `--write-manifest` puts the floor in
models/manifest.json as the model's `match_floor`.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.peoples_requests.split import DATA as PEOPLE
from benchmarks.provenance import head_commit
from benchmarks.suite.data import half, sample
from benchmarks.suite.readme import replace_between
from router.cli.indexing import read_catalog
from router.embedding.cache import EmbeddingCache, default_cache_dir
from router.embedding.loading import load_embedder
from router.embedding.manifest import DEFAULT_MODEL, known_models
from router.evaluation.dataset import OnError, Query, load_queries
from router.evaluation.metrics import resolve_gold
from router.retrieval.fit import judge
from router.retrieval.retriever import Retriever

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "no-match.json"
MANIFEST = ROOT / "models" / "manifest.json"
README = ROOT / "benchmarks" / "README.md"
START, END = "<!-- no-match:start -->", "<!-- no-match:end -->"
SCHEMA = "mcp-router.no-match/1"
K = 5
MAX_FALSE_ALARM = 0.10
PER_SET = 1000
"""Requests per half of a public set at most (a fixed-seed sample: MetaTool has 10k)."""
SEED = 35
FLOORS = [round(0.1 + 0.005 * step, 3) for step in range(81)]  # 0.100 to 0.500
SHOWN_UP_TO = 0.4
"""The README's sweep stops here (the result file has it all)."""
GOLD_SETS = ("msc_bench", "bfcl", "metatool")
INFEASIBLE = "msc_bench/queries_infeasible.jsonl"


@dataclass(frozen=True, slots=True)
class Searched:
    """One request's best cosine and whether its gold (if any) was in the top K."""

    best: float
    found: bool


def _infeasible(path: Path) -> list[tuple[str, str]]:
    """(id, request) of each request that has no tool (their gold is empty by design)."""
    rows = [json.loads(line) for line in path.read_text("utf-8").splitlines() if line.strip()]
    return [(str(row["id"]), str(row["query"])) for row in rows]


def _search(retriever: Retriever, text: str, gold: frozenset[int]) -> Searched:
    results = retriever.search(text, k=K)
    fit = judge(results, None)
    positions = [retriever.catalog.position(r.qualified_name) for r in results]
    best = fit.best_similarity if fit.best_similarity is not None else 0.0
    return Searched(best, bool(gold) and any(p in gold for p in positions))


def _gold_half(retriever: Retriever, queries: Sequence[Query]) -> list[Searched]:
    resolved, _ = resolve_gold(retriever.catalog, list(queries))
    out = []
    for item in resolved:
        gold = frozenset(p for group in item.groups for p in group)
        out.append(_search(retriever, item.query.text, gold))
    return out


def measure(args: argparse.Namespace) -> dict[str, Any]:
    embedder = load_embedder(args.model, args.cache_dir)
    cache = EmbeddingCache(args.cache_dir or default_cache_dir())

    def index(path: Path) -> Retriever:
        catalog, _ = read_catalog(path, OnError.SKIP)
        retriever, _ = Retriever.build(catalog, embedder, cache)
        return retriever

    halves: dict[str, dict[str, list[Searched]]] = {}
    people = index(PEOPLE / "catalog.jsonl")
    halves["peoples_requests"] = {
        split: _gold_half(people, load_queries(PEOPLE / f"{split}.jsonl")[0])
        for split in ("dev", "test")
    }
    for name in GOLD_SETS:
        retriever = index(args.data / name / "catalog.jsonl")
        queries, _ = load_queries(args.data / name / "queries.jsonl")
        halves[name] = {
            split: _gold_half(
                retriever, sample([q for q in queries if half(name, q.id) == split], PER_SET, SEED)
            )
            for split in ("dev", "test")
        }
        if name == "msc_bench":
            nothing = _infeasible(args.data / INFEASIBLE)
            halves["infeasible"] = {
                split: [
                    _search(retriever, text, frozenset())
                    for query_id, text in nothing
                    if half("msc_bench", query_id) == split
                ]
                for split in ("dev", "test")
            }
    floor = choose(halves)
    return {
        "schema": SCHEMA,
        "commit": head_commit(),
        "model": embedder.model_id,
        "k": K,
        "max_false_alarm": MAX_FALSE_ALARM,
        "floor": floor,
        "dev": report(halves, "dev", floor),
        "test": report(halves, "test", floor),
        "sweep": [
            {"floor": f, "dev": report(halves, "dev", f), "test": report(halves, "test", f)}
            for f in FLOORS[::4]
        ],
    }


def _flagged(rows: Sequence[Searched], floor: float, *, found_only: bool = False) -> float:
    chosen = [r for r in rows if r.found or not found_only]
    return sum(r.best < floor for r in chosen) / len(chosen) if chosen else 0.0


def choose(halves: dict[str, dict[str, list[Searched]]]) -> float | None:
    """The highest floor at which no dev half flags more than `MAX_FALSE_ALARM` of its
    found requests; None when even the lowest does."""
    fitting = [
        floor
        for floor in FLOORS
        if all(
            _flagged(split["dev"], floor, found_only=True) <= MAX_FALSE_ALARM
            for name, split in halves.items()
            if name != "infeasible"
        )
    ]
    return max(fitting) if fitting else None


def report(
    halves: dict[str, dict[str, list[Searched]]], split: str, floor: float | None
) -> dict[str, Any]:
    """Per set: requests, the share flagged (all, and of those found in the top K); for the
    infeasible requests, the share flagged (right)."""
    if floor is None:
        return {}
    out: dict[str, Any] = {}
    for name, rows in halves.items():
        chosen = rows[split]
        if name == "infeasible":
            out[name] = {"requests": len(chosen), "flagged": round(_flagged(chosen, floor), 4)}
            continue
        out[name] = {
            "requests": len(chosen),
            "found": sum(r.found for r in chosen),
            "flagged": round(_flagged(chosen, floor), 4),
            "flagged_when_found": round(_flagged(chosen, floor, found_only=True), 4),
        }
    return out


def write_floor(model: str, floor: float | None) -> None:
    """Set `match_floor` on the model's manifest entry (models/manifest.json)."""
    manifest = json.loads(MANIFEST.read_text("utf-8"))
    spec = known_models().get(model)
    for entry in manifest["models"]:
        if spec is not None and entry["id"] == spec.id:
            entry["match_floor"] = floor
            MANIFEST.write_text(json.dumps(manifest, indent=2) + "\n", "utf-8")
            return
    raise SystemExit(f"{model!r} is not a manifest model: its floor cannot be written there")


def markdown(result: dict[str, Any]) -> str:
    """The section of benchmarks/README.md, from the result file alone."""
    lines = [
        f"Model `{result['model']}`, k = {result['k']}, commit `{result['commit']}`. Floor "
        f"chosen on the dev halves: **{result['floor']}** (the highest at which no dev half "
        f"flags more than {result['max_false_alarm']:.0%} of the requests whose gold is in the "
        "top 5).",
        "",
        "| half | set | requests | flagged | flagged when the gold is in the top 5 |",
        "|---|---|---|---|---|",
    ]
    for split in ("dev", "test"):
        for name, row in result[split].items():
            if name == "infeasible":
                continue
            lines.append(
                f"| {split} | {name} | {row['requests']} | {row['flagged']:.3f} "
                f"| {row['flagged_when_found']:.3f} |"
            )
    lines += [
        "",
        "By floor: the share of MSC-Bench's infeasible requests flagged (right), and of the "
        "people's requests whose gold is in the top 5 (wrong):",
        "",
        "| floor | infeasible, dev | infeasible, test | people's found, dev "
        "| people's found, test |",
        "|---|---|---|---|---|",
    ]
    chosen = {"floor": result["floor"], "dev": result["dev"], "test": result["test"]}
    rows = [row for row in result["sweep"] if row["floor"] <= SHOWN_UP_TO]
    for row in sorted([*rows, chosen], key=lambda r: float(r["floor"])):
        mark = "**" if row is chosen else ""
        dev, test = row["dev"], row["test"]
        lines.append(
            f"| {mark}{row['floor']}{mark} | {dev['infeasible']['flagged']:.3f} "
            f"| {test['infeasible']['flagged']:.3f} "
            f"| {dev['peoples_requests']['flagged_when_found']:.3f} "
            f"| {test['peoples_requests']['flagged_when_found']:.3f} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.no_match", description=__doc__)
    parser.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    parser.add_argument("--model", default=DEFAULT_MODEL)
    parser.add_argument("--cache-dir", type=Path, default=None)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--write-manifest", action="store_true", help="set the model's match_floor")
    parser.add_argument("--table-only", action="store_true", help="only re-render the README")
    args = parser.parse_args(argv)
    if args.table_only:
        result = json.loads(args.out.read_text("utf-8"))
        text = README.read_text("utf-8")
        README.write_text(replace_between(text, START, END, markdown(result)), "utf-8")
        return 0
    result = measure(args)
    args.out.write_text(json.dumps(result, indent=2) + "\n", "utf-8")
    text = README.read_text("utf-8")
    README.write_text(replace_between(text, START, END, markdown(result)), "utf-8")
    if args.write_manifest:
        write_floor(args.model, result["floor"])
    summary = {"floor": result["floor"], "dev": result["dev"], "test": result["test"]}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
