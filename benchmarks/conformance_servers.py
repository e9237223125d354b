"""The two servers `benchmarks/conformance.py` points the conformance suite at: the fixture
(`tests/conformance/fixture_server.py`) and `mcp-router serve --http` in pass-through mode in
front of it, each a child process on a free loopback port, stopped on leaving the block.
"""

from __future__ import annotations

import contextlib
import json
import re
import select
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from benchmarks.conformance_suite import ROOT, ConformanceError

START_TIMEOUT = 60.0
"""Seconds for the fixture to print its URL, and for the router to be ready."""

_SERVING = re.compile(r"mcp-router serving on http://[^:\s]+:(?P<port>\d+)")


def _stop(process: subprocess.Popen[Any]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def tail(path: Path, lines: int = 20) -> str:
    """The last `lines` lines of a log, or nothing."""
    try:
        return "\n".join(path.read_text(encoding="utf-8", errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


@contextlib.contextmanager
def fixture_server(log: Path) -> Iterator[str]:
    """The conformance fixture on a free loopback port; yields its MCP URL."""
    with log.open("w", encoding="utf-8") as errors:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.conformance.fixture_server"],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=errors,
            text=True,
        )
    try:
        assert process.stdout is not None
        ready, _, _ = select.select([process.stdout], [], [], START_TIMEOUT)
        url = process.stdout.readline().strip() if ready else ""
        if not url.startswith("http://"):
            raise ConformanceError(f"the fixture server did not start:\n{tail(log)}")
        yield url
    finally:
        _stop(process)
        if process.stdout is not None:
            process.stdout.close()


TASKS: dict[str, dict[str, str]] = {
    "greet": {"tasks": "never"},
    "slow_compute": {"tasks": "always"},
    "failing_job": {"tasks": "required"},
    "protocol_error_job": {"tasks": "always"},
    "confirm_delete": {"tasks": "always"},
    "multi_input": {"tasks": "always"},
}
"""The task modes of the tasks scenarios' tools (`tests/conformance/fixture_tasks.py`), as a
user would set them: the slow jobs and those that ask the user always run as tasks for a host
that declared the extension, `greet` never, and `failing_job` cannot run without one (the
suite registers it `taskSupport: required`: a host that did not declare the extension is
refused); the others (`test_tool_with_task`) are `auto`, the default: a task once a call runs
past `router.tasks.after_ms`."""


def router_config(upstream: str, directory: Path, protocol: str = "auto") -> Path:
    """Pass-through mode in front of one streamable-HTTP upstream that keeps its names, with
    the tasks scenarios' task modes (`TASKS`);
    `protocol` is how the router speaks to it (`auto`: the host's own era, 2026-07-28 when
    the host speaks it)."""
    fixture = {"url": upstream, "prefix": False, "protocol": protocol, "tools": TASKS}
    config = {
        "mcpServers": {"fixture": fixture},
        "router": {"mode": "all", "cache_dir": str(directory / "cache")},
    }
    path = directory / "router.json"
    path.write_text(json.dumps(config, indent=2), encoding="utf-8")
    return path


@contextlib.contextmanager
def router_front(upstream: str, directory: Path, protocol: str = "auto") -> Iterator[str]:
    """`mcp-router serve --http` on a free loopback port in front of `upstream`, once
    `/healthz` says it is ready; yields its MCP URL."""
    log = directory / "router.log"
    config = router_config(upstream, directory, protocol)
    command = [sys.executable, "-m", "router", "serve", "--http", "--port", "0", "--bm25-only"]
    with log.open("w", encoding="utf-8") as errors:
        process = subprocess.Popen(
            [*command, "--config", str(config)], cwd=ROOT, stdout=errors, stderr=errors
        )
    try:
        deadline = time.monotonic() + START_TIMEOUT
        port = _wait_for_port(process, log, deadline)
        base = f"http://127.0.0.1:{port}"
        _wait_ready(f"{base}/healthz", process, log, deadline)
        yield f"{base}/mcp"
    finally:
        _stop(process)


def _wait_for_port(process: subprocess.Popen[Any], log: Path, deadline: float) -> int:
    while time.monotonic() < deadline:
        match = _SERVING.search(log.read_text(encoding="utf-8", errors="replace"))
        if match:
            return int(match["port"])
        if process.poll() is not None:
            break
        time.sleep(0.1)
    raise ConformanceError(f"the router did not start:\n{tail(log)}")


def _wait_ready(url: str, process: subprocess.Popen[Any], log: Path, deadline: float) -> None:
    while time.monotonic() < deadline and process.poll() is None:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        time.sleep(0.1)
    raise ConformanceError(f"the router never became ready ({url}):\n{tail(log)}")
