"""`python -m benchmarks.store_scale`: exact search against pgvector HNSW on large catalogs
(see `benchmarks.store_scale` and benchmarks/README.md)."""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.store_scale import corpus, render, run
from benchmarks.store_scale.replica import MODES, make_embedder
from benchmarks.store_scale.search import WARM
from benchmarks.suite.readme import replace_between
from benchmarks.suite.report import code_state
from router.store.postgres.schema import HNSW_EF_CONSTRUCTION, HNSW_M

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "benchmarks" / "results"
OUT = RESULTS / "store_scale.json"
QUICK_OUT = ROOT / "benchmarks" / "out" / "store_scale-quick" / "store_scale.json"
README = ROOT / "benchmarks" / "README.md"
SCHEMA = "mcp-router.store-scale/1"
MODEL = "all-MiniLM-L6-v2"
MEASURED_CODE = ("router/", "benchmarks/store_scale/", "models/")
QUICK_SIZES = (600, 1500)
QUICK_EF = (40, 100)
QUICK_QUERIES = 8
QUICK_LIMIT = 200
"""Per set: its sample's gold tools and others up to this many; and this many pool tools."""


def _ints(text: str) -> tuple[int, ...]:
    values = tuple(int(part) for part in text.split(",") if part.strip())
    if not values or min(values) <= 0:
        raise argparse.ArgumentTypeError(f"expected positive integers, comma-separated: {text!r}")
    return values


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.store_scale")
    add = parser.add_argument
    add("--data", type=Path, default=ROOT.parent / "shared" / "data", help="the public sets")
    add("--sizes", type=_ints, help="catalog sizes (default 20000,100000,250000)")
    add("--ef", type=_ints, help="hnsw.ef_search settings (default 40,100,200,400)")
    add("--queries", type=int, help="labelled queries per set (default 200)")
    add("--sets", default=",".join(corpus.SETS), help="query sets, comma-separated")
    add("--replicas", default=",".join(MODES), help="replica modes to start: exact,hnsw,local")
    add("--seed", type=int, default=0)
    add("--model", default=MODEL, help="embedding model (default: the router's)")
    add(
        "--cache-dir",
        type=Path,
        default=ROOT / ".cache" / "store_scale",
        help="embedding cache of the corpus (filled once; later runs embed nothing)",
    )
    add("--out", type=Path, help=f"result file (default {OUT.relative_to(ROOT)})")
    add(
        "--quick",
        action="store_true",
        help="tiny catalogs, the hashing embedder, a scratch cache; out/, README untouched",
    )
    add("--no-readme", action="store_true", help="leave benchmarks/README.md alone")
    add("--table-only", action="store_true", help="re-render the README section from the JSON")
    return parser


def update_readme(result: dict[str, Any]) -> None:
    text = README.read_text(encoding="utf-8")
    README.write_text(
        replace_between(text, render.START, render.END, render.section(result)), encoding="utf-8"
    )


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    args = parser().parse_args(argv)
    out: Path = args.out or (QUICK_OUT if args.quick else OUT)
    if args.table_only:
        update_readme(json.loads(out.read_text(encoding="utf-8")))
        print(f"rewrote the store-scale section of {README}")
        return 0
    logging.basicConfig(
        level=logging.INFO, format="%(asctime)s %(name)s: %(message)s", stream=sys.stderr
    )
    logging.getLogger("httpx").setLevel(logging.WARNING)
    with tempfile.TemporaryDirectory(prefix="store-scale-") as scratch:
        result = measure(args, argv, Path(scratch))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    if not args.quick and not args.no_readme and out == OUT:
        update_readme(result)
    print(render.section(result))
    print(f"\nwrote {out}")
    return 0


def measure(args: argparse.Namespace, argv: list[str], scratch: Path) -> dict[str, Any]:
    quick = args.quick
    sizes = args.sizes or (QUICK_SIZES if quick else (20_000, 100_000, 250_000))
    efs = args.ef or (QUICK_EF if quick else (40, 100, 200, 400))
    queries = args.queries or (QUICK_QUERIES if quick else 200)
    limit = QUICK_LIMIT if quick else None
    sets = tuple(s for s in args.sets.split(",") if s)
    model = None if quick else args.model
    settings = run.Settings(
        data=args.data,
        sets=sets,
        seed=args.seed,
        queries=queries,
        limit=limit,
        model=model,
        cache_dir=scratch / "cache" if quick else args.cache_dir,
        ef_search=efs,
        replica_modes=tuple(m for m in args.replicas.split(",") if m),
    )
    from tests.support.postgres import running_postgres

    started = time.perf_counter()
    load_before = round(os.getloadavg()[0], 2)
    code = code_state(MEASURED_CODE, untracked=True)
    source = corpus.load_source(args.data, sets, queries, args.seed, limit=limit)
    embedder = make_embedder(model)
    embedder.load()
    with running_postgres() as postgres:
        versions = run.server_versions(postgres.url)
        points = [
            run.measure_size(settings, source, embedder, postgres.url, size) for size in sizes
        ]
    result: dict[str, Any] = {
        "schema": SCHEMA,
        "run": "quick" if quick else "full",
        "command": shlex.join(["python", "-m", "benchmarks.store_scale", *argv]),
        **code,
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "wall_seconds": round(time.perf_counter() - started, 1),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "memory_gb": round(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**30, 1),
            "python": platform.python_version(),
            "load_average_1m_before": load_before,
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        },
        "versions": versions,
        "model": embedder.model_id,
        "settings": {
            "sizes": list(sizes),
            "ef_search": list(efs),
            "sets": list(sets),
            "queries_per_set": queries,
            "split": "test",
            "seed": args.seed,
            "quick_limit": limit,
            "depth": 100,
            "hybrid_k": 10,
            "warm_queries": WARM,
            "hnsw_m": HNSW_M,
            "hnsw_ef_construction": HNSW_EF_CONSTRUCTION,
        },
        "corpus": {
            "set_tools": len(source.own),
            "pool_tools": len(source.pool),
            "dropped_servers": source.dropped_servers,
        },
        "queries": {name: len(source.queries[name]) for name in sets},
        "sizes": points,
    }
    result["recommendation"] = render.recommend(result)
    return result
