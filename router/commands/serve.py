"""`mcp-router serve`: run the routed MCP server over stdio, or over HTTP with `--http`."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import anyio

from router.commands import serve_http
from router.config import load_config
from router.memory import tune_malloc_for_serving

logger = logging.getLogger(__name__)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "serve", help="serve the routed MCP server (stdio) in front of the configured upstreams"
    )
    parser.add_argument(
        "--config", type=Path, required=True, help="mcpServers config (JSON or TOML)"
    )
    parser.add_argument(
        "--bm25-only",
        action="store_true",
        help="rank with BM25 alone: no embedding model is loaded",
    )
    serve_http.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    tune_malloc_for_serving()  # a long-lived server: keep its heap compact (router.memory)
    config = load_config(args.config)
    from router.tracing import configure_from_env

    configure_from_env()  # OTEL_TRACES_EXPORTER, with the otel extra (router.tracing)
    if args.http:
        from router.server.app import load_default_embedder as load_model

        return serve_http.run(args, config, lambda: None if args.bm25_only else load_model(config))
    servers = ", ".join(config.enabled_servers()) or "none"
    logger.info("mcp-router serving on stdio (JSON-RPC on stdin/stdout); upstreams: %s", servers)
    from router.server.app import load_default_embedder
    from router.server.stdio import serve_stdio

    embedder = None if args.bm25_only else load_default_embedder(config)
    anyio.run(serve_stdio, config, embedder)
    return 0
