"""The guard's two runs of one tree (`guard.py` says what each measures), and the figures a
tree's rounds come to."""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AsyncExitStack
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import numpy as np

from benchmarks.perf import systems
from benchmarks.perf.stdio_rpc import StdioPeer, spawn
from benchmarks.perf.systems import Launch

if TYPE_CHECKING:
    from benchmarks.perf.guard import GuardOptions

START_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 60.0
INDEX_TIMEOUT_S = 3600.0
"""A cold 20k-tool catalog is embedded before the first search answers: minutes."""
SEARCH_WARMUP = 10
COUNTING = systems.ROOT / "tests" / "upstreams" / "counting.py"


@dataclass(frozen=True, slots=True)
class Tree:
    """A router tree measured: `label` (baseline or current), its commit and folder."""

    label: str
    commit: str
    root: Path

    def launch(self, config: Path) -> Launch:
        """`python -m router serve` from this tree's `router/`, by this Python and venv,
        writing its bytecode (the unmeasured round compiles each tree once, so neither pays
        for compiling in a measured one)."""
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env["PYTHONPATH"] = str(self.root)
        command = (sys.executable, "-m", "router", "serve", "--config", str(config))
        return Launch(command, env, self.root)


@dataclass(frozen=True, slots=True)
class Upstreams:
    label: str
    servers: Mapping[str, Any]
    query: str
    expected: str
    """The tool the first search must rank first."""
    server: str
    tool: str
    arguments: Mapping[str, Any]
    """The call timed through the router and to `server` alone."""


def example_upstreams(servers: Mapping[str, Any]) -> Upstreams:
    return Upstreams(
        "+".join(sorted(servers)),
        servers,
        systems.QUERY,
        systems.router_name("time", "get_current_time"),
        "time",
        "get_current_time",
        {"timezone": "Asia/Tokyo"},
    )


def counting_upstream(scratch: Path) -> Upstreams:
    """`tests/upstreams/counting.py` alone (the quick run: no installed servers needed)."""
    entry = {"command": sys.executable, "args": [str(COUNTING), str(scratch / "counting.log")]}
    return Upstreams(
        "counting", {"count": entry}, "touch the counter", "count__touch", "count", "touch", {}
    )


def count_lines(path: Path) -> int:
    return sum(1 for line in path.read_text(encoding="utf-8").splitlines() if line.strip())


def _config(path: Path, servers: Mapping[str, Any], cache: Path, connect_s: float) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    router = {"cache_dir": str(cache), "timeouts": {"connect": connect_s}}
    path.write_text(json.dumps({"mcpServers": dict(servers), "router": router}), encoding="utf-8")
    return path


async def _open(stack: AsyncExitStack, launch: Launch, log: Path) -> StdioPeer:
    return await stack.enter_async_context(spawn(launch.command, log, launch.env, launch.cwd))


async def _timed(call: Callable[[], Awaitable[object]]) -> float:
    with anyio.fail_after(CALL_TIMEOUT_S):
        started = time.perf_counter()
        await call()
        return round((time.perf_counter() - started) * 1000, 3)


async def _small(tree: Tree, up: Upstreams, run: Path, options: GuardOptions) -> dict[str, Any]:
    config = _config(run / "router.json", up.servers, run.parent / f"cache-{tree.label}", 120.0)
    launch = tree.launch(config)
    async with AsyncExitStack() as stack:
        with anyio.fail_after(START_TIMEOUT_S):
            router = await _open(stack, launch, run / "router.log")
            await router.initialize()
            initialize_s = time.perf_counter() - router.spawned
            answer = await router.call("search_tools", {"query": up.query})
            search_s = time.perf_counter() - router.spawned
            top = systems.top_tool(answer)
            direct = await _open(
                stack, systems.upstream_launch(up.servers[up.server]), run / "direct.log"
            )
            await direct.initialize()
        qualified = systems.router_name(up.server, up.tool)
        paths = [
            ("router", lambda: router.call(qualified, up.arguments)),
            ("direct", lambda: direct.call(up.tool, up.arguments)),
        ]
        timed: dict[str, list[float]] = {"router": [], "direct": []}
        for index in range(options.call_warmup + options.calls):
            for name, call in paths if index % 2 == 0 else paths[::-1]:
                ms = await _timed(call)
                if index >= options.call_warmup:
                    timed[name].append(ms)
        rss = router.rss_mb()
    return {
        "initialize_s": round(initialize_s, 3),
        "first_search_s": round(search_s, 3),
        "top_tool": top,
        "correct": top == up.expected,
        "router_call_ms": timed["router"],
        "direct_call_ms": timed["direct"],
        "rss_mb": rss,
    }


