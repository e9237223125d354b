"""The training set of the tool-search model, built reproducibly from public data only.

`python -m models.training.data --data ../shared/data --out .cache/training` writes
`triplets.jsonl` (one `{"query", "positive", "negative", "source"}` a line) and
`stats.json` (counts per source, the file's sha256, the inputs' sha256). Nothing random is
unseeded; the same inputs give the same bytes.

What goes in:
- **real queries, dev halves only** (`benchmarks.suite.data.half`), of the sets named by
  `--sets` (all three by default; `--sets msc_bench,bfcl` for a leave-one-set-out run): each
  query with one member of each gold group as its positive. A test-half query never enters,
  in any form. MetaTool's 199 tools would drown the rest (10k dev queries), so each set
  gives at most `MAX_PER_TOOL` queries per gold tool.
- **synthetic queries for the pools' real tools** (Smithery and ToolSDK, about 22k): made
  without a model, from the tool's own words: its description's first sentence rewritten
  as a request, its name split into words with its server's, and the description of a
  required parameter joined to the name. The positive is the tool's text.
- **requests in users' words** with `--goals` (off by default; `models.training.goals`):
  the goal a tool's verb stands for and its object ("I need a new issue on github", "get rid
  of the branch"), not the tool's own verb.
- **public request sets** with `--real-requests DIR` (off by default): the train and dev
  splits of the sets `python -m models.training.sources` converted into DIR (never a test
  split), added as the dev halves are, their tools joining the negatives; each set is a
  source of its own in the stats (`sgd-train`, `seal_tools-dev`...).
- **multi-step requests** (`models.training.steps`, `MULTI_STEP` of them): two to four of
  those requests joined the way users join steps ("First, ... Then, ..."), from one server or
  several; one of the tools is the positive and none of them may be the negative.
- **hard negatives** for every query (`models.training.negatives`): a look-alike ranked by
  BM25 over every tool text (the catalogs of the sets trained on, never a left-out one's,
  and the pools) at ranks `NEGATIVE_RANKS`, never a gold tool, never a tool with the
  positive's name (an equivalent tool on another server would be a false
  negative), preferring a sibling of the positive's server one time in three; with
  `--teacher`, one from another server only if the base model scores it clearly below the
  positive (`models.training.teacher`: otherwise it is most likely an equivalent tool).

The texts are the router's own search texts (`router.core.catalog.build_search_text`), so the
model is trained on what it embeds when serving. The evaluation sets the project is
measured on outside it (named in its issue tracker, not here) are not read: the only inputs
are the public sets and pools listed above, under `--data`, and with `--real-requests` the
sets of `models/training/sources/manifest.json`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from benchmarks.suite.data import POOLS, half
from models.training.arguments import argument_request
from models.training.goals import goal_request
from models.training.negatives import NEGATIVE_RANKS, Negatives
from models.training.sources.reading import read_sets
from models.training.steps import Step, multi_step_requests
from models.training.teacher import BASE as TEACHER_MODEL
from models.training.teacher import MARGIN
from router.core.catalog import build_search_text, split_identifier
from router.evaluation.dataset import Query, load_queries

SETS = ("msc_bench", "bfcl", "metatool")
MAX_PER_TOOL = 24
SEED = 20261201
MULTI_STEP = 8000
"""How many multi-step requests (`models.training.steps`) join the pools' requests. 3,000 was
measured too (left out, dev halves): MetaTool +0.004 / +0.010 hybrid Recall@5, MSC-Bench level
4 -0.016 / -0.061 (benchmarks/README.md)."""
TEACHER = False
"""Whether the base model vets each cross-server hard negative (`models.training.teacher`).
Off: left out, BFCL and MSC-Bench gained a little with it, but the model trained on all three
sets lost on their test halves (MetaTool +20k 0.770 against 0.824; benchmarks/README.md)."""
ARGUMENTS = False
"""Whether requests with argument values (`models.training.arguments`) go in. Off: with them,
the model trained without BFCL lost 0.008 more Recall@5 on BFCL's dev half at its own size."""
GOALS = False
"""Whether requests in users' words (`models.training.goals`: the goal and its object, not
the tool's verb) go in, one per pool tool that has both. Off until measured."""
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_LEADING_VERB = re.compile(r"^(this tool |tool to |use this to |used to |allows you to )", re.I)


@dataclass(frozen=True, slots=True)
class Tool:
    server: str
    name: str
    description: str
    required: tuple[str, ...]
    parameter_texts: tuple[str, ...]
    text: str
    properties: tuple[tuple[str, dict[str, Any]], ...] = field(
        default=(), compare=False, hash=False
    )
    """The schema's properties, required ones first."""

    @property
    def key(self) -> tuple[str, str]:
        return (self.server, self.name)


def _rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        return [json.loads(line) for line in handle if line.strip()]


