"""Start-up: seconds from spawning a system to its `initialize` answer, and to the answer of
a search sent right after it (no polling), which must rank `time__get_current_time` first.

Systems: the router on each embedding backend with a warm embedding cache (one shared
folder, filled by the unmeasured warm-up round) and a cold one (a new folder every run);
FastMCP's proxy with its BM25 search; the upstreams alone (all spawned at once: the time
until the last one answers `initialize` is the floor any gateway in front of them pays).
Runs go round by round, every system once a round, so they share the machine's load.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from benchmarks.perf import systems
from benchmarks.perf.figures import median
from benchmarks.perf.stdio_rpc import spawn
from benchmarks.perf.systems import Launch

RUN_TIMEOUT_S = 300.0


@dataclass(frozen=True, slots=True)
class System:
    name: str
    launches: Callable[[Path], Sequence[Launch]]
    """The child processes of one run, given that run's fresh scratch folder."""
    expected: str | None
    """The tool its search must rank first; None: it has no search (an upstream alone)."""


def systems_for(
    servers: Mapping[str, Any], scratch: Path, backends: Sequence[str], fastmcp: bool
) -> list[System]:
    found: list[System] = []
    for backend in backends:
        model = systems.BACKENDS[backend]
        warm_cache = scratch / f"warm-cache-{backend}"

        def warm(run: Path, model: str = model, cache: Path = warm_cache) -> list[Launch]:
            return [systems.router_launch(servers, run / "router.json", model, cache)]

        def cold(run: Path, model: str = model) -> list[Launch]:
            return [systems.router_launch(servers, run / "router.json", model, run / "cache")]

        expected = systems.router_name("time", "get_current_time")
        found += [
            System(f"router-{backend}-warm", warm, expected),
            System(f"router-{backend}-cold", cold, expected),
        ]
    if fastmcp:
        found.append(
            System(
                "fastmcp-proxy",
                lambda run: [systems.fastmcp_launch(servers, run / "fastmcp.json")],
                systems.fastmcp_name(servers, "time", "get_current_time"),
            )
        )
    launches = [systems.upstream_launch(entry) for entry in servers.values()]
    found.append(System("direct", lambda run: launches, None))
    return found


async def _one(launch: Launch, run: Path, expected: str | None) -> dict[str, Any]:
    async with spawn(launch.command, run / "stderr.log", launch.env, launch.cwd) as peer:
        await peer.initialize()
        sample: dict[str, Any] = {"initialize_s": time.perf_counter() - peer.spawned}
        if expected is not None:
            answer = await peer.call("search_tools", {"query": systems.QUERY})
            sample["search_s"] = time.perf_counter() - peer.spawned
            sample["top_tool"] = systems.top_tool(answer)
        sample["spawned"] = peer.spawned
        return sample


async def _sample(system: System, run: Path) -> dict[str, Any]:
    launches = system.launches(run)
    results: list[dict[str, Any]] = []

    async def start(launch: Launch) -> None:
        results.append(await _one(launch, run, system.expected))

    with anyio.fail_after(RUN_TIMEOUT_S):
        async with anyio.create_task_group() as group:
            for launch in launches:
                group.start_soon(start, launch)
    first_spawn = min(r["spawned"] for r in results)
    sample = {
        "initialize_s": round(
            max(r["initialize_s"] + r["spawned"] for r in results) - first_spawn, 3
        )
    }
    if system.expected is not None:
        (result,) = results
        sample |= {"search_s": round(result["search_s"], 3), "top_tool": result["top_tool"]}
    return sample


async def measure(
    servers: Mapping[str, Any],
    scratch: Path,
    backends: Sequence[str],
    fastmcp: bool,
    runs: int,
    warmup: int,
) -> dict[str, Any]:
    """Medians over `runs` rounds after `warmup` unmeasured ones."""
    chosen = systems_for(servers, scratch, backends, fastmcp)
    samples: dict[str, list[dict[str, Any]]] = {s.name: [] for s in chosen}
    for round_index in range(warmup + runs):
        for system in chosen:
            run = scratch / f"{system.name}-{round_index}"
            run.mkdir(parents=True)
            sample = await _sample(system, run)
            if round_index >= warmup:
                samples[system.name].append(sample)
    report: dict[str, Any] = {}
    for system in chosen:
        taken = samples[system.name]
        entry: dict[str, Any] = {
            "initialize_s": median([s["initialize_s"] for s in taken]),
        }
        if system.expected is not None:
            tops = [s["top_tool"] for s in taken]
            entry |= {
                "search_s": median([s["search_s"] for s in taken]),
                "expected": system.expected,
                "top_tools": tops,
                "correct": all(t == system.expected for t in tops),
            }
        entry["samples"] = taken
        report[system.name] = entry
    return {"upstreams": sorted(servers), "runs": runs, "warmup": warmup, "systems": report}
