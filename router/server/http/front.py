"""What the HTTP front's lifespan yields to every request, and its readiness latch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from fastapi import Request

if TYPE_CHECKING:
    from router.server.http.mcp_endpoints import McpEndpoints
    from router.server.http.routing import ListCosts
    from router.server.lifecycle.state import RouterState


@dataclass
class ReadyLatch:
    """Ready once a search can be answered at full speed: the model is loaded, every
    upstream's first attempt has ended and every healthy one's tools are indexed. It then
    stays ready (a later re-index must not take a replica out of a load balancer's rotation)."""

    ready: bool = False

    def check(self, state: RouterState) -> bool:
        if not self.ready and state.index.ready.is_set():
            settled = all(s.settled for s in state.pool.statuses().values())
            self.ready = settled and state.readiness.coverage().complete
        return self.ready


class FrontState(TypedDict):
    """What the HTTP front's lifespan yields; Starlette hands a copy to every request."""

    router: RouterState
    mcp: McpEndpoints
    costs: ListCosts
    readiness: ReadyLatch


def front_of(request: Request) -> FrontState:
    """The front's state of one request."""
    state: FrontState = request.scope["state"]
    return state
