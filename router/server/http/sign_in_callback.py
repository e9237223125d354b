"""`GET /oauth/callback`: where a per-user sign-in's browser comes back to the router.

The authorization server redirects a person's browser here with the code and the `state`
the router's authorization URL carried. The browser shows no credential of the router's
front (it is a plain navigation), so the route is public; what binds the code to a
principal is the state, registered by that principal's connection attempt alone, single
use and expiring (`router.upstream.personal.pending`). An unknown or spent state changes
nothing and gets 400. The page answers in plain words and is never cached.
"""

from __future__ import annotations

import html

from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import BaseRoute, Route

from router.server.lifecycle.state import RouterState
from router.upstream.personal.pending import CALLBACK_ROUTE

_PAGE = (
    "<!doctype html><meta charset=utf-8><title>mcp-router</title>"
    "<p>{text}</p><p>You can close this tab.</p>"
)
_HEADERS = {"cache-control": "no-store", "referrer-policy": "no-referrer"}


def _page(text: str, status: int) -> HTMLResponse:
    return HTMLResponse(_PAGE.format(text=html.escape(text)), status, headers=_HEADERS)


async def sign_in_callback(request: Request) -> HTMLResponse:
    state: RouterState = request.scope["state"]["router"]
    query = request.query_params
    sign_in_state = query.get("state")
    if not sign_in_state or len(sign_in_state) > 512:
        return _page("This sign-in link carries no valid state.", 400)
    code, error = query.get("code"), query.get("error")
    if code is None and error is None:
        return _page("This sign-in link carries neither a code nor an error.", 400)
    arrival = await state.pool.sign_ins.arrive(
        sign_in_state, code, query.get("iss"), query.get("error_description") or error
    )
    if arrival == "unknown":
        return _page("This sign-in is unknown here, expired, or was already used.", 400)
    if code is None:
        return _page(f"The sign-in failed: {(error or '')[:200]}", 400)
    return _page("Signed in. The router goes on with your request.", 200)


def sign_in_routes() -> list[BaseRoute]:
    return [Route(CALLBACK_ROUTE, sign_in_callback, methods=["GET"], include_in_schema=False)]
