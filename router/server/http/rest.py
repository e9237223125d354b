"""The REST API: `POST /v1/route`, `GET /v1/tools`, `GET /healthz`.

Handlers read the front's state from the lifespan state (`request.state`), never globals.
"""

from __future__ import annotations

from typing import Annotated

import anyio.to_thread
from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import JSONResponse

from router.accounting.formats import ToolFormat
from router.core.errors import StillStarting
from router.server.access.authorization import current_access
from router.server.http.front import front_of
from router.server.http.rest_models import (
    REFUSALS,
    STILL_STARTING,
    ErrorBody,
    Health,
    PinsHealth,
    RouteRequest,
    RouteResponse,
    StoreHealth,
    ToolsResponse,
)
from router.server.http.routing import DEFAULT_PAGE, MAX_PAGE, catalog, route
from router.server.listing.answer import search
from router.server.listing.searching import Budget
from router.upstream.state import UpstreamState

api = APIRouter(responses=REFUSALS)


@api.post(
    "/v1/route",
    response_model=RouteResponse,
    responses=STILL_STARTING,
    summary="Rank the tools for a task",
)
async def route_tools(body: RouteRequest, request: Request) -> RouteResponse:
    """The pinned tools, then the top `k` (or those fitting `budget` tokens) for `query`, in
    the requested format, with each one's scores and the tokens of the routed list against
    the full list. Upstreams still connecting are named in `pending`."""
    front = front_of(request)
    state, costs, fmt = front["router"], front["costs"], body.format
    await state.readiness.until_covered()  # at start, wait (bounded) for the starting upstreams
    if not state.index.ready.is_set():
        raise StillStarting("no tools indexed yet: the upstreams are still connecting")
    budget = None
    if body.budget is not None:
        budget = Budget(body.budget, lambda tool: costs.counter.count_tool(tool, fmt))
    found = await search(state.searcher, body.query, body.k, budget=budget)

    def run() -> RouteResponse:
        return route(
            found,
            fmt,
            body.budget,
            costs=costs,
            metrics=state.metrics,
            visibility=state.visibility,
            pinned=pinned,
        )

    pinned = state.pinned()  # the endpoint's, with `?endpoint=`
    return await anyio.to_thread.run_sync(run)


@api.get(
    "/v1/tools",
    response_model=ToolsResponse,
    responses={
        409: {"model": ErrorBody, "description": "the catalog changed since `cursor` was made"}
    },
    summary="The catalog and upstream health",
)
async def list_catalog(
    request: Request,
    format: Annotated[ToolFormat, Query(description="format of `definition`")] = ToolFormat.MCP,
    limit: Annotated[
        int, Query(ge=1, le=MAX_PAGE, description="tools in this page (default 200)")
    ] = DEFAULT_PAGE,
    cursor: Annotated[
        str | None, Query(description="`next_cursor` of the previous page; none: the first page")
    ] = None,
) -> ToolsResponse:
    """A page of the indexed tools, each with its definition in `format` and whether its
    upstream is up, and every upstream's state (a down upstream's tools stay listed, marked
    unhealthy). Follow `next_cursor` for the next page; a cursor made before the catalog
    changed is 409, and the listing starts again without one."""
    state = front_of(request)["router"]
    view = state.visibility.view()
    return await catalog(state, format, view, limit=limit, cursor=cursor)


@api.get(
    "/healthz",
    response_model=Health,
    responses={503: {"model": Health, "description": "still starting: the index is not built"}},
    summary="Readiness",
)
async def healthz(request: Request, response: Response) -> Health | JSONResponse:
    """200 once a search runs at full speed (the model loaded, every upstream tried, the
    healthy ones indexed), 503 before. Upstreams that go down later show in `/v1/tools`,
    not here. `sessions` counts the MCP sessions open now; `held_tools` names the tools
    that tool pinning holds (they do not make the router unready). Everything but `status`
    is for operators only: null for anyone else."""
    front = front_of(request)
    state = front["router"]
    ready = front["readiness"].check(state)
    if not ready:
        response.status_code = 503
    if not current_access().operator:  # readiness only: the rest is an operator's
        return JSONResponse({"status": "ready" if ready else "starting"}, 200 if ready else 503)
    statuses = state.pool.statuses().values()
    needing = {s.name: s.last_error or "sign-in needed" for s in statuses if s.sign_in_needed}
    pins = state.index.pinning.health()
    return Health(
        status="ready" if ready else "starting",
        tools=len(state.snapshot.catalog),
        upstreams=len(statuses),
        healthy_upstreams=sum(s.healthy for s in statuses),
        pending=state.pending_upstreams(),
        idle=[s.name for s in statuses if s.state is UpstreamState.IDLE],
        sign_in_needed=needing,
        sessions=front["mcp"].open_sessions,
        personal_connections={s.name: s.principals for s in statuses if s.principals is not None},
        store=StoreHealth.model_validate(state.store.status().as_json()),
        held_tools=sorted(
            f"{h.record.server}/{h.record.called_as}" for h in state.snapshot.held.values()
        ),
        pins=None if pins is None else PinsHealth.model_validate(pins.as_json()),
    )
