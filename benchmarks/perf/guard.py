"""The guard: this tree against a baseline commit, in one run, interleaved.

    python -m benchmarks.perf --guard                 # against f8eabd2 (issue 53's baseline)
    python -m benchmarks.perf --baseline REV          # against REV
    python -m benchmarks.perf --guard --quick         # a smoke run (`tests/benchmarks/`)
    python -m benchmarks.perf --guard --table-only    # the READMEs again from the JSON

The baseline's `router/` and `models/` are taken from git (`git archive REV`) into a
scratch folder and run by the same Python and venv as this tree (`PYTHONPATH` names the
tree; `python -m router serve` starts there). Each round runs both trees, in alternating
order, so both see the same load; one unmeasured round first fills each tree's embedding
cache. Per tree and round:

- the router over stdio in front of small real upstreams (`--guard-upstreams`, the example
  servers): seconds from spawn to the `initialize` answer and to the answer of a search sent
  right after it (which must rank the expected tool first), then `--calls` calls of one
  upstream tool through the router and to the upstream alone, alternated call by call
  (the overhead: router p50 less the upstream's), then the router's RSS;
- the router in front of `catalog_server.py` serving `--tools` tools of the public sets
  (metatool plus pool distractors, as the perf search section builds them): after the
  index is ready, `--queries` real queries through `search_tools`, one at a time (p50,
  p95 over every round's samples), then the RSS.

Search latency here is a `tools/call` of `search_tools` over stdio, JSON-RPC included, so it
reads a little above the in-process `Retriever.search` figures of the perf run; what the
guard compares is the two trees measured the same way. Every ratio (this tree / baseline)
past 1.10 is flagged. Writes `benchmarks/results/perf-guard.json` and the perf-guard
sections of docs/performance.md and benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import subprocess
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from benchmarks.perf import guard_report, guard_runs
from benchmarks.perf.catalogs import load as load_workload
from benchmarks.perf.catalogs import write_jsonl
from benchmarks.perf.guard_runs import Tree, Upstreams
from benchmarks.perf.options import CACHE, QUICK_OUT, RESULTS, ROOT
from benchmarks.suite.readme import replace_between

BASELINE = "f8eabd2"
"""Issue 53's baseline: the commit before the wave that made start-up and search slower."""
SCHEMA = "mcp-router.perf-guard/1"
OUT_NAME = "perf-guard.json"
START, END = "<!-- perf-guard:start -->", "<!-- perf-guard:end -->"
READMES = (ROOT / "docs" / "performance.md", ROOT / "benchmarks" / "README.md")
GUARD_CACHE = ROOT / "benchmarks" / "out" / "perf-guard-cache"
EXAMPLE_CATALOG = ROOT / "examples" / "catalog.jsonl"
EXAMPLE_QUERIES = ROOT / "examples" / "queries.jsonl"
NOTE = "Ratios within this run are what count: absolute times on a shared 2-core machine are noisy."


@dataclass(frozen=True, slots=True)
class GuardOptions:
    quick: bool
    baseline: str
    rounds: int
    warmup_rounds: int
    tools: int
    queries: int
    calls: int
    call_warmup: int
    upstreams: tuple[str, ...]
    """Example servers in front of the router; empty: `tests/upstreams/counting.py`."""
    data: Path
    cache_dir: Path
    out: Path
    readme: bool
    note: str


def add_arguments(add: Any) -> None:
    """The guard's own options, beside the perf run's (`options.parser`)."""
    add("--guard", action="store_true", help="compare this tree with --baseline, interleaved")
    add(
        "--baseline", default=None, help=f"the commit to compare with (implies --guard; {BASELINE})"
    )
    add("--rounds", type=int, default=5, help="guard: measured rounds (each tree once a round)")
    add("--tools", type=int, default=20000, help="guard: catalog size searched")
    add(
        "--guard-upstreams",
        default="time,git,fetch,everything",
        help="guard: example servers in front of the router (start-up, calls, RSS)",
    )
    add("--note", default=NOTE, help="guard: a sentence on the machine, kept in the result")


def from_args(args: argparse.Namespace) -> GuardOptions:
    quick = bool(args.quick)
    names = tuple(n.strip() for n in str(args.guard_upstreams).split(",") if n.strip())
    return GuardOptions(
        quick=quick,
        baseline=args.baseline or BASELINE,
        rounds=1 if quick else args.rounds,
        warmup_rounds=0 if quick else 1,
        tools=0 if quick else args.tools,
        queries=5 if quick else args.queries,
        calls=3 if quick else args.calls,
        call_warmup=1 if quick else 10,
        upstreams=() if quick else names,
        data=args.data,
        cache_dir=GUARD_CACHE if args.cache_dir == CACHE else args.cache_dir,
        out=args.out or (QUICK_OUT if quick else RESULTS),
        readme=not (quick or args.no_readme),
        note=str(args.note),
    )


def _git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, check=True)
    return done.stdout.decode().strip()


def baseline_tree(rev: str, folder: Path) -> Tree:
    """`rev`'s `router/` and `models/` in `folder`, with `router/models` the models (as the
    installed package has them, `router.models`)."""
    commit = _git("rev-parse", "--short", f"{rev}^{{commit}}")
    folder.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "archive", commit, "router", "models"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    link = folder / "router" / "models"
    if not link.exists():
        link.symlink_to(Path("..") / "models")
    return Tree("baseline", commit, folder)


