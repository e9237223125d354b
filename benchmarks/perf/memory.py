"""Resident memory of a stdio MCP server process (not its children), once it has indexed.

The first search sent after `initialize` waits for the router's upstreams and its index
(bounded by the router's connect timeout, set high enough for a large catalog); its answer
must cover every upstream. Then a few more searches run, and the process's RSS is read
(steady) with its peak so far (Linux `VmHWM`).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio

from benchmarks.perf import systems
from benchmarks.perf.stdio_rpc import spawn
from benchmarks.perf.systems import Launch

STEADY_QUERIES = (
    "what time is it in Tokyo",
    "read a file from disk",
    "commit my changes to git",
    "fetch a web page as markdown",
    "remember that Alice works at Acme",
    "echo a message back",
)


async def resident(launch: Launch, run: Path, searches: int, timeout_s: float) -> dict[str, Any]:
    """Spawn, index (the first search), search `searches` times more, read RSS."""
    with anyio.fail_after(timeout_s):
        async with spawn(launch.command, run / "stderr.log", launch.env, launch.cwd) as peer:
            await peer.initialize()
            first = await peer.call("search_tools", {"query": systems.QUERY})
            ready_s = time.perf_counter() - peer.spawned
            structured = first.get("structuredContent")
            found = structured if isinstance(structured, Mapping) else {}
            # every upstream up and in the index: none starting, none down
            complete = bool(found) and not found.get("starting") and not found.get("down")
            for i in range(searches):
                query = STEADY_QUERIES[i % len(STEADY_QUERIES)]
                await peer.call("search_tools", {"query": query})
            return {
                "indexed_s": round(ready_s, 3),
                "complete": complete,
                "indexed_tools": found.get("indexed"),
                "down": [f"{d.get('name')}: {d.get('lastError')}" for d in found.get("down", [])],
                "steady_mb": peer.rss_mb(),
                "peak_mb": peer.peak_rss_mb(),
            }


async def measure(
    servers: Mapping[str, Any],
    label: str,
    big: tuple[Path, int] | None,
    scratch: Path,
    backends: Sequence[str],
    fastmcp: bool,
    searches: int,
) -> dict[str, Any]:
    """The router in front of `servers` (called `label`; none: skipped) per backend, cold
    cache then warm; FastMCP's proxy in front of them; and the ONNX router in front of `big`
    (a catalog.jsonl served by `catalog_server.py`, and its tool count), cold then warm."""
    runs: list[dict[str, Any]] = []

    async def router(
        label: str, served: Mapping[str, Any], backend: str, connect: float, limit_s: float
    ) -> None:
        cache = scratch / f"{label}-{backend}-cache"
        for state in ("cold", "warm"):
            run = scratch / f"{label}-{backend}-{state}"
            model = systems.BACKENDS[backend]
            launch = systems.router_launch(served, run / "router.json", model, cache, connect)
            figures = await resident(launch, run, searches, limit_s)
            runs.append(
                {"system": f"router-{backend}", "upstreams": label, "cache": state, **figures}
            )

    if servers:
        for backend in backends:
            await router(label, servers, backend, 120.0, 300.0)
        if fastmcp:
            run = scratch / f"{label}-fastmcp"
            launch = systems.fastmcp_launch(servers, run / "fastmcp.json")
            figures = await resident(launch, run, searches, 600.0)
            runs.append({"system": "fastmcp-proxy", "upstreams": label, "cache": None, **figures})
    if big is not None:
        path, count = big
        script = str(systems.HERE / "catalog_server.py")
        entry = {"command": sys.executable, "args": [script, str(path)]}
        await router(f"catalog-{count}", {"catalog": entry}, "onnx", 3600.0, 3900.0)
    return {"searches_after_index": searches, "runs": runs}
