"""`GET /metrics` (the Prometheus text format) and the count of REST requests behind it.

Behind the same guard as the REST API: Host and Origin checks, and the bearer token when
the router has one (configure the scraper's `authorization` with it).
"""

from __future__ import annotations

import anyio.to_thread
from fastapi import APIRouter, Request, Response

from router.server.lifecycle.metrics import CONTENT_TYPE
from router.server.lifecycle.state import RouterState

metrics_api = APIRouter()


def _router(request: Request) -> RouterState:
    state: RouterState = request.scope["state"]["router"]
    return state


async def count_rest_request(request: Request) -> None:
    """A dependency of every REST route: one `mcp_router_requests_total{surface="rest"}`,
    labelled with the method and the route's path (never the raw path: no unbounded labels)."""
    route = request.scope.get("route")
    path = getattr(route, "path", "other")
    _router(request).metrics.request("rest", f"{request.method} {path}")


@metrics_api.get(
    "/metrics",
    response_class=Response,
    responses={200: {"content": {CONTENT_TYPE: {}}, "description": "Prometheus text format"}},
    summary="Prometheus metrics",
)
async def metrics(request: Request) -> Response:
    """Requests by surface and method, search latency, tools listed and tokens saved, and
    each upstream's state, calls, errors and call latency (see
    `router.server.lifecycle.metrics`)."""
    collected = _router(request).metrics
    await anyio.to_thread.run_sync(collected.settle)  # token counts: tiktoken, off the loop
    return Response(collected.exposition(), media_type=CONTENT_TYPE)