def _upstreams(options: GuardOptions, scratch: Path) -> tuple[Upstreams | None, str | None]:
    if not options.upstreams:
        return guard_runs.counting_upstream(scratch), None
    from benchmarks.example_servers import example_config

    try:
        servers = example_config(scratch, only=options.upstreams)["mcpServers"]
    except SystemExit as exc:
        return None, str(exc)
    missing = sorted(set(options.upstreams) - set(servers))
    if missing or "time" not in servers:
        return None, f"not example servers: {', '.join(missing or ['time'])}"
    return guard_runs.example_upstreams(servers), None


def _catalog(options: GuardOptions, scratch: Path) -> tuple[Path | None, list[str], str | None]:
    """The catalog file served, and the queries searched (or why none)."""
    if options.quick:
        lines = EXAMPLE_QUERIES.read_text(encoding="utf-8").splitlines()
        queries = [json.loads(line)["query"] for line in lines if line.strip()]
        return EXAMPLE_CATALOG, queries[: options.queries], None
    needed = [options.data / "metatool" / "catalog.jsonl", options.data / "pools"]
    absent = [str(p) for p in needed if not p.exists()]
    if absent:
        return None, [], f"missing {', '.join(absent)}"
    workload = load_workload(options.data, "metatool", [options.tools], options.queries, 0)
    path = write_jsonl(workload.specs[options.tools], scratch / "catalog.jsonl")
    return path, list(workload.queries), None


def _machine(before: Sequence[float]) -> dict[str, Any]:
    return {
        "platform": f"{platform.machine()} {platform.system()}",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "load_average_before": list(before),
        "load_average_after": [round(x, 2) for x in os.getloadavg()],
    }


def _progress(message: str) -> None:
    print(f"perf guard: {message}", file=sys.stderr, flush=True)


def measure(options: GuardOptions, argv: Sequence[str]) -> dict[str, Any]:
    from benchmarks.suite.report import code_state

    code = code_state()
    began = time.perf_counter()
    before = [round(x, 2) for x in os.getloadavg()]
    skipped: dict[str, str] = {}
    with tempfile.TemporaryDirectory(prefix="mcp-router-guard-") as folder:
        scratch = Path(folder)
        base = baseline_tree(options.baseline, scratch / "baseline")
        trees = (base, Tree("current", code["commit"] or "HEAD", ROOT))
        upstreams, why = _upstreams(options, scratch)
        if why:
            skipped["start-up, calls and RSS"] = why
        catalog, queries, why = _catalog(options, scratch)
        if why:
            skipped["search"] = why
        tools = guard_runs.count_lines(catalog) if catalog else 0
        caches = options.cache_dir if not options.quick else scratch / "catalog-caches"
        samples: dict[str, list[dict[str, Any]]] = {t.label: [] for t in trees}
        for index in range(options.warmup_rounds + options.rounds):
            order = trees if index % 2 == 0 else trees[::-1]
            measured = index >= options.warmup_rounds
            _progress(f"round {index + 1} of {options.warmup_rounds + options.rounds}")
            entries: dict[str, dict[str, Any]] = {t.label: {} for t in trees}
            for tree in order if upstreams else ():
                assert upstreams is not None
                entries[tree.label]["small"] = guard_runs.small_session(
                    tree, upstreams, scratch / f"small-{tree.label}-{index}", options
                )
            for tree in order if catalog else ():
                assert catalog is not None
                cache = caches / f"{tree.label}-{tree.commit}"
                entries[tree.label]["catalog"] = guard_runs.catalog_session(
                    tree, catalog, queries, scratch / f"catalog-{tree.label}-{index}", cache
                )
            if measured:
                for label, entry in entries.items():
                    samples[label].append(entry)
    figures = {label: guard_runs.figures(rounds) for label, rounds in samples.items()}
    found = guard_report.ratios(figures["baseline"], figures["current"])
    return {
        "schema": SCHEMA,
        "run": "quick" if options.quick else "full",
        "command": shlex.join(["python", "-m", "benchmarks.perf", *argv]),
        "commit": code["commit"],
        "uncommitted_changes": code["uncommitted_changes"],
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "wall_seconds": round(time.perf_counter() - began, 1),
        "machine": _machine(before),
        "note": options.note,
        "baseline": {"rev": options.baseline, "commit": base.commit},
        "settings": {
            "rounds": options.rounds,
            "warmup_rounds": options.warmup_rounds,
            "tools": options.tools,
            "tools_served": tools,
            "queries": len(queries),
            "calls": options.calls,
            "call_warmup": options.call_warmup,
            "upstreams": upstreams.label if upstreams else "-",
        },
        "threshold": guard_report.THRESHOLD,
        "trees": figures,
        "ratios": found,
        "flagged": [e["metric"] for e in found if e["flagged"]],
        "skipped": skipped,
        "samples": samples,
    }


def update_readmes(report: Mapping[str, Any]) -> None:
    body = guard_report.markdown(report)
    for readme in READMES:
        text = readme.read_text(encoding="utf-8")
        readme.write_text(replace_between(text, START, END, body), encoding="utf-8")


def main(args: argparse.Namespace, argv: Sequence[str]) -> int:
    options = from_args(args)
    out = options.out / OUT_NAME
    if args.table_only:
        update_readmes(json.loads(out.read_text(encoding="utf-8")))
        print(f"rewrote the perf-guard sections of {', '.join(str(r) for r in READMES)}")
        return 0
    report = measure(options, argv)
    out.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(report, indent=1) + "\n"
    out.write_text(text, encoding="utf-8")
    if options.readme:
        update_readmes(json.loads(text))
    print(f"wrote {out}")
    print(guard_report.markdown(report))
    return 0
