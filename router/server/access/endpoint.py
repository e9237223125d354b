"""Which endpoint (`router.endpoints`) the current request came in at: `/mcp/NAME` or
`/sse/NAME` on the HTTP front, `?endpoint=NAME` on the REST API, `serve --endpoint NAME` on
stdio. None: the router itself (`/mcp`, plain `serve`).

The transport sets it before the authorization layer runs (`router.server.access`), which
narrows the request's view by it, and the settings a handler reads are the endpoint's
(`RouterState.settings`). It travels with the request's context as the principal does."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_ENDPOINT: ContextVar[str | None] = ContextVar("mcp_router_endpoint", default=None)


def requested_endpoint() -> str | None:
    return _ENDPOINT.get()


@contextmanager
def at_endpoint(name: str | None) -> Iterator[None]:
    """Serve what runs inside as a request to endpoint `name` (None: the router itself)."""
    token = _ENDPOINT.set(name)
    try:
        yield
    finally:
        _ENDPOINT.reset(token)


def enter_endpoint(name: str | None) -> None:
    """Set the endpoint for the rest of the current context (a whole stdio serve, or a
    REST request's own task)."""
    _ENDPOINT.set(name)
