"""`mcp-router serve --http`: the options of the HTTP front and how they resolve.

Flags win over the config's `router.http`; the token comes from `--token` or `ROUTER_TOKEN`
and is never logged. A front bound beyond loopback without a token refuses to start.
"""

from __future__ import annotations

import argparse
import logging
import os
from collections.abc import Callable

from router.cli import option_types
from router.config import RouterConfig
from router.embedding.base import Embedder

logger = logging.getLogger(__name__)

TOKEN_VARIABLE = "ROUTER_TOKEN"
OPERATOR_TOKEN_VARIABLE = "ROUTER_OPERATOR_TOKEN"
"""A second bearer token, for `/metrics` and the detailed `/healthz` only (a scraper's)."""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("HTTP front")
    group.add_argument(
        "--http",
        action="store_true",
        help="serve over HTTP instead of stdio: MCP at /mcp (streamable HTTP) and /sse, "
        "REST at /v1/route, /v1/tools, /healthz",
    )
    group.add_argument("--host", help="address to bind (default router.http.host, 127.0.0.1)")
    group.add_argument(
        "--port", type=option_types.port, help="port (default router.http.port, 8765)"
    )
    group.add_argument(
        "--token",
        help=f"bearer token every request must carry (default ${TOKEN_VARIABLE}, which "
        "keeps it out of the process list); required to bind beyond loopback",
    )


def run(
    args: argparse.Namespace,
    config: RouterConfig,
    load: Callable[[], Embedder | None],
    read_config: Callable[[], RouterConfig] | None = None,
) -> int:
    """Check the options and take the port, then load the model and serve (the checks
    fail before the slow part); say it serves only once it does.

    Raises:
        ConfigError: Beyond loopback without a token.
        ServeError: The host and port cannot be bound (in use, say).
    """
    from router.server.http.auth.security import SecurityPolicy
    from router.server.http.serve import bind, serve_http

    settings = config.router.http
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    policy = SecurityPolicy.for_bind(
        settings,
        host,
        args.token or os.environ.get(TOKEN_VARIABLE),
        os.environ.get(OPERATOR_TOKEN_VARIABLE),
    )
    with bind(host, port) as sock:
        bound = sock.getsockname()[1]  # the port itself when 0 asked for any free one
        servers = ", ".join(config.enabled_servers()) or "none"

        def announce() -> None:
            logger.info(
                "mcp-router serving on http://%s:%d (MCP at /mcp and /sse, REST at /v1/route; "
                "credentials %s); upstreams: %s",
                host,
                bound,
                "OAuth access tokens"
                if policy.tokens
                else ("the bearer token" if policy.token else "off"),
                servers,
            )

        served = serve_http(
            config, load(), policy, sock=sock, on_started=announce, read_config=read_config
        )
        return 0 if served else 1
