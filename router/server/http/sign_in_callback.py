"""`GET /oauth/start` and `GET /oauth/callback`: where a per-user sign-in's browser goes
through the router, before and after the upstream's authorization server; and
`/keys/start`, where a principal enters its own value for a server's `${user:NAME}`
(`router.upstream.personal.key_entry`: a single-use link, a cookie bound to the flow, a form
whose POST needs that cookie and its CSRF token; the value is never logged or shown).

A plain navigation shows no credential of the router's front, so both routes are public.
The first hop (`/oauth/start?ticket=T`, the link the principal is shown) says whose sign-in
it is; going on spends the ticket, gives that browser a cookie bound to the flow and
redirects to the authorization server (`router.upstream.personal.tickets`). The callback
takes the code and the `state` back, and hands them to the waiting attempt only with that
cookie (`router.upstream.personal.pending`): a sign-in another browser finishes stores
nothing (the OAuth login-CSRF case). Every page answers in plain words, is never cached,
and sends no referrer.
"""

from __future__ import annotations

import html
import logging
from urllib.parse import parse_qs, urlencode

import anyio.to_thread
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response
from starlette.routing import BaseRoute, Route

from router.config.personal import user_value_names
from router.core.errors import AuditUnavailable
from router.server.calls.audit import write
from router.server.lifecycle.state import RouterState
from router.upstream.auth.signin import SIGN_IN_TIMEOUT
from router.upstream.personal.key_entry import KEYS_ROUTE, KeyFlow, csrf_of
from router.upstream.personal.keys import BadValue
from router.upstream.personal.pending import CALLBACK_ROUTE
from router.upstream.personal.tickets import START_ROUTE, cookie_names

logger = logging.getLogger(__name__)

_PAGE = "<!doctype html><meta charset=utf-8><title>mcp-router</title>{body}"
_CLOSE = "<p>You can close this tab.</p>"
_HEADERS = {"cache-control": "no-store", "referrer-policy": "no-referrer"}
_MAX_PARAM = 512
_MAX_FORM = 64 * 1024


def _page(text: str, status: int, more: str = _CLOSE) -> HTMLResponse:
    body = f"<p>{html.escape(text)}</p>{more}"
    return HTMLResponse(_PAGE.format(body=body), status, headers=_HEADERS)


def _router(request: Request) -> RouterState:
    state: RouterState = request.scope["state"]["router"]
    return state


async def sign_in_start(request: Request) -> Response:
    """The first hop: says whose sign-in it is; `go=1` spends the ticket, binds the flow to
    this browser with a cookie and goes on to the authorization server."""
    pending = _router(request).pool.sign_ins
    secret = request.query_params.get("ticket") or ""
    if not secret or len(secret) > _MAX_PARAM:
        return _page("This sign-in link carries no valid ticket.", 400)
    if request.query_params.get("go") != "1":
        ticket = await pending.tickets.peek(secret)
        if ticket is None:
            return _page("This sign-in link is unknown here, expired, or was already opened.", 400)
        text = (
            f"This signs {ticket.subject} (of {ticket.issuer}) in to {ticket.upstream}. "
            f"Go on only if you are {ticket.subject} and asked for it: whoever sent you "
            f"this link would act at {ticket.upstream} as you."
        )
        go = html.escape(f"{START_ROUTE}?{urlencode({'ticket': secret, 'go': '1'})}")
        return _page(
            text, 200, f'<p><a href="{go}">Sign in to {html.escape(ticket.upstream)}</a></p>'
        )
    opened = await pending.open_ticket(secret)
    if opened is None:
        return _page("This sign-in link is unknown here, expired, or was already opened.", 400)
    ticket, browser = opened
    name = cookie_names(ticket.state)[0 if ticket.secure else 1]
    response = RedirectResponse(ticket.url, 303, headers=_HEADERS)
    response.set_cookie(
        name,
        browser,
        max_age=int(SIGN_IN_TIMEOUT) + 60,
        path="/",
        secure=ticket.secure,
        httponly=True,
        samesite="lax",
    )
    return response


async def sign_in_callback(request: Request) -> Response:
    pending = _router(request).pool.sign_ins
    query = request.query_params
    sign_in_state = query.get("state")
    if not sign_in_state or len(sign_in_state) > _MAX_PARAM:
        return _page("This sign-in link carries no valid state.", 400)
    code, error = query.get("code"), query.get("error")
    if code is None and error is None:
        return _page("This sign-in link carries neither a code nor an error.", 400)
    names = cookie_names(sign_in_state)
    browser = next((request.cookies[n] for n in names if n in request.cookies), None)
    arrival = await pending.arrive(
        sign_in_state, code, query.get("iss"), query.get("error_description") or error, browser
    )
    if arrival == "unknown":
        return _page("This sign-in is unknown here, expired, or was already used.", 400)
    if arrival == "refused":
        logger.warning("a per-user sign-in came back in a browser that did not open its link")
        return _page(
            "This sign-in was started for someone else, or in another browser: nothing was "
            "stored. Only the person who asked for it can finish it, in the browser that "
            "opened its link.",
            403,
        )
    response = (
        _page(f"The sign-in failed: {(error or '')[:200]}", 400)
        if code is None
        else _page("Signed in. The router goes on with your request.", 200)
    )
    for name in names:
        if name in request.cookies:
            response.delete_cookie(name, path="/", secure=name.startswith("__Host-"))
    return response


