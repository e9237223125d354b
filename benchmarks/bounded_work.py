"""Bounded work at a large catalog (issue 24, item 4): the event loop's longest stall while
the router does what grows with the catalog, and the time a 5 MB cut takes.

    python -m benchmarks.bounded_work [--tools 20000] [--calls 30]

One process. The router's state runs in this process's event loop (`router_state`, BM25
only) in front of benchmarks/perf/catalog_server.py serving `--tools` made-up tools over
stdio; an in-memory SDK client calls it (`build_server`). A ticker task on the same loop
sleeps 1 ms at a time; the longest gap between its ticks, less the 1 ms, is the loop's
worst stall during each measured operation (the client's own work on that loop included,
so the figures are upper bounds). Measured:

- an unknown tool called (its suggestions are found in a worker thread), against a known
  tool called, `--calls` of each: the worst stall of each call, median and max;
- a `/v1/tools` page of 1,000 tools (`routing.catalog`, the page built in a worker thread);
- a re-index of the whole catalog (`LiveIndex.rebuild`);
- cutting a 5 MB text result to 25,000 tokens: `cut_result` (a prefix tokenised), against
  tokenising the whole text, which is what the cut did before (median of 3).

Writes `benchmarks/results/bounded-work.json`.
"""

from __future__ import annotations

import argparse
import json
import platform
import random
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.exceptions import MCPError

from benchmarks.provenance import head_commit
from router.accounting.formats import ToolFormat
from router.accounting.tokens import TokenCounter
from router.config import parse_config
from router.core.catalog import ToolSpec
from router.server.http.routing import catalog
from router.server.lifecycle.app import build_server, router_state
from router.server.lifecycle.state import RouterState
from router.server.listing.index import LiveIndex
from router.server.results.limits import cut_result

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"
OUT = RESULTS / "bounded-work.json"
CATALOG_SERVER = HERE / "perf" / "catalog_server.py"
TICK = 0.001
_VERBS = ["fetch", "list", "create", "delete", "update", "issue", "file", "user", "report"]


def made_up_specs(count: int, server: str = "big") -> list[ToolSpec]:
    """`count` tools named `tool_NNNNN_verb` (verb `n % 9`), each with a line of words."""
    chooser = random.Random(count)
    return [
        ToolSpec(
            server=server,
            name=f"tool_{n:05d}_{_VERBS[n % len(_VERBS)]}",
            description=" ".join(chooser.choices(_VERBS, k=12)),
            input_schema={"type": "object", "properties": {"id": {"type": "string"}}},
        )
        for n in range(count)
    ]


def write_catalog(path: Path, count: int) -> Path:
    """`made_up_specs(count)` as the catalog.jsonl that catalog_server.py serves."""
    with path.open("w", encoding="utf-8") as out:
        for spec in made_up_specs(count):
            line = {"name": spec.name, "description": spec.description}
            out.write(json.dumps(line | {"inputSchema": spec.input_schema}) + "\n")
    return path


class Ticker:
    """Ticks every `TICK` seconds on the event loop, keeping the longest gap."""

    def __init__(self) -> None:
        self.ticks = 0
        self.longest = 0.0

    async def run(self) -> None:
        last = time.perf_counter()
        while True:
            await anyio.sleep(TICK)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            self.ticks += 1
            last = now

    @property
    def stall_ms(self) -> float:
        return max(0.0, self.longest - TICK) * 1_000


@asynccontextmanager
async def ticking() -> AsyncIterator[Ticker]:
    ticker = Ticker()
    async with anyio.create_task_group() as group:
        group.start_soon(ticker.run)
        await anyio.sleep(0.01)
        ticker.ticks, ticker.longest = 0, 0.0
        yield ticker
        group.cancel_scope.cancel()


async def stall_of(operation: Callable[[], Awaitable[Any]]) -> tuple[float, float]:
    """(the loop's worst stall in ms, the operation's wall time in ms)."""
    async with ticking() as ticker:
        started = time.perf_counter()
        await operation()
        took = (time.perf_counter() - started) * 1_000
    return ticker.stall_ms, took


