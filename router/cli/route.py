"""`mcp-router route`: rank a catalog's tools for one query and show the token bill."""

from __future__ import annotations

import argparse
import json
from typing import Any

from router.accounting.formats import ToolFormat
from router.accounting.tokens import TokenCounter
from router.cli.indexing import add_index_arguments, build_index
from router.cli.option_types import positive_int, query
from router.retrieval.types import ScoredTool, SearchMode


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("route", help="rank a catalog's tools for a query")
    add_index_arguments(parser)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("-k", type=positive_int, default=None, help="how many tools (default 5)")
    size.add_argument("--budget", type=positive_int, default=None, help="fit the tools in N tokens")
    parser.add_argument("--mode", choices=[m.value for m in SearchMode], default="hybrid")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    parser.add_argument("query", type=query, help="the task, in plain words")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    mode = SearchMode(args.mode)
    index = build_index(args, [mode])
    counter = TokenCounter()
    k = None if args.budget is not None else (args.k or 5)
    results = index.retriever.search(
        args.query,
        k=k,
        budget=args.budget,
        mode=mode,
        tool_tokens=lambda tool: counter.count_tool(tool, ToolFormat.MCP),
    )
    routed = [r.tool for r in results]
    full = list(index.catalog.records)
    bill = {
        fmt.value: _bill(counter.count_tools(routed, fmt), counter.count_tools(full, fmt))
        for fmt in ToolFormat
    }
    if args.json:
        payload = {
            "query": args.query,
            "mode": mode.value,
            "k": k,
            "budget": args.budget,
            "model": index.model_id,
            "catalog": {"path": str(args.catalog), "tools": len(full)},
            "tools": [_tool_json(r, counter) for r in results],
            "tokens": {"encoding": counter.encoding_name, **bill},
        }
        print(json.dumps(payload, indent=2))
    else:
        _print_table(args.query, mode, results, counter, bill, len(full))
    return 0


def _bill(routed: int, full: int) -> dict[str, float]:
    saved = 100.0 * (1 - routed / full) if full else 0.0
    return {"routed": routed, "full": full, "saved_percent": round(saved, 2)}


def _tool_json(result: ScoredTool, counter: TokenCounter) -> dict[str, Any]:
    return {
        "rank": result.rank,
        "name": result.qualified_name,
        "server": result.tool.server,
        "tool": result.tool.name,
        "score": result.score,
        "dense_score": result.dense_score,
        "dense_rank": result.dense_rank,
        "bm25_score": result.bm25_score,
        "bm25_rank": result.bm25_rank,
        "exact_match": result.exact_match,
        "pinned": result.pinned,
        "tokens": counter.count_tool(result.tool, ToolFormat.MCP),
    }


def _fmt(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _print_table(
    query: str,
    mode: SearchMode,
    results: list[ScoredTool],
    counter: TokenCounter,
    bill: dict[str, dict[str, float]],
    catalog_size: int,
) -> None:
    width = max([len(r.qualified_name) for r in results] + [4])
    print(f"query: {query}")
    print(f"mode: {mode.value}, {len(results)} of {catalog_size} tools\n")
    print(f"{'#':>3}  {'tool':<{width}}  {'score':>7}  {'dense':>6}  {'bm25':>6}  {'tokens':>6}")
    for r in results:
        flag = " (named)" if r.exact_match else " (pinned)" if r.pinned else ""
        print(
            f"{r.rank:>3}  {r.qualified_name:<{width}}  {_fmt(r.score, 4):>7}  "
            f"{_fmt(r.dense_score):>6}  {_fmt(r.bm25_score, 2):>6}  "
            f"{counter.count_tool(r.tool, ToolFormat.MCP):>6}{flag}"
        )
    print(f"\ntokens ({counter.encoding_name}): routed list vs full list")
    for fmt, figures in bill.items():
        print(
            f"  {fmt:<9} {int(figures['routed']):>7,} of {int(figures['full']):>9,}"
            f"  ({figures['saved_percent']:.1f}% saved)"
        )
