"""The one door: every MCP request and every REST route passes here before a handler reads data.

`authorize` is the MCP server's middleware (`build_server`), and
`router.server.http.auth.authorize.authorize_rest` its REST twin, a dependency of every REST
route (`create_app`). Each looks its method or route up in a table of rules (`MCP_RULES`,
`NOTIFICATION_RULES`, `REST_RULES`) and fails closed: a method or route that is not in its table
is refused (-32601, or 404 for REST) before any handler runs, so a handler added later without a
rule is unreachable, and `tests/server/access/test_authorization_surfaces.py` names it. A
request that passes gets its `Access` (the principal, its profile view, whether it is an
operator) set for everything below it in the request's context, worker threads and code-mode
runs included; handlers read it with `current_access()`, which refuses when the layer did not
run.

What each rule means for the handlers behind it (they ask the `Access`, never the token):
- `tools`: listing, search, calls, `read_result`: tools outside the view do not exist for
  the caller (`Visibility`, `ToolNames`, `Searcher`); coverage names only the servers the
  view sees. A task (`tasks/*`) is its principal's alone (`router.server.tasks.table`).
- `servers`: resources, templates, prompts, completion, subscriptions and listen streams are
  served from the upstreams the view may see (`visible_upstreams`): another server's are
  unknown, exactly as ones that never existed.
- `operator`: `/metrics` and the detailed `/healthz` need an operator (`router.operators`,
  the operator token, or a front without identities, whose every caller sees everything).
- `open`: carries no data (the handshake, ping, the plain `/healthz`, the playground page).
"""

from __future__ import annotations

from collections.abc import Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.context import CallNext, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp_types import METHOD_NOT_FOUND

from router.policy.profiles import Principal, View
from router.upstream.personal.acting import Acting, acting_as, enter_acting

if TYPE_CHECKING:
    from router.server.access.visibility import Visibility
    from router.upstream import Upstream

Rule = Literal["open", "tools", "servers", "operator"]

MCP_RULES: Mapping[str, Rule] = {
    "initialize": "open",
    "ping": "open",
    "server/discover": "open",
    "logging/setLevel": "open",
    "tools/list": "tools",
    "tools/call": "tools",
    "resources/list": "servers",
    "resources/templates/list": "servers",
    "resources/read": "servers",
    "resources/subscribe": "servers",
    "resources/unsubscribe": "servers",
    "prompts/list": "servers",
    "prompts/get": "servers",
    "completion/complete": "servers",
    "subscriptions/listen": "servers",
    "tasks/get": "tools",
    "tasks/update": "tools",
    "tasks/cancel": "tools",
}
"""Every request method the router serves, and what it may reach."""
NOTIFICATION_RULES: Mapping[str, Rule] = {
    "notifications/initialized": "open",
    "notifications/cancelled": "open",
    "notifications/progress": "open",
    "notifications/roots/list_changed": "open",
}
"""Every notification the router acts on; others are dropped here."""
REST_RULES: Mapping[str, Rule] = {
    "/v1/route": "tools",
    "/v1/search": "tools",
    "/v1/tools": "tools",
    "/v1/auth": "servers",
    "/v1/auth/{server}": "servers",
    "/v1/secrets": "servers",
    "/v1/secrets/{server}": "servers",
    "/healthz": "open",
    "/metrics": "operator",
}
"""Every REST route, by its path; `/healthz` shows its detail to operators only."""
UNGUARDED_ROUTES: Mapping[str, Literal["mcp", "open"]] = {
    "/mcp": "mcp",
    "/sse": "mcp",
    "/mcp/{endpoint}": "mcp",
    "/sse/{endpoint}": "mcp",
    "/messages/": "mcp",
    "/messages": "mcp",
    "/": "open",
    "/playground/playground.js": "open",
    "/playground/playground.css": "open",
    "/playground/favicon.svg": "open",
    "/oauth/start": "open",
    "/oauth/callback": "open",
    "/keys/start": "open",
    "/.well-known/oauth-protected-resource": "open",
    "/.well-known/oauth-protected-resource/mcp": "open",
    "/openapi.json": "open",
    "/docs": "open",
    "/docs/oauth2-redirect": "open",
    "/redoc": "open",
}
"""The HTTP routes that are not REST routes: the MCP transports, whose every message meets
`authorize`, and pages that hold no data (the playground, the protected resource metadata,
the API's own description)."""
ANONYMOUS = "mcp_router_anonymous"
"""ASGI scope key (`GuardMiddleware`): a public path reached without a credential checked."""
OPERATOR = "mcp_router_operator"
"""ASGI scope key (`GuardMiddleware`): the request carried the operator token."""


@dataclass(frozen=True, slots=True)
class Access:
    """What the layer decided about the current request."""

    principal: Principal | None
    view: View
    operator: bool
    visibility: Visibility | None = None

    def sees_server(self, server: str) -> bool:
        return self.visibility is None or self.visibility.permits_server(self.view, server)


_ACCESS: ContextVar[Access | None] = ContextVar("mcp_router_access", default=None)


class Unauthorized(RuntimeError):
    """A handler ran without the layer: a bug, refused rather than served unfiltered."""


def current_access() -> Access:
    """The current request's `Access`; raises `Unauthorized` outside the layer."""
    access = _ACCESS.get()
    if access is None:
        raise Unauthorized("mcp-router: this request did not pass the authorization layer")
    return access


def enter(access: Access) -> None:
    """Set `access` for the rest of the current context (a REST request's own task)."""
    _ACCESS.set(access)
    enter_acting(acting_of(access.principal))


def acting_of(principal: Principal | None) -> Acting | None:
    """On whose behalf per-user upstreams are reached (`router.upstream.personal`): the
    principal, with the access token it came with."""
    if principal is None:
        return None
    token = get_access_token()
    return Acting(
        principal.key, principal.subject, principal.issuer, token.token if token else None
    )


def access_for(visibility: Visibility, *, operator_token: bool = False) -> Access:
    """The `Access` of the current request's principal (`Visibility` reads the token)."""
    principal = visibility.principal()
    return Access(
        principal,
        visibility.view(),
        operator_token or visibility.is_operator(principal),
        visibility,
    )


def visible_upstreams(upstreams: Mapping[str, Upstream]) -> dict[str, Upstream]:
    """The upstreams whose resources, prompts and completions the current request may see."""
    access = current_access()
    return {name: up for name, up in upstreams.items() if access.sees_server(name)}


async def authorize(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
    """The MCP server's middleware: a method without a rule is refused, every other one runs
    with its `Access` set."""
    notification = ctx.request_id is None and ctx.method.startswith("notifications/")
    rules = NOTIFICATION_RULES if notification else MCP_RULES
    if ctx.method not in rules:
        if notification:
            return None  # a notification is never answered: dropped
        raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=ctx.method)
    visibility: Visibility = ctx.lifespan_context.settings.visibility  # the RouterState's
    access = access_for(visibility)
    token = _ACCESS.set(access)
    try:
        with acting_as(acting_of(access.principal)):
            return await call_next(ctx)
    finally:
        _ACCESS.reset(token)
