"""A bare JSON-RPC client for one stdio MCP server child: spawn, send, read answers.

No SDK client in the way, so the same few lines measure every system (the router, FastMCP's
proxy, an upstream alone): no re-listing before calls, no output validation, no era probing.
Every wait is bounded by the caller's `anyio.fail_after`.
"""

from __future__ import annotations

import importlib
import json
import subprocess
import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import Process
from anyio.streams.buffered import BufferedByteReceiveStream

PROTOCOL = "2025-06-18"
_MAX_LINE = 1 << 28
_SHUTDOWN_S = 15.0


class RpcError(Exception):
    """The server answered a request with a JSON-RPC error, or went away."""


class StdioPeer:
    """One child process speaking newline-delimited JSON-RPC on its stdin/stdout."""

    def __init__(self, process: Process, spawned: float, log: Path) -> None:
        self.process = process
        self.spawned = spawned
        """`time.perf_counter()` just before the process was spawned."""
        self.log = log
        assert process.stdout is not None and process.stdin is not None
        self._reader = BufferedByteReceiveStream(process.stdout)
        self._next_id = 0

    @property
    def pid(self) -> int:
        return self.process.pid

    async def send(self, message: Mapping[str, Any]) -> None:
        assert self.process.stdin is not None
        await self.process.stdin.send(json.dumps(message).encode() + b"\n")

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> Any:
        """Send one request and return its result (messages without its id are skipped)."""
        self._next_id += 1
        wanted = self._next_id
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": wanted, "method": method}
        if params is not None:
            message["params"] = params
        await self.send(message)
        while True:
            try:
                line = await self._reader.receive_until(b"\n", _MAX_LINE)
            except (anyio.EndOfStream, anyio.IncompleteRead) as exc:
                raise RpcError(f"{method}: the server closed stdout; {self.log_tail()}") from exc
            answer = json.loads(line)
            if answer.get("id") != wanted or "method" in answer:
                continue  # a notification or a request of the server's: not ours
            if "error" in answer:
                raise RpcError(f"{method}: {answer['error']}")
            return answer["result"]

    async def initialize(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "initialize",
            {
                "protocolVersion": PROTOCOL,
                "capabilities": {},
                "clientInfo": {"name": "mcp-router-perf", "version": "1"},
            },
        )
        await self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return result

    async def call(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """`tools/call`; an `isError` result raises."""
        result: dict[str, Any] = await self.request(
            "tools/call", {"name": name, "arguments": dict(arguments)}
        )
        if result.get("isError"):
            raise RpcError(f"{name}: {result.get('content')}")
        return result

    def rss_mb(self) -> float:
        """Resident memory of this process alone (not its children), MiB: psutil's reading,
        or Linux's `VmRSS` where psutil is not installed (it is no dependency)."""
        try:
            psutil: Any = importlib.import_module("psutil")
        except ImportError:
            return _status_mb(self.pid, "VmRSS")
        rss = int(psutil.Process(self.pid).memory_info().rss)
        return round(rss / 2**20, 1)

    def peak_rss_mb(self) -> float:
        """The process's peak resident memory so far (Linux `VmHWM`), MiB."""
        return _status_mb(self.pid, "VmHWM")

    def log_tail(self, chars: int = 1500) -> str:
        text = self.log.read_text(errors="replace") if self.log.is_file() else ""
        return f"its stderr ends: {text[-chars:]!r}" if text else "no stderr"


def _status_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return round(int(line.split()[1]) / 1024, 1)
    raise RpcError(f"no {field} in /proc/{pid}/status")


@asynccontextmanager
async def spawn(
    command: Sequence[str],
    log: Path,
    env: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> AsyncIterator[StdioPeer]:
    """The child, its stderr appended to `log`; on exit, stdin is closed and the child
    gets `_SHUTDOWN_S` seconds to end before it is terminated, then killed."""
    with log.open("ab") as errors:
        spawned = time.perf_counter()
        process = await anyio.open_process(
            list(command),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=errors,
            env=dict(env) if env is not None else None,
            cwd=cwd,
        )
        try:
            yield StdioPeer(process, spawned, log)
        finally:
            with anyio.CancelScope(shield=True):
                await _stop(process)


async def _stop(process: Process) -> None:
    if process.stdin is not None:
        await process.stdin.aclose()
    with anyio.move_on_after(_SHUTDOWN_S):
        await process.wait()
        return
    process.terminate()
    with anyio.move_on_after(_SHUTDOWN_S):
        await process.wait()
        return
    process.kill()
    await process.wait()
