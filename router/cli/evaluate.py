"""`mcp-router eval`: retrieval quality of a catalog over a query set."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from pathlib import Path
from typing import Any

from router.accounting.formats import ToolFormat
from router.accounting.tokens import TokenCounter
from router.cli.indexing import add_index_arguments, build_index
from router.cli.option_types import positive_int, search_modes
from router.cli.progress import progress_callback
from router.core.errors import DataError
from router.evaluation.dataset import OnError, load_queries
from router.retrieval.types import SearchMode

logger = logging.getLogger(__name__)
SCHEMA = "mcp-router.eval/1"


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser("eval", help="measure retrieval quality over a query set")
    add_index_arguments(parser)
    parser.add_argument("--queries", type=Path, required=True, help="queries.jsonl file")
    parser.add_argument(
        "-k", type=positive_int, default=5, help="size of the routed list (default 5)"
    )
    parser.add_argument(
        "--mode",
        type=search_modes,
        default="hybrid",
        help="hybrid, dense, bm25, or several separated by commas (default hybrid)",
    )
    parser.add_argument("--limit", type=positive_int, default=None, help="only the first N queries")
    parser.add_argument(
        "--group-by",
        default=None,
        help="query field to break results down by (default: level, category or split)",
    )
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="write JSON here")
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from router.evaluation.metrics import evaluate, group_field, resolve_gold  # numpy: at run time

    modes: list[SearchMode] = args.mode  # parsed by search_modes
    queries, query_problems = load_queries(args.queries, OnError(args.on_error))
    for problem in query_problems:
        logger.warning("skipped %s", problem)
    if args.limit is not None:
        queries = queries[: args.limit]
    if args.group_by and not any(q.field(args.group_by) is not None for q in queries):
        fields = sorted({name for q in queries for name, _ in q.extra})
        raise DataError(
            f"--group-by {args.group_by}: no query in {args.queries} has that field "
            f"(fields they have: {', '.join(fields) or 'none'})"
        )
    group_by = group_field(queries, args.group_by)
    index = build_index(args, modes)
    resolved, unknown_gold = resolve_gold(index.catalog, queries)
    if unknown_gold:
        logger.warning("%d gold tools are not in the catalog; they count as misses", unknown_gold)
    counter = TokenCounter()
    full_tokens = counter.count_tools(index.catalog.records, ToolFormat.MCP)
    with progress_callback("queries") as on_progress:
        results = evaluate(
            index.retriever,
            resolved,
            modes,
            k=args.k,
            counter=counter,
            group_by=group_by,
            on_progress=on_progress,
        )
    report: dict[str, Any] = {
        "schema": SCHEMA,
        "catalog": {
            "path": str(args.catalog),
            "tools": len(index.catalog),
            "servers": len(index.catalog.servers),
            "skipped_lines": index.skipped_lines,
            "name_collisions": len(index.catalog.collisions),
        },
        "queries": {
            "path": str(args.queries),
            "count": len(resolved),
            "skipped_lines": len(query_problems),
            "unknown_gold_tools": unknown_gold,
            "group_by": group_by,
        },
        "model": index.model_id,
        "k": args.k,
        "index": {
            "build_seconds": round(index.build_seconds, 3),
            "embedded": index.stats.embedded,
            "from_cache": index.stats.from_cache,
        },
        "tokens": {"format": "mcp", "encoding": counter.encoding_name, "full_list": full_tokens},
        "runs": [result.summary(full_tokens) for result in results],
    }
    if args.json:
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        print(f"wrote {args.json}", file=sys.stderr)
    print(render(report))
    return 0


def render(report: dict[str, Any]) -> str:
    """The report as a plain-text table, one row per mode and per group."""
    from router.evaluation.metrics import metric_names

    names = metric_names()
    header = f"{'mode':<8} {'group':<14} {'n':>6} " + " ".join(f"{n:>10}" for n in names)
    header += f" {'tokens':>8} {'saved%':>7} {'p50ms':>7} {'p95ms':>7}"
    lines = [
        f"catalog {report['catalog']['path']}: {report['catalog']['tools']} tools; "
        f"queries {report['queries']['path']}: {report['queries']['count']}; "
        f"k={report['k']}; full list {report['tokens']['full_list']:,} tokens",
        f"index: {report['index']['embedded']} embedded, {report['index']['from_cache']} from "
        f"cache, {report['index']['build_seconds']} s",
        header,
    ]
    count = report["queries"]["count"]
    for run in report["runs"]:
        rows = [("all", count, run["metrics"])]
        rows += [(name, g["count"], g["metrics"]) for name, g in run["groups"].items()]
        for group, n, metrics in rows:
            line = f"{run['mode']:<8} {group:<14} {n:>6} " + " ".join(
                f"{metrics[name]:>10.4f}" for name in names
            )
            if group == "all":
                line += (
                    f" {run['tokens']['routed_mean']:>8.0f} {run['tokens']['saved_percent']:>7.2f}"
                    f" {run['latency_ms']['p50']:>7.2f} {run['latency_ms']['p95']:>7.2f}"
                )
            lines.append(line)
    return "\n".join(lines)
