"""The bench's command-line options, shared by `python -m benchmarks` and `mcp-router bench`.

Imports nothing heavy, so `mcp-router --help` stays instant.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

from router.cli.option_types import (
    comma_list,
    non_negative_float,
    non_negative_int,
    positive_int,
)
from router.core.errors import DataError

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "benchmarks" / "results"
QUICK_OUT = ROOT / "benchmarks" / "out" / "quick"
DEFAULT_SETS = ("msc_bench", "bfcl", "metatool")
DEFAULT_SIZES = (1000, 5000, 10000, 20000)
MODEL = "minilm-l6-tools"  # router.embedding.manifest.DEFAULT_MODEL, without importing it


@dataclass(frozen=True, slots=True)
class Options:
    data: Path
    sets: tuple[str, ...]
    sizes: tuple[int, ...]
    max_queries: int | None
    scale_queries: int | None
    seed: int
    model: str | None
    """None: the test-only hashing embedder."""
    cache_dir: Path | None
    no_cache: bool
    fastmcp: bool
    config: Path | None
    live_wait: float
    out: Path
    readme: bool
    charts: bool
    catalog_limit: int | None
    cold_tools: int
    latency_queries: int
    """Queries embedded one by one (timed); the others are embedded in batches."""
    split: str
    """The half of each query set sampled: "test" to report, "dev" to choose and tune."""
    quick: bool
    progress: bool


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add = parser.add_argument
    add("--data", type=Path, default=ROOT.parent / "shared" / "data", help="the public sets")
    add("--sets", default=",".join(DEFAULT_SETS), help="query sets, comma-separated ('' for none)")
    sizes = comma_list(positive_int)
    add("--sizes", type=sizes, default=DEFAULT_SIZES, help="distractor counts, comma-separated")
    add("--max-queries", type=positive_int, default=2000, help="seeded sample of larger sets")
    add("--scale-queries", type=positive_int, default=500, help="seeded sample at each size")
    add("--seed", type=int, default=0)
    add("--model", default=None, help="embedding model (default minilm-l6-tools)")
    add("--hashing", action="store_true", help="test-only hashing embedder (no model, no cache)")
    add(
        "--cache-dir", type=Path, default=None, help="embedding cache (default ~/.cache/mcp-router)"
    )
    add("--no-cache", action="store_true", help="embed everything, store nothing")
    add("--no-fastmcp", action="store_true", help="skip FastMCP's search baseline")
    add("--config", type=Path, default=None, help="live mode: benchmark these upstreams too")
    add(
        "--live-wait",
        type=non_negative_float,
        default=60.0,
        help="seconds to wait for live upstreams",
    )
    add("--out", type=Path, default=None, help="results folder (default benchmarks/results)")
    add("--no-readme", action="store_true", help="leave benchmarks/README.md alone")
    add("--no-charts", action="store_true", help="write no PNG charts")
    add("--catalog-limit", type=positive_int, help="cut each set's catalog (smoke runs)")
    add("--cold-tools", type=non_negative_int, default=200, help="tools embedded cold (200)")
    add("--latency-queries", type=non_negative_int, default=200, help="queries timed (200)")
    add("--split", choices=("dev", "test", "all"), default="test", help="query half (test)")
    add("--quick", action="store_true", help="a small sample in seconds: the CI smoke run")
    add("--no-progress", action="store_true", help="no progress bar on stderr")
    add("--table-only", action="store_true", help="re-render table, charts, README from JSON")


def from_args(args: argparse.Namespace) -> Options:
    """Options from parsed arguments; `--quick` swaps in the small sample's defaults.

    Raises:
        DataError: A set of `--sets` is not a folder of `--data` with its two files.
    """
    quick = bool(args.quick)
    sets = tuple(s.strip() for s in args.sets.split(",") if s.strip())
    if not args.table_only:
        _check_sets(args.data, sets)
    return Options(
        data=args.data,
        sets=sets,
        sizes=(150, 500) if quick else tuple(args.sizes),
        max_queries=16 if quick else args.max_queries,
        scale_queries=8 if quick else args.scale_queries,
        seed=args.seed,
        model=None if args.hashing or (quick and args.model is None) else args.model or MODEL,
        cache_dir=args.cache_dir,
        no_cache=args.no_cache,
        fastmcp=not args.no_fastmcp,
        config=args.config,
        live_wait=args.live_wait,
        out=args.out or (QUICK_OUT if quick else RESULTS),
        readme=not (args.no_readme or quick),
        charts=not args.no_charts,
        catalog_limit=150 if quick and args.catalog_limit is None else args.catalog_limit,
        cold_tools=20 if quick else args.cold_tools,
        latency_queries=4 if quick else args.latency_queries,
        split=args.split,
        quick=quick,
        progress=not args.no_progress,
    )


def _check_sets(data: Path, sets: tuple[str, ...]) -> None:
    missing = [
        name
        for name in sets
        if not all((data / name / file).is_file() for file in ("catalog.jsonl", "queries.jsonl"))
    ]
    if missing:
        found = sorted(p.name for p in data.glob("*") if (p / "queries.jsonl").is_file())
        raise DataError(
            f"--sets: {', '.join(missing)}: no such set in {data} (a set is a folder with "
            f"catalog.jsonl and queries.jsonl); sets there: {', '.join(found) or 'none'}"
        )
