"""No surface skips the one authorization layer (`router.server.access.authorization`): every
request
method the SDK defines and the router serves, every notification it acts on and every HTTP
route has a rule, and one added beside the table is refused at run time (fail closed).
"""

from __future__ import annotations

import contextlib
import json
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path
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
from tests.support.http_serving import SCRIPTS, http_front, streamable_client, until_ready
from tests.support.identity_provider import bearer, running_provider

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


# Every request method, sent for real: one that reaches an upstream is metered and audited.

AUDIENCE = "https://router.test/mcp"
SHOP_PROMPT = types.PromptReference(name="shop__restock")
Sample = Callable[[Client], Awaitable[object]]


async def _listen(client: Client) -> None:
    async with client.listen(resource_subscriptions=["shop://items/listened"]):
        pass


async def _unsubscribe(client: Client) -> None:
    await client.subscribe_resource("shop://items/unsubscribed")
    await client.unsubscribe_resource("shop://items/unsubscribed")


async def _task_request(client: Client, method: str) -> None:
    """A task method on a guessed id (a task is its creator's alone: tests/server/tasks)."""
    params = {"taskId": "guessed", "inputResponses": {}}
    request = types.Request[dict[str, Any] | None, str](method=method, params=params)
    await client.session.send_request(request, types.EmptyResult)


SAMPLES: dict[str, tuple[str, Sample]] = {
    # method: (the client's era, a request for the upstream `shop`'s things)
    "initialize": ("legacy", lambda client: client.send_ping()),  # every client opens with it
    "ping": ("legacy", lambda client: client.send_ping()),
    "server/discover": ("2026-07-28", lambda client: client.send_ping()),
    "logging/setLevel": ("legacy", lambda client: client.set_logging_level("debug")),
    "tools/list": ("legacy", lambda client: client.list_tools()),
    "tools/call": ("legacy", lambda client: client.call_tool("shop__count_stock", {})),
    "resources/list": ("legacy", lambda client: client.list_resources()),
    "resources/templates/list": ("legacy", lambda client: client.list_resource_templates()),
    "resources/read": ("legacy", lambda client: client.read_resource("shop://config")),
    "resources/subscribe": (
        "legacy",
        lambda client: client.subscribe_resource("shop://items/subscribed"),
    ),
    "resources/unsubscribe": ("legacy", _unsubscribe),
    "prompts/list": ("legacy", lambda client: client.list_prompts()),
    "prompts/get": ("legacy", lambda client: client.get_prompt("shop__restock", {"sku": "a"})),
    "completion/complete": (
        "legacy",
        lambda client: client.complete(SHOP_PROMPT, {"name": "sku", "value": ""}),
    ),
    "subscriptions/listen": ("2026-07-28", _listen),
    "tasks/get": ("2026-07-28", lambda client: _task_request(client, "tasks/get")),
    "tasks/update": ("2026-07-28", lambda client: _task_request(client, "tasks/update")),
    "tasks/cancel": ("2026-07-28", lambda client: _task_request(client, "tasks/cancel")),
}
"""A real request for every method of `MCP_RULES`; a method added there needs one here."""
BACKGROUND = (
    "initialize",
    "server/discover",
    "ping",
    "tools/list",
    "resources/list",
    "resources/templates/list",
    "prompts/list",
)
"""What the router asks an upstream on its own (connecting, listing), not for a request."""
AUDITED_AS = {
    "tools/call": {"tool-call"},
    "resources/read": {"resource-read"},
    "prompts/get": {"prompt-get"},
    "completion/complete": {"completion"},
    "resources/subscribe": {"resource-subscribe", "resource-watch"},
    "resources/unsubscribe": {"resource-unsubscribe"},
}
"""The trail's kinds for what reached the upstream (a listen stream's watch subscribes)."""
CLEANUP = {"subscriptions/listen": "resources/unsubscribe"}
"""What the router does upstream on its own when a request's stream ends: the watch of a
listen stream that closed ends (it only lowers the upstream's work)."""


def _reached(log: Path, seen: int) -> list[str]:
    lines = log.read_text("utf-8").splitlines()[seen:]
    return [line for line in lines if not line.startswith(BACKGROUND) and "settled-by-" not in line]


def _records(trail: Path, who: str) -> list[dict[str, Any]]:
    text = trail.read_text("utf-8") if trail.exists() else ""  # written at the first record
    records = [json.loads(line) for line in text.splitlines()]
    return [r for r in records if (r.get("principal") or {}).get("sub") == who]


@pytest.mark.processes
@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_every_method_that_reaches_an_upstream_is_metered_and_audited(
    tmp_path: Path,
) -> None:
    """Each method is sent by a principal of its own, whose quota is one call a minute: the
    first request is on the trail if it reached the upstream, the second reaches it no more
    (a watch lands in the background: a later one's arrival shows the earlier ones')."""
    assert set(SAMPLES) == set(MCP_RULES), "give every ruled method a sample request"
    log, trail = tmp_path / "shop.log", tmp_path / "trail.jsonl"
    shop = {"command": sys.executable, "args": [str(SCRIPTS / "storeroom.py"), str(log)]}
    found: dict[str, list[str]] = {}
    settlers: list[str] = []
    async with running_provider() as provider:
        cfg = RouterConfig.model_validate(
            {
                "mcpServers": {"shop": shop},
                "router": {
                    "cache_dir": str(tmp_path / "cache"),
                    "http": {"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
                    "quotas": {"default": {"calls_per_minute": 1}},
                    "audit": {"path": str(trail)},
                },
            }
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:

            async def send(method: str, who: str) -> list[str]:
                era, sample = SAMPLES[method]
                seen = len(log.read_text("utf-8").splitlines())
                headers = bearer(provider.token(who, AUDIENCE))
                async with streamable_client(front.mcp, headers, mode=era) as client:
                    with contextlib.suppress(MCPError):
                        await sample(client)
                settlers.append(f"settler-{len(settlers)}")  # a fresh quota each
                await settled(settlers[-1])
                return _reached(log, seen)

            async def settled(who: str) -> None:
                uri = f"shop://items/settled-by-{who}"
                headers = bearer(provider.token(who, AUDIENCE))
                async with streamable_client(front.mcp, headers, mode="legacy") as client:
                    await client.subscribe_resource(uri)
                    while True:  # the upstream's log offers nothing to wait on
                        if f"resources/subscribe {uri}" in log.read_text("utf-8"):
                            return
                        await anyio.sleep(0.05)

            with anyio.fail_after(120):
                await until_ready(front.state)
                for method in SAMPLES:
                    who = method.replace("/", "-")
                    first = found[method] = await send(method, who)
                    kinds = {r["kind"] for r in _records(trail, who)}
                    for line in first:
                        upstream_method = line.split(" ")[0]
                        if CLEANUP.get(method) == upstream_method:
                            continue
                        audited = AUDITED_AS.get(upstream_method, set()) & kinds
                        assert audited, f"{method} reached the upstream ({line}) unaudited"
                    if first and method != "resources/unsubscribe":
                        again = await send(method, who)
                        assert again == [], f"{method} reached the upstream over its quota"
                        outcomes = [r["outcome"] for r in _records(trail, who)]
                        assert outcomes[-1] == "over-quota", (method, outcomes)
    # not vacuous: each of these reached the upstream once, under its quota
    reaching = {m for m, lines in found.items() if lines}
    assert reaching >= {
        "tools/call",
        "resources/read",
        "prompts/get",
        "completion/complete",
        "resources/subscribe",
        "resources/unsubscribe",
        "subscriptions/listen",
    }
