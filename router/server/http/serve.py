"""Serving the HTTP front with uvicorn (`mcp-router serve --http`)."""

from __future__ import annotations

import logging

import uvicorn

from router.config import RouterConfig
from router.embedding.base import Embedder
from router.server.http.app import create_app
from router.server.http.security import SecurityPolicy

logger = logging.getLogger(__name__)


def uvicorn_config(
    config: RouterConfig, embedder: Embedder | None, policy: SecurityPolicy, host: str, port: int
) -> uvicorn.Config:
    """uvicorn settings for the front: our logging (stderr), no websockets, no access log
    (a line per request would cost more than routing one)."""
    return uvicorn.Config(
        create_app(config, embedder, policy),
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
        ws="none",
        server_header=False,
        timeout_graceful_shutdown=5,
    )


def serve_http(
    config: RouterConfig,
    embedder: Embedder | None,
    policy: SecurityPolicy,
    *,
    host: str,
    port: int,
) -> bool:
    """Serve until SIGINT/SIGTERM; False if the server never started (port taken, or the
    lifespan failed), as uvicorn has logged."""
    # The SDK logs every session id at INFO; an id addresses a live session: keep it out.
    logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)
    server = uvicorn.Server(uvicorn_config(config, embedder, policy, host, port))
    server.run()
    return server.started
