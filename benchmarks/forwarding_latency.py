"""The latency a forwarded `tools/call` adds: through `mcp-router serve` against the upstream
called directly.

    python -m benchmarks.forwarding_latency [--calls 200] [--config examples/servers.json]

One process, one run. The SDK `Client` talks to each upstream directly (started exactly as
the router's pool starts it) and to `mcp-router serve` (a child process with `--bm25-only`:
forwarding never touches the model) in front of the same upstreams. The calls interleave
call by call, so every path sees the same machine load. Targets: the time server's
`get_current_time` (PyPI, Python) and server-everything's `echo` (npm, node), as
`examples/servers.json` starts them (`scripts/install-example-servers.sh` installs them).

Writes `benchmarks/results/forwarding-latency.json`.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AsyncExitStack, asynccontextmanager
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, TextIO, cast

import anyio
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.stdio import stdio_client

from benchmarks.example_servers import EXAMPLE_CONFIG, example_config
from benchmarks.provenance import head_commit
from benchmarks.suite.readme import replace_between
from router.config import StdioServer
from router.upstream.connection.transport import stdio_parameters

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
RESULTS = HERE / "results"
OUT = RESULTS / "forwarding-latency.json"
WARMUP = 20
README = HERE / "README.md"
START, END = "<!-- forwarding-latency:start -->", "<!-- forwarding-latency:end -->"
PATH_NOTES = {
    "direct": "the upstream called directly (the tool listed once by the client)",
    "routed": "the router, tool called by its qualified name, listed by a query-scoped listing",
    "routed_call_tool": "the router's call_tool meta-tool wrapping the call",
    "routed_unlisted": "the router, qualified name the client never listed: the SDK client "
    "re-lists tools before each such call",
    "routed_audited": "a second router with router.audit on (one fsync'd, hash-chained line "
    "a call), tool called by its qualified name, listed by a query-scoped listing",
}
PATHS = tuple(PATH_NOTES)


@dataclass(frozen=True)
class Target:
    server: str
    tool: str
    arguments: dict[str, Any]
    entry: dict[str, Any]

    @property
    def qualified(self) -> str:
        return f"{self.server}__{self.tool}"


@dataclass
class Samples:
    seconds: list[float] = field(default_factory=list)

    def summary(self) -> dict[str, float]:
        ms = sorted(s * 1000 for s in self.seconds)
        return {
            "median_ms": round(statistics.median(ms), 3),
            "p95_ms": round(ms[int(0.95 * (len(ms) - 1))], 3),
            "mean_ms": round(statistics.fmean(ms), 3),
            "min_ms": round(ms[0], 3),
        }


def targets(data: dict[str, Any]) -> list[Target]:
    servers = data["mcpServers"]
    return [
        Target("time", "get_current_time", {"timezone": "Asia/Tokyo"}, servers["time"]),
        Target("everything", "echo", {"message": "hello"}, servers["everything"]),
    ]


def _serve(config: Path) -> StdioServerParameters:
    serve = [sys.executable, "-m", "router", "serve", "--config", str(config), "--bm25-only"]
    return StdioServerParameters(command=serve[0], args=serve[1:])


def markdown(result: dict[str, Any]) -> str:
    """The medians per target and path, and what the audit trail adds to a routed call."""
    lines = [
        f"{result['calls']} calls a path, commit `{result['commit']}`, "
        f"{result['machine']['cpus']} CPUs; the audited router wrote "
        f"{result.get('audit_trail_lines', 0)} trail lines.",
        "",
        "| target | direct | routed | call_tool | unlisted | audited | audit adds |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, figures in result["targets"].items():
        cells = [f"{figures[p]['median_ms']:.2f} ms" for p in PATHS if p in figures]
        added = figures.get("audit_added_median_ms")
        lines.append(
            f"| {name} | "
            + " | ".join(cells)
            + f" | {'-' if added is None else f'{added:+.2f} ms'} |"
        )
    return "\n".join(lines)


@asynccontextmanager
async def connect(parameters: StdioServerParameters, errlog: TextIO) -> AsyncIterator[Client]:
    """An SDK client in `auto` mode, what the router's pool uses."""
    async with Client(stdio_client(parameters, errlog=errlog), mode="auto") as client:
        yield client


async def until_indexed(router: Client) -> None:
    """The router answers before its upstreams are up: wait until none is pending."""
    while True:
        result = await router.call_tool("search_tools", {"query": "status"})
        block = result.content[0]
        if isinstance(block, types.TextContent) and "still connecting" not in block.text:
            return
        await anyio.sleep(0.1)


async def timed(calls: Samples, call: Callable[[], Awaitable[types.CallToolResult]]) -> None:
    began = time.perf_counter()
    result = await call()
    calls.seconds.append(time.perf_counter() - began)
    if result.is_error:
        raise SystemExit(f"a call failed: {result.content}")


