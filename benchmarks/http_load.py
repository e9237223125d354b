"""Throughput and latency of the HTTP front under 20 concurrent clients on loopback.

    python -m benchmarks.http_load [--clients 20] [--duration 10] [--skip-model]

`mcp-router serve --http` runs as a child process in front of the example servers
(`examples/servers.json`, 51 tools; `scripts/install-example-servers.sh` installs them).
Three loads, one after the other, each bounded in time (and the SDK one in calls):

- `POST /v1/route` with wrk (Debian's `wrk` package): `--clients` connections, ten plain-words
  tasks and the three formats in turn, k = 5; against the router with its embedding model
  (hybrid ranking, the default) and with `--bm25-only`;
- `tools/call` through `/mcp` with `--clients` SDK `Client`s in one anyio process, each its
  own session (`mode="legacy"`, 2025-11-25) or stateless (`mode="auto"`: 2026-07-28), each
  calling `call_tool` -> `everything__echo` in a loop;
- the same `tools/call` through `/mcp` with wrk: raw JSON-RPC POSTs spread over `--clients`
  sessions opened beforehand (the router's capacity without the Python client's cost).

A request fails on a transport error, a non-2xx status, or (for tools/call) an answer that
is not the echo. Writes `benchmarks/results/http-load.json`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.example_servers import example_config
from benchmarks.listing_tokens import QUERIES
from benchmarks.provenance import head_commit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "http-load.json"
LUA = HERE / "wrk"
ECHO = {"name": "everything__echo", "arguments": {"message": "load"}}
MAX_CALLS_PER_CLIENT = 2000


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def spawned(
    config: Path, *, bm25_only: bool, log: Path
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`mcp-router serve --http` on a free port, ready (`/healthz` 200); yields its URL and
    its process, and stops it on exit."""
    port = free_port()
    command = [sys.executable, "-m", "router", "serve", "--http", "--port", str(port)]
    command += ["--config", str(config), *(["--bm25-only"] if bm25_only else [])]
    with log.open("ab") as stderr:
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=stderr, cwd=ROOT)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:  # a child process offers no readiness event: poll /healthz
            try:
                if httpx2.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline or process.poll() is not None:
                raise SystemExit(f"the router did not become ready; see {log}")
            time.sleep(0.2)
        yield url, process
    finally:
        process.terminate()
        process.wait(timeout=30)


@contextmanager
def router(config: Path, *, bm25_only: bool, log: Path) -> Iterator[str]:
    """`spawned`, warmed up (each task once per format through `/v1/route`); yields its URL."""
    with spawned(config, bm25_only=bm25_only, log=log) as (url, _):
        for fmt in ("mcp", "openai", "anthropic"):  # warm-up: first model call, token counts
            for query in QUERIES:
                body = {"query": query, "k": 5, "format": fmt}
                httpx2.post(f"{url}/v1/route", json=body, timeout=30).raise_for_status()
        yield url


def wrk(script: str, url: str, clients: int, duration: int, *args: str) -> dict[str, Any]:
    """One wrk run; its Lua `done()` prints the summary as one JSON line."""
    command = ["wrk", f"-t{min(2, clients)}", f"-c{clients}", f"-d{duration}s", "--latency"]
    command += ["-s", str(LUA / script), url, "--", *args]
    done = subprocess.run(
        command, capture_output=True, text=True, check=True, timeout=duration + 60
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("WRK_JSON "))
    raw = json.loads(line.removeprefix("WRK_JSON "))
    seconds = raw["duration_us"] / 1e6
    failed = sum(raw["errors"].values()) + raw["bad_bodies"]
    return {
        "tool": "wrk",
        "clients": clients,
        "duration_s": round(seconds, 2),
        "requests": raw["requests"],
        "failed": failed,
        "errors": {**raw["errors"], "bad_bodies": raw["bad_bodies"]},
        "throughput_rps": round(raw["requests"] / seconds, 1),
        "latency_ms": {k: round(v / 1000, 2) for k, v in raw["latency_us"].items()},
    }


async def open_sessions(url: str, count: int) -> list[str]:
    """`count` streamable-HTTP sessions, handshake done, for the raw wrk load on /mcp."""
    headers = {"Accept": "application/json, text/event-stream"}
    initialize = {
        "jsonrpc": "2.0",
        "id": 0,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "http-load", "version": "0"},
        },
    }
    sessions = []
    async with httpx2.AsyncClient(timeout=30) as http:
        for _ in range(count):
            answer = await http.post(f"{url}/mcp", json=initialize, headers=headers)
            session = answer.headers["mcp-session-id"]
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(
                f"{url}/mcp", json=initialized, headers={**headers, "mcp-session-id": session}
            )
            sessions.append(session)
    return sessions


@asynccontextmanager
async def sdk_client(url: str, mode: str) -> AsyncIterator[Client]:
    async with Client(streamable_http_client(url), mode=mode) as client:
        yield client


