"""The perf run's options and what `--quick` shrinks them to."""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent.parent
RESULTS = ROOT / "benchmarks" / "results"
QUICK_OUT = ROOT / "benchmarks" / "out" / "perf-quick"
CACHE = ROOT / "benchmarks" / "out" / "perf-cache"
SECTIONS = ("startup", "calls", "memory", "search", "embedding")


@dataclass(frozen=True, slots=True)
class Options:
    quick: bool
    data: Path
    set_name: str
    sizes: tuple[int, ...]
    queries: int
    fastmcp_queries: int
    texts: int
    embed_rounds: int
    runs: int
    warmup: int
    calls: int
    call_warmup: int
    several_calls: int
    searches: int
    upstreams: frozenset[str] | None
    """The example servers used (None: all six)."""
    torch: bool
    fastmcp: bool
    cache_dir: Path
    sections: tuple[str, ...]
    seed: int
    out: Path
    readme: bool


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="python -m benchmarks.perf",
        description="Start-up, search latency, embedding throughput, memory and call "
        "overhead of the router against FastMCP's proxy; writes results/perf.json and the "
        "READMEs' perf sections.",
    )
    add = p.add_argument
    add("--quick", action="store_true", help="tiny sizes, ONNX only, time server only: a smoke run")
    add("--table-only", action="store_true", help="re-render the READMEs from the JSON")
    add("--data", type=Path, default=ROOT.parent / "shared" / "data", help="the public sets")
    add("--set", dest="set_name", default="metatool", help="query set whose catalog grows")
    add("--sizes", default="1000,5000,20000", help="total catalog sizes for search latency")
    add("--queries", type=int, default=300, help="real queries timed per size")
    add("--fastmcp-queries", type=int, default=100, help="queries FastMCP's search is timed on")
    add("--texts", type=int, default=300, help="tool texts embedded for throughput")
    add("--runs", type=int, default=3, help="start-up runs per system (median)")
    add("--calls", type=int, default=200, help="timed calls per path")
    add("--sections", default=",".join(SECTIONS), help="which measurements to run")
    add("--no-torch", action="store_true", help="skip the torch backend")
    add("--no-fastmcp", action="store_true", help="skip FastMCP's proxy and search")
    add("--cache-dir", type=Path, default=CACHE, help="embedding cache of the in-process parts")
    add("--seed", type=int, default=0)
    add("--out", type=Path, default=None, help="folder for perf.json (default results/)")
    add("--no-readme", action="store_true", help="leave the READMEs alone")
    from benchmarks.perf.guard import add_arguments

    add_arguments(add)
    return p


def from_args(args: argparse.Namespace) -> Options:
    quick = bool(args.quick)
    sizes = tuple(int(s) for s in str(args.sizes).split(",") if s.strip())
    return Options(
        quick=quick,
        data=args.data,
        set_name=args.set_name,
        sizes=(250,) if quick else sizes,
        queries=20 if quick else args.queries,
        fastmcp_queries=5 if quick else args.fastmcp_queries,
        texts=32 if quick else args.texts,
        embed_rounds=1 if quick else 3,
        runs=1 if quick else args.runs,
        warmup=1,
        calls=20 if quick else args.calls,
        call_warmup=5 if quick else 20,
        several_calls=0 if quick else 5,
        searches=3 if quick else 5,
        upstreams=frozenset({"time"}) if quick else None,
        torch=not (quick or args.no_torch),
        fastmcp=not args.no_fastmcp,
        cache_dir=args.cache_dir,
        sections=tuple(s.strip() for s in str(args.sections).split(",") if s.strip()),
        seed=args.seed,
        out=args.out or (QUICK_OUT if quick else RESULTS),
        readme=not (quick or args.no_readme),
    )