async def list_for(router: Client, chosen: list[Target]) -> None:
    """A query-scoped listing holding the targets, as a routing host would fetch it: the SDK
    client then knows their schemas. Without that it re-lists before every call to a tool
    it has not seen (to validate structured output): the `routed_unlisted` path."""
    query = " ".join(f"{t.tool.replace('_', ' ')} {t.server}" for t in chosen)
    meta = cast(types.RequestParamsMeta, {"mcp-router/query": query, "mcp-router/k": 10})
    listed = {tool.name for tool in (await router.list_tools(meta=meta)).tools}
    missing = {t.qualified for t in chosen} - listed
    if missing:
        raise SystemExit(f"the query-scoped listing lacks {missing}")


async def measure(example: Path, n: int, errlog: TextIO) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as scratch:
        data = example_config(Path(scratch), only={"time", "everything"}, config=example)
        chosen = targets(data)
        config = Path(scratch) / "servers.json"
        config.write_text(json.dumps(data))
        audited_config = Path(scratch) / "audited.json"
        trail = Path(scratch) / "audit.jsonl"
        router_settings = {**data.get("router", {}), "audit": {"path": str(trail)}}
        audited_config.write_text(json.dumps({**data, "router": router_settings}))
        serve_parameters = _serve(config)
        audited_parameters = _serve(audited_config)
        async with AsyncExitStack() as stack:
            router = await stack.enter_async_context(connect(serve_parameters, errlog))
            unlisted = await stack.enter_async_context(connect(serve_parameters, errlog))
            audited = await stack.enter_async_context(connect(audited_parameters, errlog))
            direct = {
                t.server: await stack.enter_async_context(
                    connect(stdio_parameters(StdioServer.model_validate(t.entry)), errlog)
                )
                for t in chosen
            }
            with anyio.fail_after(60):
                await until_indexed(router)
                await until_indexed(unlisted)
                await until_indexed(audited)
                await list_for(router, chosen)
                await list_for(audited, chosen)

            paths: list[tuple[str, Target, Callable[[], Awaitable[types.CallToolResult]]]] = []
            for t in chosen:
                upstream = direct[t.server]
                via = {"name": t.qualified, "arguments": t.arguments}
                paths += [
                    ("direct", t, partial(upstream.call_tool, t.tool, t.arguments)),
                    ("routed", t, partial(router.call_tool, t.qualified, t.arguments)),
                    ("routed_call_tool", t, partial(router.call_tool, "call_tool", via)),
                    ("routed_unlisted", t, partial(unlisted.call_tool, t.qualified, t.arguments)),
                    ("routed_audited", t, partial(audited.call_tool, t.qualified, t.arguments)),
                ]
            samples = {(label, t.server): Samples() for label, t, _ in paths}
            for _ in range(WARMUP):
                for _label, _t, call in paths:
                    await call()
            for _ in range(n):
                for label, t, call in paths:
                    await timed(samples[(label, t.server)], call)
            trail_lines = len(trail.read_bytes().splitlines())
            versions = {
                "client_to_router": router.protocol_version,
                **{f"client_to_{s}": c.protocol_version for s, c in direct.items()},
            }

    report: dict[str, Any] = {}
    for t in chosen:
        figures = {label: samples[(label, t.server)].summary() for label in PATHS}
        base = figures["direct"]["median_ms"]
        report[t.qualified] = {
            "arguments": t.arguments,
            **figures,
            "ratio_median": {
                label: round(figures[label]["median_ms"] / base, 3) for label in PATHS[1:]
            },
            "added_median_ms": {
                label: round(figures[label]["median_ms"] - base, 3) for label in PATHS[1:]
            },
            "audit_added_median_ms": round(
                figures["routed_audited"]["median_ms"] - figures["routed"]["median_ms"], 3
            ),
        }
    return {
        "calls": n,
        "warmup": WARMUP,
        "paths": PATH_NOTES,
        "protocol_versions": versions,
        "audit_trail_lines": trail_lines,
        "targets": report,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.forwarding_latency")
    parser.add_argument("--calls", type=int, default=200, help="timed calls per path")
    parser.add_argument(
        "--config", type=Path, default=EXAMPLE_CONFIG, help="where time and everything are"
    )
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    # the children's logs would drown the figures: stderr goes to the null device
    # the SDK logs a warning for every call of a tool it has not listed (routed_unlisted)
    logging.getLogger("client").setLevel(logging.ERROR)  # mcp.client.session's logger
    with open(os.devnull, "w") as quiet:
        measured = anyio.run(measure, args.config, args.calls, quiet)
    result = {
        "benchmark": "forwarding-latency",
        "method": (
            "SDK Client (mode auto) over stdio; per target, calls interleaved direct / routed "
            "by qualified name / routed via call_tool, after a warm-up; one run, one process; "
            "router started with --bm25-only"
        ),
        "commit": head_commit(),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
            "python": platform.python_version(),
        },
        **measured,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    README.write_text(
        replace_between(README.read_text("utf-8"), START, END, markdown(result)), "utf-8"
    )
    for name, figures in measured["targets"].items():
        line = f"{name}: direct {figures['direct']['median_ms']:.2f} ms"
        for label in PATHS[1:]:
            line += (
                f"; {label} {figures[label]['median_ms']:.2f} ms "
                f"(x{figures['ratio_median'][label]:.2f})"
            )
        print(line)
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