def summary(values: list[float]) -> dict[str, float]:
    return {
        "median": round(statistics.median(values), 2),
        "max": round(max(values), 2),
        "n": len(values),
    }


async def calls(client: Client, name: str, count: int) -> dict[str, Any]:
    stalls, walls = [], []
    for n in range(count):

        async def call(n: int = n) -> None:
            try:
                await client.call_tool(name.format(n=n), {})
            except MCPError as error:
                assert error.code == types.INVALID_PARAMS, error

        stall, wall = await stall_of(call)
        stalls.append(stall)
        walls.append(wall)
    return {"stall_ms": summary(stalls), "call_ms": summary(walls)}


async def front_figures(state: RouterState, server: Any, count: int) -> dict[str, Any]:
    async with Client(server, mode="legacy") as client:
        await client.call_tool("big__tool_00000_fetch", {})  # warm: the first call's imports
        unknown = await calls(client, "big__tool_{n:05d}_fetchh", count)
        known = await calls(client, "big__tool_00009_fetch", count)
    view = state.settings.visibility.view()

    async def page() -> None:
        await catalog(state, ToolFormat.MCP, view, limit=1_000)

    pages = [await stall_of(page) for _ in range(count)]
    return {
        "unknown_tool_call": unknown,
        "known_tool_call": known,
        "v1_tools_page_1000": {
            "stall_ms": summary([s for s, _ in pages]),
            "call_ms": summary([w for _, w in pages]),
        },
    }


async def rebuild_figures(tools: int) -> dict[str, Any]:
    index = LiveIndex(None, None)
    index.submit("big", made_up_specs(tools))

    async def rebuild() -> None:
        await index.rebuild()

    stall, wall = await stall_of(rebuild)
    return {"stall_ms": round(stall, 2), "rebuild_ms": round(wall, 1)}


def cut_figures() -> dict[str, Any]:
    counter = TokenCounter()
    counter.count_text("warm the encoding")
    chooser = random.Random(5)
    words = [f"w{n:x}" for n in range(4096)] + ["the", "of", "and", "\n"]
    text = " ".join(chooser.choices(words, k=1_300_000))[: 5 * 1_000_000]
    result = types.CallToolResult(content=[types.TextContent(text=text)])
    whole, cut = [], []
    for _ in range(3):
        started = time.perf_counter()
        tokens = len(counter.encode(text))
        whole.append(time.perf_counter() - started)
        started = time.perf_counter()
        _, truncation = cut_result(result, 25_000, counter)
        cut.append(time.perf_counter() - started)
    assert truncation is not None
    return {
        "text_bytes": len(text.encode()),
        "limit": 25_000,
        "tokens": tokens,
        "marker_tokens_estimate": truncation.tokens,
        "estimate_error_percent": round(100 * (truncation.tokens - tokens) / tokens, 2),
        "whole_text_tokenised_s": round(statistics.median(whole), 3),
        "cut_result_s": round(statistics.median(cut), 3),
    }


async def measure(tools: int, count: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        path = write_catalog(Path(scratch) / "catalog.jsonl", tools)
        config = parse_config(
            {
                "mcpServers": {
                    "big": {"command": sys.executable, "args": [str(CATALOG_SERVER), str(path)]}
                },
                "router": {"cache_dir": scratch, "timeouts": {"connect": 300}},
            }
        )
        async with router_state(config, None) as state:
            with anyio.fail_after(300):
                while state.pending_upstreams() or not state.index.ready.is_set():
                    await state.changes.wait()
            assert len(state.snapshot.catalog) == tools
            server = build_server(config, None, state=state)
            front = await front_figures(state, server, count)
    return {
        "schema": "mcp-router.bounded-work/1",
        "commit": head_commit(),
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "tools": tools,
        "tick_ms": TICK * 1_000,
        **front,
        "re_index": await rebuild_figures(tools),
        "cut_5_mb": await anyio.to_thread.run_sync(cut_figures),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tools", type=int, default=20_000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--out", type=Path, default=OUT)
    options = parser.parse_args(argv)
    report = anyio.run(measure, options.tools, options.calls)
    options.out.parent.mkdir(parents=True, exist_ok=True)
    options.out.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