def small_session(tree: Tree, up: Upstreams, run: Path, options: GuardOptions) -> dict[str, Any]:
    """Start-up, first search, call overhead and RSS of `tree` in front of `up`."""
    run.mkdir(parents=True)
    result: dict[str, Any] = anyio.run(_small, tree, up, run, options)
    return result


async def _catalog(
    tree: Tree, catalog: Path, queries: Sequence[str], run: Path, cache: Path
) -> dict[str, Any]:
    entry = {
        "command": sys.executable,
        "args": [str(systems.HERE / "catalog_server.py"), str(catalog)],
    }
    config = _config(run / "router.json", {"catalog": entry}, cache, INDEX_TIMEOUT_S)
    launch = tree.launch(config)
    with anyio.fail_after(INDEX_TIMEOUT_S + 300):
        async with spawn(launch.command, run / "router.log", launch.env, launch.cwd) as peer:
            await peer.initialize()
            first = await peer.call("search_tools", {"query": queries[0]})
            indexed_s = time.perf_counter() - peer.spawned
            structured = first.get("structuredContent")
            found = structured if isinstance(structured, Mapping) else {}
            for query in queries[:SEARCH_WARMUP]:
                await peer.call("search_tools", {"query": query})
            ms = []
            for query in queries:
                ms.append(await _timed(partial(peer.call, "search_tools", {"query": query})))
            return {
                "indexed_s": round(indexed_s, 3),
                "indexed_tools": found.get("indexed"),
                "search_ms": ms,
                "rss_mb": peer.rss_mb(),
                "peak_mb": peer.peak_rss_mb(),
            }


def catalog_session(
    tree: Tree, catalog: Path, queries: Sequence[str], run: Path, cache: Path
) -> dict[str, Any]:
    """Search latency and RSS of `tree` in front of `catalog` (served by catalog_server.py),
    its embedding cache in `cache`."""
    run.mkdir(parents=True)
    result: dict[str, Any] = anyio.run(_catalog, tree, catalog, queries, run, cache)
    return result


def _percentile(values: Sequence[float], q: float) -> float:
    return round(float(np.percentile(np.asarray(values, dtype=np.float64), q)), 3)


def _median(values: Sequence[float]) -> float:
    return round(statistics.median(values), 3)


def figures(rounds: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """A tree's figures over its measured rounds: medians of per-round readings, and
    percentiles over every round's timed calls and searches together."""
    found: dict[str, Any] = {"rounds": len(rounds)}
    small = [r["small"] for r in rounds if "small" in r]
    if small:
        router = [ms for s in small for ms in s["router_call_ms"]]
        direct = [ms for s in small for ms in s["direct_call_ms"]]
        found |= {
            "initialize_s": _median([s["initialize_s"] for s in small]),
            "first_search_s": _median([s["first_search_s"] for s in small]),
            "first_search_right": all(s["correct"] for s in small),
            "call_p50_ms": _percentile(router, 50),
            "upstream_call_p50_ms": _percentile(direct, 50),
            "call_overhead_ms": round(_percentile(router, 50) - _percentile(direct, 50), 3),
            "rss_mb": _median([s["rss_mb"] for s in small]),
        }
    catalog = [r["catalog"] for r in rounds if "catalog" in r]
    if catalog:
        searches = [ms for c in catalog for ms in c["search_ms"]]
        found |= {
            "searches": len(searches),
            "search_p50_ms": _percentile(searches, 50),
            "search_p95_ms": _percentile(searches, 95),
            "catalog_rss_mb": _median([c["rss_mb"] for c in catalog]),
            "catalog_peak_mb": _median([c["peak_mb"] for c in catalog]),
        }
    return found
