"""No surface skips the one authorization layer (`router.server.access.authorization`): every
request
method the SDK defines and the router serves, every notification it acts on and every HTTP
route has a rule, and one added beside the table is refused at run time (fail closed).
"""

from __future__ import annotations

from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError
from mcp_types.methods import SPEC_CLIENT_METHODS
from starlette.routing import Route

from router.config import RouterConfig
from router.server.access.authorization import (
    MCP_RULES,
    NOTIFICATION_RULES,
    REST_RULES,
    UNGUARDED_ROUTES,
)
from router.server.http.app import create_app
from router.server.http.auth.security import SecurityPolicy
from router.server.lifecycle.app import build_server, router_state

METADATA_PREFIX = "/.well-known/oauth-protected-resource"


def _config(oauth: bool = True) -> RouterConfig:
    http = {"oauth": {"issuer": "http://127.0.0.1:9", "audience": "http://127.0.0.1:8/mcp"}}
    router = {"http": http if oauth else {}}
    return RouterConfig.model_validate({"mcpServers": {}, "router": router})


def _served(server: Any) -> tuple[set[str], set[str]]:
    # The SDK keeps its handler tables private; these two names are what it registers into.
    return set(server._request_handlers), set(server._notification_handlers)


def unruled_methods(server: Any) -> list[str]:
    requests, notifications = _served(server)
    return sorted((requests - set(MCP_RULES)) | (notifications - set(NOTIFICATION_RULES)))


def unruled_routes(app: Any) -> list[str]:
    rest = set(app.openapi()["paths"])
    missing = sorted(rest - set(REST_RULES))
    for route in app.routes:
        path = getattr(route, "path", None)
        if not isinstance(route, Route) or path in rest:
            continue
        if path not in UNGUARDED_ROUTES and not str(path).startswith(METADATA_PREFIX):
            missing.append(str(path))
    return missing


def test_every_request_method_and_notification_the_router_serves_has_a_rule() -> None:
    server = build_server(_config(), None)
    requests, _ = _served(server)

    assert unruled_methods(server) == []
    # every method of the spec is either served under a rule or not served at all (-32601)
    assert all(method in MCP_RULES or method not in requests for method in SPEC_CLIENT_METHODS)
    # the rules name only what is served: a stale rule would hide a missing handler
    assert set(MCP_RULES) <= requests | {"initialize"}


def test_a_handler_added_beside_the_table_is_named() -> None:
    server = build_server(_config(), None)

    async def leak(ctx: Any, params: Any) -> types.EmptyResult:
        return types.EmptyResult()

    server.add_request_handler("x-leak/read", types.RequestParams, leak)

    assert unruled_methods(server) == ["x-leak/read"]


@pytest.mark.parametrize("oauth", [True, False])
def test_every_http_route_has_a_rule(oauth: bool) -> None:
    cfg = _config(oauth)
    policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
    app = create_app(cfg, None, policy)

    assert unruled_routes(app) == []
    assert set(REST_RULES) <= set(app.openapi()["paths"])


def test_a_rest_route_added_beside_the_table_is_named() -> None:
    cfg = _config(False)
    app = create_app(cfg, None, SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None))

    @app.get("/v1/leak")
    async def leak() -> dict[str, str]:
        return {"leaked": "yes"}

    assert unruled_routes(app) == ["/v1/leak"]


async def test_a_method_without_a_rule_is_refused_when_called() -> None:
    """Fail closed at run time too: the handler never runs."""
    reached = anyio.Event()

    async def leak(ctx: Any, params: Any) -> types.EmptyResult:
        reached.set()
        return types.EmptyResult()

    cfg = _config(False)
    async with router_state(cfg, None) as state:
        server = build_server(cfg, None, state=state)
        server.add_request_handler("x-leak/read", types.RequestParams, leak)
        async with Client(server, mode="legacy") as client:
            with anyio.fail_after(10), pytest.raises(MCPError) as refused:
                await client.session.send_request(
                    types.Request[types.RequestParams | None, str](
                        method="x-leak/read", params=None
                    ),
                    types.EmptyResult,
                )
            listed = await client.list_tools()

    assert refused.value.error.code == types.METHOD_NOT_FOUND
    assert not reached.is_set()
    assert [tool.name for tool in listed.tools] == ["search_tools", "call_tool"]


async def test_a_rest_route_without_a_rule_is_refused_when_called() -> None:
    cfg = _config(False)
    app = create_app(cfg, None, SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None))

    @app.get("/v1/leak")
    async def leak() -> dict[str, str]:
        return {"leaked": "yes"}

    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
        with anyio.fail_after(10):
            answer = await http.get("/v1/leak")

    assert answer.status_code == 404
    assert "leaked" not in answer.text
