"""Which surface a request came in on, and the server middleware that counts every request
by surface and method (`router.server.lifecycle.metrics`)."""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, ServerRequestContext
from mcp_types.methods import SPEC_CLIENT_METHODS, SPEC_CLIENT_NOTIFICATION_METHODS

from router.server.lifecycle.state import RouterState

SSE_MESSAGES_PREFIX = "/messages"
"""Where legacy HTTP+SSE clients post (`router.server.http.mcp_endpoints.MESSAGES_PATH`)."""

_KNOWN_METHODS = SPEC_CLIENT_METHODS | SPEC_CLIENT_NOTIFICATION_METHODS


def surface_of(ctx: ServerRequestContext[Any, Any]) -> str:
    """`stdio`, `streamable-http` or `sse`: both HTTP transports hand the handler the HTTP
    request that carried the message (for SSE, the POST to `/messages/`); stdio has none."""
    url = getattr(ctx.request, "url", None)
    if url is None:
        return "stdio"
    return "sse" if url.path.startswith(SSE_MESSAGES_PREFIX) else "streamable-http"


def method_label(method: str) -> str:
    """The method, or `other` for one the spec does not define: a client must not be able to
    grow the metrics without bound by inventing method names."""
    return method if method in _KNOWN_METHODS else "other"


async def count_requests(ctx: ServerRequestContext[RouterState, Any], call_next: CallNext) -> Any:
    """Count each inbound request and notification before it is handled."""
    ctx.lifespan_context.metrics.request(surface_of(ctx), method_label(ctx.method))
    return await call_next(ctx)
