"""Lazy upstreams against eager ones, and the config applied while serving (issue 24).

    python -m benchmarks.lazy_start          # writes benchmarks/results/lazy-start.json
    python -m benchmarks.lazy_start --sizes 6  # one size only

`mcp-router serve` over stdio, the default model (onnxruntime), in front of 6 and of 20 real
stdio servers from PyPI (mcp-server-time, mcp-server-git, mcp-server-fetch in turn, each
installed by scripts/install-test-servers.sh into .cache/servers), every one under its own
name. One untimed run per size first warms the embedding cache and the listing cache; then
each start setting (`router.start`: eager, lazy) is measured on the warm caches:

- spawn to the first right search: the router spawned, `initialize`, `search_tools("what
  time is it in Tokyo")` answered with a `get_current_time` first;
- the router's child processes at that moment, and the resident memory (VmRSS) of the router
  and of its children then;
- the first call of a server not started yet (`git_status` of the last git server):
  the call's round trip, and the children after it;
- the idle stop (lazy only; `timeouts.idle` set to IDLE_SECONDS): from the end of that call
  to the exit of its server's process;
- reload: a new server (never listed before) written into the config file, to the first
  search that ranks its tool first (searches sent one after another from the edit on).

Each figure is the median of REPEAT runs (`--repeat`) on a shared machine: read them as
sizes, not as precise timings; every run is kept in the result file under `samples`.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
from anyio.streams.buffered import BufferedByteReceiveStream

from benchmarks.provenance import head_commit
from benchmarks.suite.readme import replace_between
from router.upstream.listing.cache import ListingCache

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "lazy-start.json"
README = HERE / "README.md"
START, END = "<!-- lazy-start:start -->", "<!-- lazy-start:end -->"
SERVERS = Path(os.environ.get("MCP_ROUTER_SERVERS_DIR", ROOT / ".cache" / "servers"))
SIZES = (6, 20)
IDLE_SECONDS = 2.0
REPEAT = 3
LIMIT = 180.0
TOKYO = "what time is it in Tokyo"


def server_entries(count: int) -> dict[str, dict[str, Any]]:
    """`count` real stdio servers: time, git and fetch in turn, each its own name."""
    kinds: dict[str, dict[str, Any]] = {
        "time": {"command": str(SERVERS / "time" / "bin" / "mcp-server-time")},
        "git": {
            "command": str(SERVERS / "git" / "bin" / "mcp-server-git"),
            "args": ["--repository", str(ROOT)],
        },
        "fetch": {"command": str(SERVERS / "fetch" / "bin" / "mcp-server-fetch")},
    }
    for entry in kinds.values():
        if not Path(entry["command"]).exists():
            raise SystemExit(f"{entry['command']} is missing: run scripts/install-test-servers.sh")
    order = list(kinds)
    return {f"{order[i % 3]}{i // 3 + 1}": dict(kinds[order[i % 3]]) for i in range(count)}


def write(path: Path, servers: dict[str, dict[str, Any]], router: dict[str, Any]) -> None:
    scratch = path.with_name(path.name + ".tmp")
    scratch.write_text(json.dumps({"mcpServers": servers, "router": router}), encoding="utf-8")
    os.replace(scratch, path)


def children(pid: int) -> list[int]:
    """Every descendant of `pid` (Linux /proc)."""
    parents: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found, frontier = [], [pid]
    while frontier:
        parent = frontier.pop()
        kids = [p for p, pp in parents.items() if pp == parent]
        found += kids
        frontier += kids
    return found


def rss_mib(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0
    kb = next((int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS")), 0)
    return kb / 1024


class Router:
    """`mcp-router serve` spoken to in raw JSON-RPC lines."""

    def __init__(self, process: anyio.abc.Process) -> None:
        assert process.stdin is not None and process.stdout is not None
        self.process = process
        self._stdin = process.stdin
        self._stdout = BufferedByteReceiveStream(process.stdout)
        self._id = 0

    async def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._id += 1
        message = {"jsonrpc": "2.0", "id": self._id, "method": method, "params": params}
        await self._stdin.send(json.dumps(message).encode() + b"\n")
        while True:
            answer = json.loads(await self._stdout.receive_until(b"\n", 1 << 26))
            if answer.get("id") == self._id:
                result: dict[str, Any] = answer["result"]
                return result

    async def initialize(self) -> None:
        await self.request(
            "initialize",
            {
                "protocolVersion": "2025-11-25",
                "capabilities": {},
                "clientInfo": {"name": "lazy-start-bench", "version": "0"},
            },
        )
        note = {"jsonrpc": "2.0", "method": "notifications/initialized"}
        await self._stdin.send(json.dumps(note).encode() + b"\n")

    async def search(self, query: str) -> list[str]:
        """The names `search_tools` ranks, best first."""
        params = {"name": "search_tools", "arguments": {"query": query}}
        result = await self.request("tools/call", params)
        return [tool["name"] for tool in result["structuredContent"]["tools"]]

    async def close(self) -> None:
        await self._stdin.aclose()
        with anyio.move_on_after(15):
            await self.process.wait()
        if self.process.returncode is None:
            self.process.kill()
        await self.process.aclose()


async def spawn(config: Path, log: Path) -> Router:
    with log.open("ab") as stderr:
        process = await anyio.open_process(
            [sys.executable, "-m", "router", "serve", "--config", str(config)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=stderr,
            cwd=config.parent,
        )
    return Router(process)


async def exit_of(pid: int) -> float:
    """When process `pid` exits (monotonic time), seen through its pidfd."""
    import select

    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        return time.monotonic()
    try:
        while not (await anyio.to_thread.run_sync(select.select, [descriptor], [], [], 1.0))[0]:
            pass
        return time.monotonic()
    finally:
        os.close(descriptor)


async def measure(folder: Path, size: int, start: str) -> dict[str, Any]:
    servers = server_entries(size)
    router_settings = {
        "cache_dir": str(folder / "cache"),
        "start": start,
        "timeouts": {"idle": IDLE_SECONDS},
    }
    config = folder / "servers.json"
    write(config, servers, router_settings)
    git = [name for name in servers if name.startswith("git")][-1]
    figures: dict[str, Any] = {"servers": size, "start": start}
    began = time.monotonic()
    router = await spawn(config, folder / f"router-{size}-{start}.log")
    try:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            first = next(iter(await router.search(TOKYO)), None)
            figures["first_search_s"] = round(time.monotonic() - began, 3)
            figures["first_search_tool"] = first
            figures["first_search_right"] = bool(first and first.endswith("__get_current_time"))
            pid = router.process.pid
            kids = children(pid)
            figures["children_before_call"] = len(kids)
            figures["rss_router_mib"] = round(rss_mib(pid), 1)
            figures["rss_children_mib"] = round(sum(rss_mib(k) for k in kids), 1)
            before = set(kids)
            called = time.monotonic()
            result = await router.request(
                "tools/call",
                {"name": f"{git}__git_status", "arguments": {"repo_path": str(ROOT)}},
            )
            ended = time.monotonic()
            figures["first_call"] = f"{git}__git_status"
            figures["first_call_s"] = round(ended - called, 3)
            figures["first_call_ok"] = result.get("isError") is False
            after = children(pid)
            figures["children_after_call"] = len(after)
            if start == "lazy":
                for started in [k for k in after if k not in before][:1]:
                    figures["idle_stop_s"] = round(await exit_of(started) - ended, 3)
                    figures["idle_seconds"] = IDLE_SECONDS
            added = f"added_{start}"
            # never listed before, in every repeat: it starts, as a new server does
            ListingCache(folder / "cache").forget(added)
            edited = time.monotonic()
            write(config, {**servers, added: server_entries(1)["time1"]}, router_settings)
            query = f"{TOKYO} with {added}"
            while not any(name.startswith(f"{added}__") for name in await router.search(query)):
                pass
            figures["reload_s"] = round(time.monotonic() - edited, 3)
    finally:
        await router.close()
    return figures


async def warm(folder: Path, size: int) -> None:
    """Untimed: every server listed once (listing cache) and every tool embedded."""
    config = folder / "servers.json"
    write(config, server_entries(size), {"cache_dir": str(folder / "cache"), "start": "eager"})
    router = await spawn(config, folder / f"router-{size}-warm.log")
    try:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            await router.search(TOKYO)
    finally:
        await router.close()


def median(samples: list[dict[str, Any]]) -> dict[str, Any]:
    """One run's figures from several: the median of each number, every flag held by all."""
    merged: dict[str, Any] = {}
    for key, first in samples[0].items():
        values = [sample[key] for sample in samples if key in sample]
        if isinstance(first, bool):
            merged[key] = all(values)
        elif isinstance(first, int | float) and key not in ("servers", "idle_seconds"):
            merged[key] = statistics.median(values)
        else:
            merged[key] = first
    merged["samples"] = len(samples)
    return merged