def _tool(raw: dict[str, Any]) -> Tool:
    schema = raw.get("inputSchema") if isinstance(raw.get("inputSchema"), dict) else None
    properties = (schema or {}).get("properties") or {}
    required = tuple(str(r) for r in (schema or {}).get("required") or () if r in properties)
    texts = tuple(
        str(spec.get("description", "")).strip()
        for name, spec in properties.items()
        if isinstance(spec, dict) and name in required and spec.get("description")
    )
    description = str(raw.get("description") or "")
    ordered = sorted(
        ((str(n), spec) for n, spec in properties.items() if isinstance(spec, dict)),
        key=lambda item: item[0] not in required,
    )
    return Tool(
        server=str(raw["server"]),
        name=str(raw["name"]),
        description=description,
        required=required,
        parameter_texts=texts,
        text=build_search_text(str(raw["server"]), str(raw["name"]), description, schema),
        properties=tuple(ordered),
    )


def as_request(tool: Tool) -> str:
    """The tool's first description sentence as a request ("" when it has none)."""
    line = tool.description.strip().split("\n", 1)[0]
    first = _SENTENCE.split(line, maxsplit=1)[0].strip().rstrip(".")
    if len(first.split()) < 3:
        return ""
    first = _LEADING_VERB.sub("", first)
    return first[0].lower() + first[1:] if first else first


def synthetic_queries(tool: Tool) -> list[str]:
    """Requests a user might make of `tool`, from its own words."""
    queries = []
    first = as_request(tool)
    if first:
        queries.append(first)
    words = split_identifier(tool.name)
    server = split_identifier(tool.server)
    if len(words.split()) >= 2:
        queries.append(f"{words} in {server}")
    if tool.parameter_texts:
        parameter = tool.parameter_texts[0].rstrip(".")
        if 2 <= len(parameter.split()) <= 20:
            queries.append(f"{words} for {parameter[0].lower() + parameter[1:]}")
    return [q for q in queries if q]


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _labelled(
    queries: list[Query],
    by_key: dict[tuple[str, str], Tool],
    source: str,
    rng: random.Random,
    per_tool: int = MAX_PER_TOOL,
) -> list[tuple[str, Tool, set[tuple[str, str]], str]]:
    """Each query with one member of each gold group as its positive, in a seeded order, at
    most `per_tool` queries per positive."""
    count: Counter[tuple[str, str]] = Counter()
    rng.shuffle(queries)
    items = []
    for query in queries:
        gold = {key for group in query.gold_groups for key in group}
        for group in query.gold_groups:
            members = [by_key[key] for key in group if key in by_key]
            if not members:
                continue
            positive = members[0]
            if count[positive.key] >= per_tool:
                continue
            count[positive.key] += 1
            items.append((query.text, positive, gold, source))
    return items


