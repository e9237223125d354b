"""`mcp-router serve`: run the routed MCP server over stdio, or over HTTP with `--http`."""

from __future__ import annotations

import argparse
import logging
from pathlib import Path
from typing import Any

import anyio
from pydantic import ValidationError

from router.cli import serve_http
from router.config import RouterConfig, StoreSettings, load_config
from router.core.errors import ConfigError
from router.core.memory import importing, tune_malloc_for_serving
from router.embedding.base import Embedder

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
    parser.add_argument(
        "--store",
        metavar="URL",
        help="a shared PostgreSQL with pgvector for the tool vectors and their index "
        "(postgresql://user@host:5432/db; overrides router.store's url): replicas that share "
        "it embed nothing another already embedded",
    )
    parser.add_argument(
        "--endpoint",
        metavar="NAME",
        help="serve one of router.endpoints on stdio: its servers, tools, mode, k, pins and "
        "policy (the HTTP front serves each at /mcp/NAME)",
    )
    serve_http.add_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    tune_malloc_for_serving()  # a long-lived server: keep its heap compact (router.core.memory)
    with importing():  # the config and the server's modules: no collector passes as they load
        config = with_store(load_config(args.config), args.store)
        if config.router.store is not None:
            check_store(config)
        if "code" in config.modes:  # a missing sandbox is named before anything starts
            from router.code_mode.sandbox import require_sandbox

            require_sandbox()
        from router.core.tracing import configure_from_env

        configure_from_env()  # OTEL_TRACES_EXPORTER, with the otel extra (router.core.tracing)
        endpoint = getattr(args, "endpoint", None)
        if endpoint is not None:
            check_endpoint(config, endpoint, http=args.http)
        if not args.http:
            from router.server.lifecycle.app import load_default_embedder
            from router.server.lifecycle.stdio import serve_stdio

    def read_config() -> RouterConfig:
        """The file again, as it is now, with the same flags (applied while serving)."""
        return with_store(load_config(args.config), args.store)

    if args.http:
        from router.server.lifecycle.app import load_default_embedder as load_model

        def load() -> Embedder | None:
            return None if args.bm25_only else load_model(config)

        return serve_http.run(args, config, load, read_config)
    servers = ", ".join(config.enabled_servers()) or "none"
    logger.info("mcp-router serving on stdio (JSON-RPC on stdin/stdout); upstreams: %s", servers)
    embedder = None if args.bm25_only else load_default_embedder(config)
    if endpoint is not None:
        from router.server.access.endpoint import enter_endpoint

        logger.info("serving endpoint %s (router.endpoints)", endpoint)
        enter_endpoint(endpoint)  # the whole serve, every task of it, is that endpoint's
    anyio.run(serve_stdio, config, embedder, read_config)
    return 0


def check_endpoint(config: RouterConfig, name: str, *, http: bool) -> None:
    """`--endpoint NAME` names an endpoint of the file, on stdio."""
    where = config.source or "the config"
    if http:
        raise ConfigError(
            f"--endpoint {name}: the HTTP front serves every endpoint, each at /mcp/{name} "
            "and /sse/NAME. Fix: drop --endpoint, or serve on stdio."
        )
    known = config.router.endpoints
    if name not in known:
        names = ", ".join(sorted(known)) or "none"
        raise ConfigError(
            f"{where}: router.endpoints has no endpoint '{name}' (known: {names}). Fix: "
            "add it to router.endpoints, or name one of those."
        )


def with_store(config: RouterConfig, url: str | None) -> RouterConfig:
    """`--store` over the file's `router.store` (its other settings kept)."""
    if url is None:
        return config
    try:
        store = StoreSettings.model_validate(
            {
                **(
                    config.router.store.model_dump(exclude_none=True) if config.router.store else {}
                ),
                "url": url,
            }
        )
    except ValidationError as exc:
        reason = exc.errors()[0]["msg"]
        raise ConfigError(f"--store: {reason}") from None
    router = config.router.model_copy(update={"store": store})
    return config.model_copy(update={"router": router})


def check_store(config: RouterConfig) -> None:
    """Reach the store before anything starts, so an unreachable one is a clear error and
    exit 1 rather than a failed start-up deep in the server (the server opens its own)."""
    from router.store.opening import open_store

    open_store(config).close()