def _cookie(request: Request, state: str) -> str | None:
    return next((request.cookies[n] for n in cookie_names(state) if n in request.cookies), None)


async def key_start(request: Request) -> Response:
    """A per-user value's link: spends its ticket, binds the flow to this browser and shows
    the form naming whose value it is, for which server."""
    router = _router(request)
    secret = request.query_params.get("ticket") or ""
    if not secret or len(secret) > _MAX_PARAM:
        return _page("This key-entry link carries no valid ticket.", 400)
    opened = await router.pool.sign_ins.keys.open(secret)
    server = None if opened is None else router.pool.accounts().keyed.get(opened[0].upstream)
    if opened is None or server is None:
        return _page("This key-entry link is unknown here, expired, or was already opened.", 400)
    flow, browser = opened
    text = (
        f"This stores the key {flow.subject} (of {flow.issuer}) uses at {flow.upstream}. Go "
        f"on only if you are {flow.subject} and asked for it: the router acts at "
        f"{flow.upstream} with this key for {flow.subject}'s requests."
    )
    fields = "".join(
        f'<p><label>{html.escape(n)} <input type=password name="value:{html.escape(n)}" '
        f"autocomplete=off required></label></p>"
        for n in user_value_names(server)
    )
    hidden = f'<input type=hidden name=flow value="{html.escape(flow.state)}">'
    hidden += f'<input type=hidden name=csrf value="{csrf_of(browser)}">'
    form = f'<form method=post action="{KEYS_ROUTE}">{hidden}{fields}<button>Store</button></form>'
    response = _page(text, 200, form)
    response.set_cookie(
        cookie_names(flow.state)[0 if flow.secure else 1],
        browser,
        max_age=int(SIGN_IN_TIMEOUT) + 60,
        path="/",
        secure=flow.secure,
        httponly=True,
        samesite="strict",
    )
    return response


async def key_enter(request: Request) -> Response:
    """The form's values: stored for the flow's principal only with the cookie its link
    gave and the form's CSRF token, once; the waiting connection goes on."""
    router = _router(request)
    if int(request.headers.get("content-length") or _MAX_FORM + 1) > _MAX_FORM:
        return _page("This form is too large.", 413)
    form = {k: v[0] for k, v in parse_qs((await request.body()).decode(errors="replace")).items()}
    state = form.get("flow", "")[:_MAX_PARAM]
    keys = router.pool.sign_ins.keys
    flow = await keys.flow(state, _cookie(request, state), form.get("csrf"))
    accounts = router.pool.accounts()
    server = None if flow is None else accounts.keyed.get(flow.upstream)
    if flow is None or server is None:
        logger.warning("a per-user key form came from a browser that did not open its link")
        return _page(
            "This form was not opened in this browser, expired, or was already used: nothing "
            "was stored. Call the tool again for a new link.",
            403,
        )
    values = {n: form.get(f"value:{n}", "") for n in user_value_names(server)}
    store = accounts.user_keys()
    try:
        await anyio.to_thread.run_sync(store.set, flow.upstream, server, flow.owner, values)
    except BadValue as exc:
        return _page(f"Nothing was stored: {exc}. Go back and enter it again.", 400)
    await keys.entered(flow.state)
    logger.info("upstream %s: a principal entered its key on the front's page", flow.upstream)
    response = _page("Stored. The router goes on with your request.", 200)
    try:
        await key_noted(router, flow, "entered")
    except AuditUnavailable:
        response = _page("Stored, but the audit trail failed: tell an operator.", 503)
    for name in cookie_names(state):
        response.delete_cookie(name, path="/", secure=name.startswith("__Host-"))
    return response


async def key_noted(router: RouterState, flow: KeyFlow, outcome: str) -> None:
    """A key entry on the trail: who, for which server (its time is the trail's)."""
    if router.audit is not None:
        who = {"sub": flow.subject, "iss": flow.issuer}
        record = {"kind": "key-entry", "principal": who, "server": flow.upstream, "via": "page"}
        await write(router.audit, {**record, "outcome": outcome})


def sign_in_routes() -> list[BaseRoute]:
    return [
        Route(KEYS_ROUTE, key_start, methods=["GET"], include_in_schema=False),
        Route(KEYS_ROUTE, key_enter, methods=["POST"], include_in_schema=False),
        Route(START_ROUTE, sign_in_start, methods=["GET"], include_in_schema=False),
        Route(CALLBACK_ROUTE, sign_in_callback, methods=["GET"], include_in_schema=False),
    ]