def build(
    data: Path,
    out: Path,
    sets: Iterable[str],
    seed: int = SEED,
    multi_step: int = MULTI_STEP,
    arguments: bool = ARGUMENTS,
    teacher: bool = TEACHER,
    goals: bool = GOALS,
    real_requests: Path | None = None,
    real_sets: Sequence[str] | None = None,
    real_per_tool: int = MAX_PER_TOOL,
) -> dict[str, Any]:
    rng = random.Random(seed)
    sets = tuple(sets)
    # Only the sets trained on: a left-out set's tools must not enter even as negatives
    # (pushed away from every query, they lost to the pools' tools when ranked with them).
    catalogs = {name: [_tool(raw) for raw in _rows(data / name / "catalog.jsonl")] for name in sets}
    pools = [_tool(raw) for pool in POOLS for raw in _rows(data / pool / "catalog.jsonl")]
    by_key = {tool.key: tool for tools in catalogs.values() for tool in tools}
    # (query, positive, the gold keys to avoid as negatives, source)
    items: list[tuple[str, Tool, set[tuple[str, str]], str]] = []
    for name in sets:
        queries, _ = load_queries(data / name / "queries.jsonl")
        dev = [q for q in queries if half(name, q.id) == "dev"]
        items += _labelled(dev, by_key, f"{name}-dev", rng)
    real = [] if real_requests is None else read_sets(real_requests, real_sets)
    for chosen in real:
        own = {tool.key: tool for tool in (_tool(raw) for raw in chosen.tools)}
        by_key.update({key: tool for key, tool in own.items() if key not in by_key})
        for split in sorted({q.field("split") or "" for q in chosen.queries}):
            asked = [q for q in chosen.queries if (q.field("split") or "") == split]
            source = f"{chosen.name}-{split}" if split else chosen.name
            items += _labelled(asked, own, source, rng, real_per_tool)
    values = random.Random(seed + 1)
    phrasing = random.Random(seed + 3)
    steps: list[Step] = []
    for tool in pools:
        for text in synthetic_queries(tool):
            items.append((text, tool, {tool.key}, "pools-synthetic"))
        described = as_request(tool)
        request = described or split_identifier(tool.name)
        valued = argument_request(request, tool.properties, values) if arguments else None
        if valued:
            items.append((valued, tool, {tool.key}, "pools-arguments"))
        said = (
            goal_request(tool.name, tool.server, described, tool.properties, phrasing)
            if goals
            else None
        )
        if said:
            items.append((said, tool, {tool.key}, "pools-goals"))
        if described:
            steps.append(Step(tool.key, valued or request))
    pool_by_key = {tool.key: tool for tool in pools}
    for text, step, keys in multi_step_requests(steps, multi_step, random.Random(seed + 2)):
        items.append((text, pool_by_key[step.key], keys, "pools-multi-step"))
    everything = list({t.key: t for t in [*by_key.values(), *pools]}.values())
    negatives = Negatives(everything, seed, teacher)
    triplets = []
    batch = 2048
    for start in range(0, len(items), batch):
        part = items[start : start + batch]
        picked = negatives.pick(
            [q for q, *_ in part], [p for _, p, *_ in part], [g for _, _, g, _ in part]
        )
        for (text, positive, _, source), negative in zip(part, picked, strict=True):
            if negative is not None:
                triplets.append(
                    {
                        "query": text,
                        "positive": positive.text,
                        "negative": negative.text,
                        "source": source,
                    }
                )
    rng.shuffle(triplets)
    out.mkdir(parents=True, exist_ok=True)
    target = out / "triplets.jsonl"
    with target.open("w", encoding="utf-8") as handle:
        for triplet in triplets:
            handle.write(json.dumps(triplet, ensure_ascii=False, sort_keys=True) + "\n")
    inputs = {
        str(path.relative_to(data)): _sha256(path)
        for path in sorted(
            [data / n / "queries.jsonl" for n in sets]
            + [data / n / "catalog.jsonl" for n in sets]
            + [data / p / "catalog.jsonl" for p in POOLS]
        )
    }
    for chosen in real:
        inputs.update({f"real-requests/{chosen.name}/{f.name}": _sha256(f) for f in chosen.files})
    stats = {
        "triplets": len(triplets),
        "by_source": dict(sorted(Counter(t["source"] for t in triplets).items())),
        "sets": list(sets),
        "seed": seed,
        "sha256": _sha256(target),
        "inputs": inputs,
        "max_per_tool": MAX_PER_TOOL,
        "negative_ranks": list(NEGATIVE_RANKS),
        "multi_step": multi_step,
        "arguments": arguments,
        "teacher": {"model": TEACHER_MODEL, "margin": MARGIN} if teacher else None,
    }
    if goals:
        stats["goals"] = True
    if real:
        # only when asked for, so the default run's stats keep their bytes
        stats["real_requests"] = {
            "per_tool": real_per_tool,
            "sets": {
                r.name: {k: r.source[k] for k in ("repository", "commit", "licence", "splits")}
                for r in real
            },
        }
    (out / "stats.json").write_text(json.dumps(stats, indent=2) + "\n", encoding="utf-8")
    return stats


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m models.training.data", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--data", type=Path, default=Path("../shared/data"))
    parser.add_argument("--out", type=Path, default=Path(".cache/training"))
    parser.add_argument("--sets", default=",".join(SETS), help="query sets whose dev halves go in")
    parser.add_argument("--seed", type=int, default=SEED)
    parser.add_argument(
        "--multi-step", type=int, default=MULTI_STEP, help="multi-step requests to add"
    )
    parser.add_argument(
        "--arguments",
        action=argparse.BooleanOptionalAction,
        default=ARGUMENTS,
        help="add requests that carry argument values",
    )
    parser.add_argument(
        "--teacher",
        action=argparse.BooleanOptionalAction,
        default=TEACHER,
        help="let the base model drop negatives it scores near the positive",
    )
    parser.add_argument(
        "--goals",
        action=argparse.BooleanOptionalAction,
        default=GOALS,
        help="add requests in users' words: the goal and its object (models.training.goals)",
    )
    parser.add_argument(
        "--real-requests",
        type=Path,
        default=None,
        metavar="DIR",
        help="add the public request sets converted there (python -m models.training.sources)",
    )
    parser.add_argument(
        "--real-sets", default=None, help="which of those sets (all by default): sgd,api_bank"
    )
    parser.add_argument(
        "--real-per-tool",
        type=int,
        default=MAX_PER_TOOL,
        help="at most this many of a set's requests per tool",
    )
    args = parser.parse_args(argv)
    sets = [s for s in args.sets.split(",") if s]
    unknown = set(sets) - set(SETS)
    if unknown:
        parser.error(f"unknown sets: {', '.join(sorted(unknown))} (known: {', '.join(SETS)})")
    real_sets = None if args.real_sets is None else [s for s in args.real_sets.split(",") if s]
    stats = build(
        args.data,
        args.out,
        sets,
        args.seed,
        args.multi_step,
        args.arguments,
        args.teacher,
        goals=args.goals,
        real_requests=args.real_requests,
        real_sets=real_sets,
        real_per_tool=args.real_per_tool,
    )
    summary = {k: stats[k] for k in ("triplets", "by_source", "sha256")}
    sys.stdout.write(json.dumps(summary, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
