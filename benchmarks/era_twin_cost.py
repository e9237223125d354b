"""What a handshake-era twin connection costs (`router/upstream/connection/twins.py`).

    python -m benchmarks.era_twin_cost            # writes benchmarks/results/era-twin.json

An HTTP front (`mcp-router serve --http`, BM25 only) in front of one remote upstream written
the ordinary SDK way (`tests/upstreams/session_asking.py` over streamable HTTP). A 2026-07-28
host calls a tool first (the modern connection only), then a host on 2025-11-25 calls one
that samples mid-call, which opens the twin. The router's and the upstream's resident memory
(VmRSS) and open file descriptors are read from /proc before and after the twin, a few times
each; the figures are the medians and their difference. With one host (stdio) there is no
twin: the one connection mirrors the host's era, so the cost is nil there.
"""

from __future__ import annotations

import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from benchmarks.provenance import head_commit

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "era-twin.json"
UPSTREAM = ROOT / "tests" / "upstreams" / "session_asking.py"
SAMPLES = 5


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _proc(pid: int) -> tuple[float, int]:
    """(resident MiB, open file descriptors) of a process."""
    status = Path(f"/proc/{pid}/status").read_text()
    rss_kb = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS"))
    return rss_kb / 1024, len(os.listdir(f"/proc/{pid}/fd"))


def _median(pid: int) -> dict[str, float]:
    readings = []
    for _ in range(SAMPLES):
        readings.append(_proc(pid))
        time.sleep(0.2)  # a benchmark's settling pause between readings, not a test wait
    return {
        "rss_mib": round(statistics.median(r[0] for r in readings), 1),
        "fds": statistics.median(r[1] for r in readings),
    }


async def _sample(
    context: Any, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text="a summary"), model="host"
    )


async def _call(url: str, mode: str, tool: str, arguments: dict[str, Any]) -> str:
    async with httpx2.AsyncClient(timeout=60) as http:
        client = Client(
            streamable_http_client(url, http_client=http), mode=mode, sampling_callback=_sample
        )
        async with client:
            result = await client.call_tool(tool, arguments)
    block = result.content[0]
    return block.text if isinstance(block, types.TextContent) else ""


def _wait_for(url: str, limit: float = 60.0) -> None:
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        try:
            if httpx2.get(url, timeout=2).status_code == 200:
                return
        except httpx2.HTTPError:
            pass
        time.sleep(0.2)
    raise SystemExit(f"{url} did not answer within {limit:g}s")


def main() -> int:
    upstream_port, router_port = _free_port(), _free_port()
    upstream = subprocess.Popen(
        [sys.executable, str(UPSTREAM), "streamable-http", str(upstream_port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    with tempfile.TemporaryDirectory() as scratch:
        config = Path(scratch) / "servers.json"
        config.write_text(
            json.dumps(
                {
                    "mcpServers": {"asking": {"url": f"http://127.0.0.1:{upstream_port}/mcp"}},
                    "router": {"mode": "all", "cache_dir": str(Path(scratch) / "cache")},
                }
            )
        )
        router = subprocess.Popen(
            [
                *(sys.executable, "-m", "router", "serve", "--http", "--bm25-only"),
                *("--port", str(router_port), "--config", str(config)),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            base = f"http://127.0.0.1:{router_port}"
            _wait_for(f"{base}/healthz")
            mcp = f"{base}/mcp"
            modern = anyio.run(_call, mcp, "2026-07-28", "asking__declared", {})
            before = {"router": _median(router.pid), "upstream": _median(upstream.pid)}
            asked = anyio.run(_call, mcp, "legacy", "asking__summarize", {"text": "x"})
            after = {"router": _median(router.pid), "upstream": _median(upstream.pid)}
        finally:
            router.terminate()
            upstream.terminate()
            router.wait(10)
            upstream.wait(10)
    if not asked.startswith("model said"):
        raise SystemExit(f"the handshake-era call did not reach the host: {asked!r}")
    result = {
        "schema": "mcp-router.era-twin/1",
        "commit": head_commit(),
        "when": datetime.now(UTC).isoformat(timespec="seconds"),
        "modern_host_saw": modern,
        "handshake_host_got": asked,
        "before_twin": before,
        "with_twin": after,
        "cost": {
            side: {key: round(after[side][key] - before[side][key], 1) for key in after[side]}
            for side in after
        },
    }
    OUT.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(result["cost"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
