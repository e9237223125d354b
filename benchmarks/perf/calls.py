"""Call overhead: `tools/call` of time's `get_current_time` and everything's `echo`, to the
upstream directly, through the router (by qualified name, and inside `call_tool`) and
through FastMCP's proxy (by name, and inside its `call_tool`), interleaved call by call as
`benchmarks/forwarding_latency.py` does, so every path sees the same machine load.

One bare JSON-RPC client (`stdio_rpc`) drives every path; each round of calls runs them in
a new seeded order, so no path always runs right after the same other one. The router (default
ONNX backend) fronts both upstreams; FastMCP gets one proxy per upstream, its fastest form (a
lone server's session is reused; with several servers it rebuilds its composite of all of
them for every request), and that several-server form is timed on a few calls apart.
"""

from __future__ import annotations

import random
import time
from collections.abc import Awaitable, Callable, Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from benchmarks.perf import systems
from benchmarks.perf.figures import latency
from benchmarks.perf.stdio_rpc import StdioPeer, spawn
from benchmarks.perf.systems import Launch

START_TIMEOUT_S = 120.0
CALL_TIMEOUT_S = 60.0


@dataclass(frozen=True, slots=True)
class Target:
    server: str
    tool: str
    arguments: dict[str, Any]


TARGETS = (
    Target("time", "get_current_time", {"timezone": "Asia/Tokyo"}),
    Target("everything", "echo", {"message": "hello"}),
)
PATHS = ("direct", "router", "router_call_tool", "fastmcp", "fastmcp_call_tool")
Call = Callable[[], Awaitable[object]]


async def _open(stack: AsyncExitStack, launch: Launch, log: Path) -> StdioPeer:
    peer = await stack.enter_async_context(spawn(launch.command, log, launch.env, launch.cwd))
    await peer.initialize()
    return peer


def _paths(
    target: Target, direct: StdioPeer, router: StdioPeer, fastmcp: StdioPeer | None
) -> dict[str, Call]:
    qualified = systems.router_name(target.server, target.tool)
    args = target.arguments

    def via(peer: StdioPeer, name: str) -> Call:
        return lambda: peer.call("call_tool", {"name": name, "arguments": args})

    paths: dict[str, Call] = {
        "direct": lambda: direct.call(target.tool, args),
        "router": lambda: router.call(qualified, args),
        "router_call_tool": via(router, qualified),
    }
    if fastmcp is not None:
        paths["fastmcp"] = lambda: fastmcp.call(target.tool, args)
        paths["fastmcp_call_tool"] = via(fastmcp, target.tool)
    return paths


async def _timed(call: Call) -> float:
    with anyio.fail_after(CALL_TIMEOUT_S):
        started = time.perf_counter()
        await call()
        return (time.perf_counter() - started) * 1000


async def measure(
    servers: Mapping[str, Any],
    scratch: Path,
    calls: int,
    warmup: int,
    fastmcp: bool,
    multi_calls: int,
) -> dict[str, Any]:
    chosen = [t for t in TARGETS if t.server in servers]
    served = {t.server: servers[t.server] for t in chosen}
    log = scratch / "stderr.log"
    samples: dict[tuple[str, str], list[float]] = {}
    async with AsyncExitStack() as stack:
        with anyio.fail_after(START_TIMEOUT_S):
            launch = systems.router_launch(
                served, scratch / "router.json", systems.ONNX, scratch / "cache"
            )
            router = await _open(stack, launch, log)
            await router.call("search_tools", {"query": systems.QUERY})  # waits for the index
            paths: dict[str, dict[str, Call]] = {}
            for t in chosen:
                direct = await _open(stack, systems.upstream_launch(servers[t.server]), log)
                proxy = None
                if fastmcp:
                    alone = {t.server: servers[t.server]}
                    config = scratch / f"fastmcp-{t.server}.json"
                    proxy = await _open(stack, systems.fastmcp_launch(alone, config), log)
                paths[t.server] = _paths(t, direct, router, proxy)
        order = [(s, p, call) for s, by_path in paths.items() for p, call in by_path.items()]
        shuffle = random.Random(0).shuffle
        for round_index in range(warmup + calls):
            # a new order each round: a process that has been idle longer answers slower, so
            # no path may always follow the same one (a slow FastMCP call, say)
            shuffle(order)
            for server, path, call in order:
                ms = await _timed(call)
                if round_index >= warmup:
                    samples.setdefault((server, path), []).append(ms)
    report: dict[str, Any] = {}
    for t in chosen:
        figures = {p: latency(samples[(t.server, p)]) for p in PATHS if (t.server, p) in samples}
        base = figures["direct"]
        report[systems.router_name(t.server, t.tool)] = {
            "arguments": t.arguments,
            "paths": figures,
            "overhead_p50_ms": {
                p: round(f["p50_ms"] - base["p50_ms"], 3)
                for p, f in figures.items()
                if p != "direct"
            },
            "overhead_p99_ms": {
                p: round(f["p99_ms"] - base["p99_ms"], 3)
                for p, f in figures.items()
                if p != "direct"
            },
        }
    result: dict[str, Any] = {"calls": calls, "warmup": warmup, "targets": report}
    if fastmcp and len(served) > 1 and multi_calls:
        result["fastmcp_several_servers"] = await _several(served, chosen[0], scratch, multi_calls)
    return result


async def _several(
    served: Mapping[str, Any], target: Target, scratch: Path, calls: int
) -> dict[str, Any]:
    """FastMCP's proxy in front of all the upstreams at once: a few calls, one warm-up."""
    name = systems.fastmcp_name(served, target.server, target.tool)
    launch = systems.fastmcp_launch(served, scratch / "fastmcp-several.json")
    async with AsyncExitStack() as stack:
        with anyio.fail_after(START_TIMEOUT_S):
            peer = await _open(stack, launch, scratch / "stderr.log")
        await _timed(lambda: peer.call(name, target.arguments))
        ms = [await _timed(lambda: peer.call(name, target.arguments)) for _ in range(calls)]
    return {"servers": sorted(served), "tool": name, **latency(ms)}