async def main(sizes: tuple[int, ...], repeat: int = REPEAT) -> dict[str, Any]:
    runs, samples = [], []
    with tempfile.TemporaryDirectory(prefix="lazy-start-") as scratch:
        for size in sizes:
            folder = Path(scratch) / f"n{size}"
            folder.mkdir()
            await warm(folder, size)
            for start in ("eager", "lazy"):
                taken = []
                for _ in range(repeat):
                    figures = await measure(folder, size, start)
                    print(json.dumps(figures), file=sys.stderr)
                    taken.append(figures)
                samples += taken
                runs.append(median(taken))
    return {
        "benchmark": "lazy_start",
        "commit": head_commit(),
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "cpus": os.cpu_count(),
        "query": TOKYO,
        "servers": "mcp-server-time, mcp-server-git, mcp-server-fetch in turn (stdio)",
        "runs": runs,
        "samples": samples,
    }


def markdown(report: dict[str, Any]) -> str:
    """The table of benchmarks/README.md, from a result file."""
    lines = [
        f"`python -m benchmarks.lazy_start` at {report['commit'] or 'an uncommitted tree'}, "
        f"{report['date']}, {report['cpus']} CPUs (shared); {report['servers']}; the default "
        "model, warm embedding and listing caches; each figure the median of "
        f"{report['runs'][0].get('samples', 1)} runs.",
        "",
        "| servers | start | spawn to first right search | children before the first call "
        "| router RSS | children RSS | first call of a server not started | children after it "
        "| idle stop | config edit to searchable |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for run in report["runs"]:
        right = "" if run["first_search_right"] else " (wrong tool)"
        idle = (
            f"{run['idle_stop_s']:.1f} s (idle time {run['idle_seconds']:g} s)"
            if "idle_stop_s" in run
            else "-"
        )
        lines.append(
            f"| {run['servers']} | {run['start']} | {run['first_search_s']:.2f} s{right} "
            f"| {run['children_before_call']} | {run['rss_router_mib']:.0f} MiB "
            f"| {run['rss_children_mib']:.0f} MiB | {run['first_call_s']:.2f} s "
            f"| {run['children_after_call']} | {idle} | {run['reload_s']:.2f} s |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES))
    parser.add_argument("--repeat", type=int, default=REPEAT)
    parser.add_argument("--out", type=Path, default=OUT)
    options = parser.parse_args()
    report = anyio.run(main, tuple(options.sizes), options.repeat)
    options.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    if options.out == OUT:
        text = README.read_text(encoding="utf-8")
        README.write_text(replace_between(text, START, END, markdown(report)), encoding="utf-8")
    print(f"wrote {options.out}", file=sys.stderr)
