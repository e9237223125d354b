"""The `mcp-router` command line. Heavy modules load inside the commands, never here."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence

from router import __version__
from router.commands import bench, evaluate, inspect, route, serve
from router.errors import RouterError


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mcp-router",
        description="A tool-routing MCP gateway: one MCP server in front of many, "
        "listing only the tools a query needs.",
    )
    parser.add_argument("--version", action="version", version=f"mcp-router {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging on stderr")
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    route.register(subparsers)
    evaluate.register(subparsers)
    serve.register(subparsers)
    inspect.register(subparsers)
    bench.register(subparsers)
    return parser


def configure_logging(verbose: bool) -> None:
    """Logs go to stderr only: in stdio mode stdout is the protocol channel."""
    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
        force=True,
    )
    for noisy in ("httpx", "httpx2", "sentence_transformers", "bm25s", "filelock"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    configure_logging(args.verbose)
    try:
        code: int = args.handler(args)
    except RouterError as exc:
        print(f"mcp-router {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code