async def sdk_load(url: str, clients: int, duration: int, mode: str) -> dict[str, Any]:
    """`clients` SDK clients calling `call_tool` -> echo in a loop for `duration` seconds."""
    latencies: list[float] = []
    failed = 0
    ready = anyio.Event()
    connected = 0

    async def one() -> None:
        nonlocal failed, connected
        async with sdk_client(f"{url}/mcp", mode) as client:
            for _ in range(3):  # warm-up: the connection and the session
                await client.call_tool("call_tool", ECHO)
            connected += 1
            if connected == clients:
                ready.set()
            await ready.wait()
            stop = time.perf_counter() + duration
            for _ in range(MAX_CALLS_PER_CLIENT):
                began = time.perf_counter()
                if began > stop:
                    break
                try:
                    result = await client.call_tool("call_tool", ECHO)
                    ok = not result.is_error and "Echo: load" in str(result.content)
                except Exception:
                    ok = False
                latencies.append(time.perf_counter() - began)
                failed += not ok

    with anyio.fail_after(duration + 120):
        async with anyio.create_task_group() as group:
            for _ in range(clients):
                group.start_soon(one)
            await ready.wait()
            began = time.perf_counter()
        took = time.perf_counter() - began
    cut = statistics.quantiles(latencies, n=100)
    return {
        "tool": f"anyio script, {clients} SDK clients (mode={mode})",
        "clients": clients,
        "duration_s": round(took, 2),
        "requests": len(latencies),
        "failed": failed,
        "throughput_rps": round(len(latencies) / took, 1),
        "latency_ms": {
            "p50": round(statistics.median(latencies) * 1000, 2),
            "p90": round(cut[89] * 1000, 2),
            "p99": round(cut[98] * 1000, 2),
            "max": round(max(latencies) * 1000, 2),
            "mean": round(statistics.fmean(latencies) * 1000, 2),
        },
    }


def measure(clients: int, duration: int, skip_model: bool, scratch: Path) -> dict[str, Any]:
    config = scratch / "servers.json"
    data = example_config(scratch)
    config.write_text(json.dumps(data), encoding="utf-8")
    log = scratch / "router.log"
    runs: dict[str, Any] = {}
    queries = [*QUERIES]
    if not skip_model:
        with router(config, bm25_only=False, log=log) as url:
            runs["route_hybrid"] = wrk("route.lua", f"{url}/v1/route", clients, duration, *queries)
            runs["mcp_call_sdk_legacy"] = anyio.run(sdk_load, url, clients, duration, "legacy")
            runs["mcp_call_sdk_auto"] = anyio.run(sdk_load, url, clients, duration, "auto")
            sessions = anyio.run(open_sessions, url, clients)
            threads = str(min(2, clients))
            runs["mcp_call_wrk"] = wrk(
                "mcp_call.lua", f"{url}/mcp", clients, duration, threads, *sessions
            )
    with router(config, bm25_only=True, log=log) as url:
        runs["route_bm25"] = wrk("route.lua", f"{url}/v1/route", clients, duration, *queries)
    return {"servers": sorted(data["mcpServers"]), "runs": runs}


NOTES = {
    "route_hybrid": "POST /v1/route, k=5, formats mcp/openai/anthropic in turn; embedding model "
    "loaded (hybrid: query embedding + BM25 + fusion)",
    "route_bm25": "POST /v1/route as above, router started with --bm25-only",
    "mcp_call_sdk_legacy": "tools/call call_tool -> everything__echo (stdio upstream) through "
    "/mcp; one streamable-HTTP session per SDK client (2025-11-25)",
    "mcp_call_sdk_auto": "as above with the SDK's default mode: 2026-07-28, no session",
    "mcp_call_wrk": "the same tools/call as raw JSON-RPC POSTs (SSE answers) over pre-opened "
    "sessions, from wrk",
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.http_load")
    parser.add_argument("--clients", type=int, default=20)
    parser.add_argument("--duration", type=int, default=10, help="seconds per load")
    parser.add_argument("--skip-model", action="store_true", help="only the BM25-only router")
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    if shutil.which("wrk") is None:
        raise SystemExit("wrk is missing: apt-get install wrk")
    with tempfile.TemporaryDirectory(prefix="http-load-") as scratch:
        measured = measure(args.clients, args.duration, args.skip_model, Path(scratch))
    result = {
        "benchmark": "http-load",
        "method": "router child process and load generator on one machine, loopback; each "
        "load after the previous one; wrk -t2 --latency; latency per request",
        "commit": head_commit(),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
        "notes": {k: v for k, v in NOTES.items() if k in measured["runs"]},
        **measured,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    for name, run in measured["runs"].items():
        latency = run["latency_ms"]
        print(
            f"{name:<20} {run['throughput_rps']:>8.1f} req/s  p50 {latency['p50']:>7.2f} ms  "
            f"p99 {latency['p99']:>7.2f} ms  {run['requests']:>6} requests, {run['failed']} failed"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
