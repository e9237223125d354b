"""Serving the HTTP front with uvicorn (`mcp-router serve --http`)."""

from __future__ import annotations

import errno
import logging
import socket
from collections.abc import Callable

import uvicorn

from router.config import RouterConfig
from router.core.errors import ServeError
from router.embedding.base import Embedder
from router.server.http.app import create_app
from router.server.http.auth.security import SecurityPolicy

logger = logging.getLogger(__name__)


def uvicorn_config(
    config: RouterConfig,
    embedder: Embedder | None,
    policy: SecurityPolicy,
    host: str,
    port: int,
    read_config: Callable[[], RouterConfig] | None = None,
) -> uvicorn.Config:
    """uvicorn settings for the front: our logging (stderr), no websockets, no access log
    (a line per request would cost more than routing one)."""
    return uvicorn.Config(
        create_app(config, embedder, policy, read_config=read_config),
        host=host,
        port=port,
        log_config=None,
        access_log=False,
        lifespan="on",
        ws="none",
        server_header=False,
        timeout_graceful_shutdown=5,
    )


def bind(host: str, port: int) -> socket.socket:
    """A socket bound to `host:port`, taken before anything slow starts (the model, the
    upstreams), so a taken port fails at once; bound as uvicorn binds one for its workers.

    Raises:
        ServeError: The address is in use, not this machine's, or needs privileges.
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise ServeError(_cannot_bind(host, port, exc)) from None
    return sock


def _cannot_bind(host: str, port: int, exc: OSError) -> str:
    where = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
    if exc.errno == errno.EADDRINUSE:
        why = (
            "the address is already in use (another process listens there). "
            "Fix: stop that process, or pass --port with a free port (0 picks one)"
        )
    elif exc.errno == errno.EACCES:
        why = "permission denied (ports below 1024 need privileges). Fix: pass --port 1024 or above"
    elif exc.errno == errno.EADDRNOTAVAIL:
        why = f"{host} is not an address of this machine. Fix: pass --host 127.0.0.1"
    elif isinstance(exc, socket.gaierror):
        why = f"the host name does not resolve ({exc.strerror}). Fix: pass --host 127.0.0.1"
    else:
        why = exc.strerror or str(exc)
    return f"cannot serve HTTP on {where}: {why}."


class _Server(uvicorn.Server):
    """uvicorn's server, which says it serves only once it does (the lifespan has run and
    the socket listens)."""

    def __init__(self, config: uvicorn.Config, on_started: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_started = on_started

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        await super().startup(sockets=sockets)
        if self.started:
            self._on_started()


def serve_http(
    config: RouterConfig,
    embedder: Embedder | None,
    policy: SecurityPolicy,
    *,
    sock: socket.socket,
    on_started: Callable[[], None] = lambda: None,
    read_config: Callable[[], RouterConfig] | None = None,
) -> bool:
    """Serve on `sock` (from `bind`) until SIGINT/SIGTERM; False if the server never started
    (the lifespan failed), as uvicorn has logged. `on_started` runs once it serves;
    `read_config` reads the config file again, to apply it while serving."""
    # The SDK logs every session id at INFO; an id addresses a live session: keep it out.
    logging.getLogger("mcp.server.streamable_http_manager").setLevel(logging.WARNING)
    host, port = sock.getsockname()[:2]
    settings = uvicorn_config(config, embedder, policy, host, port, read_config)
    server = _Server(settings, on_started)
    server.run(sockets=[sock])
    return server.started
