"""What a host pays for tool schemas: every tool of the example servers listed directly,
against the router's default listing and its query-scoped (k=5) listings.

    python -m benchmarks.listing_tokens [--k 5] [--bm25-only] [--config examples/servers.json]

Runs the router's own state in process (the upstream pool and the live index, with the real
model unless --bm25-only) on the example servers of `examples/servers.json` (time, git,
fetch from PyPI; everything, memory, filesystem from npm; no pins), so each listing holds
exactly the tools `mcp-router serve` lists. Tokens are cl100k
(`router.accounting.TokenCounter`) of the list as a host sends it, in the MCP, OpenAI and
Anthropic formats. "direct" is every tool under its own name, as the servers list them
when configured one by one.

Writes `benchmarks/results/listing-tokens.json`.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import platform
import statistics
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import anyio

from benchmarks.example_servers import EXAMPLE_CONFIG, example_config
from benchmarks.provenance import head_commit
from router.accounting.formats import ToolFormat
from router.accounting.tokens import ENCODING, TokenCounter
from router.catalog import ToolRecord
from router.config import parse_config
from router.server.app import load_default_embedder, router_state
from router.upstream import UpstreamState

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
OUT = HERE / "results" / "listing-tokens.json"
QUERIES = (
    "what time is it in Tokyo",
    "convert 3pm in New York to Paris time",
    "show the git log of this repository",
    "what changed in my working tree since the last commit",
    "fetch the content of https://example.com",
    "remember that Alice works at Acme",
    "list the files in the shared folder",
    "read a text file",
    "echo a message back",
    "add two numbers",
)


@dataclasses.dataclass(frozen=True)
class Listings:
    direct: tuple[ToolRecord, ...]
    default: tuple[ToolRecord, ...]
    routed: dict[str, tuple[ToolRecord, ...]]
    tools_per_server: dict[str, int]


async def collect(example: Path, k: int, bm25_only: bool) -> Listings:
    """Start the router's state on the example servers and take its listings."""
    with tempfile.TemporaryDirectory() as scratch:
        data = example_config(Path(scratch), config=example)
        config = parse_config({**data, "router": {**data["router"], "k": k, "pin": []}})
        embedder = None if bm25_only else load_default_embedder(config)
        async with router_state(config, embedder) as state:
            with anyio.fail_after(180):
                statuses = await state.pool.wait_settled()
                down = [n for n, s in statuses.items() if s.state is not UpstreamState.HEALTHY]
                if down:
                    raise SystemExit(f"upstreams down: {down}")
                while state.pending_upstreams():
                    await state.changes.wait()
                snapshot = state.snapshot
                pinned, meta = snapshot.pinned, state.meta_tools
                routed = {}
                for query in QUERIES:
                    # tools/list with this query: pins, then the top k, then the meta-tools
                    top = [r.tool for r in await state.search(query, k) if r.tool not in pinned]
                    routed[query] = (*pinned, *top, *meta)
            records = snapshot.catalog.records
            return Listings(
                direct=tuple(dataclasses.replace(r, qualified_name=r.name) for r in records),
                default=(*pinned, *meta),
                routed=routed,
                tools_per_server={s: len(state.index.tools_of(s)) for s in sorted(statuses)},
            )


def _percent_saved(listed: float, full: int) -> float:
    return round(100 * (1 - listed / full), 2)


def report(listings: Listings, k: int, model: str | None) -> dict[str, Any]:
    counter = TokenCounter()
    formats: dict[str, Any] = {}
    for fmt in ToolFormat:
        direct = counter.count_tools(listings.direct, fmt)
        default = counter.count_tools(listings.default, fmt)
        routed = {q: counter.count_tools(tools, fmt) for q, tools in listings.routed.items()}
        mean = statistics.fmean(routed.values())
        formats[fmt.value] = {
            "direct_all_tools": direct,
            "router_default": default,
            "router_default_saved_percent": _percent_saved(default, direct),
            f"router_k{k}_mean": round(mean, 1),
            f"router_k{k}_min": min(routed.values()),
            f"router_k{k}_max": max(routed.values()),
            f"router_k{k}_saved_percent": _percent_saved(mean, direct),
            f"router_k{k}_per_query": routed,
        }
    return {
        "benchmark": "listing-tokens",
        "encoding": ENCODING,
        "model": model or "none (BM25 only)",
        "k": k,
        "commit": head_commit(),
        "machine": {
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
            "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        },
        "servers": listings.tools_per_server,
        "tool_count": len(listings.direct),
        "listed": {
            "router_default": [r.qualified_name for r in listings.default],
            f"router_k{k}": {q: [r.qualified_name for r in t] for q, t in listings.routed.items()},
        },
        "tokens": formats,
    }


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.listing_tokens")
    parser.add_argument("--k", type=int, default=5)
    parser.add_argument("--bm25-only", action="store_true", help="rank without the model")
    parser.add_argument("--config", type=Path, default=EXAMPLE_CONFIG)
    parser.add_argument("--out", type=Path, default=OUT)
    args = parser.parse_args(argv)
    listings = anyio.run(collect, args.config, args.k, args.bm25_only)
    model = None if args.bm25_only else parse_config({"mcpServers": {}}).router.model
    result = report(listings, args.k, model)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    mcp = result["tokens"]["mcp"]
    print(
        f"{result['tool_count']} tools of {len(listings.tools_per_server)} servers: "
        f"{mcp['direct_all_tools']} tokens listed directly (MCP format, {ENCODING}); "
        f"router default {mcp['router_default']} ({mcp['router_default_saved_percent']}% saved); "
        f"k={args.k} mean {mcp[f'router_k{args.k}_mean']} "
        f"({mcp[f'router_k{args.k}_saved_percent']}% saved, "
        f"range {mcp[f'router_k{args.k}_min']}-{mcp[f'router_k{args.k}_max']})"
    )
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
