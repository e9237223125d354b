"""The one authorization layer, tried as an attacker would: a principal whose profile denies a
server reaches none of that server's resources, templates, prompts, completions or
subscriptions, nor its state in search coverage, nor `/metrics` and the detailed `/healthz`;
an operator does. The front is a real OAuth resource server (tests/support/identity_provider.py) in
front of the real npm everything server, which has resources, prompts and completions.
"""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import (
    SCRIPTS,
    Front,
    config,
    http_front,
    streamable_client,
    until_ready,
)
from tests.support.identity_provider import (
    IdentityProvider,
    bearer,
    module_provider,  # noqa: F401 (the provider fixture)
)
from tests.upstream.test_upstream_pool import Installed, installed  # noqa: F401 (a fixture)

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
OPERATOR_TOKEN = "operator-token-for-the-scraper"


@pytest.fixture(scope="module")
async def front(provider: IdentityProvider, installed: Installed) -> AsyncIterator[Front]:  # noqa: F811
    cfg = config(
        {
            "everything": installed.npm("server-everything", "stdio"),
            "toolbox": {"command": sys.executable, "args": [str(SCRIPTS / "toolbox.py")]},
            # down from the start: its last error is in an operator's search coverage
            "broken": {"command": sys.executable, "args": [str(SCRIPTS / "no-such-script.py")]},
        },
        http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
        profiles={
            "ops": {"groups": ["ops"], "allow": ["*"]},
            "default": {"deny": ["everything/*", "broken"]},
        },
        operators={"groups": ["ops"]},
    )
    policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None, OPERATOR_TOKEN)
    async with http_front(cfg, policy) as running:
        with anyio.fail_after(60):
            await until_ready(running.state)
        yield running


def plain(provider: IdentityProvider) -> dict[str, str]:
    return bearer(provider.token("mallory", AUDIENCE))


def operator(provider: IdentityProvider) -> dict[str, str]:
    return bearer(provider.token("olivia", AUDIENCE, groups=["ops"]))


async def refused(call: Any) -> MCPError:
    with pytest.raises(MCPError) as caught:
        await call
    return caught.value


@pytest.mark.filterwarnings("ignore::mcp.shared.exceptions.MCPDeprecationWarning")
async def test_a_denied_server_s_resources_prompts_and_completions_do_not_exist_for_the_caller(
    front: Front, provider: IdentityProvider
) -> None:
    with anyio.fail_after(60):
        async with streamable_client(front.mcp, operator(provider), mode="legacy") as ops:
            resources = (await ops.list_resources()).resources
            templates = (await ops.list_resource_templates()).resource_templates
            prompts = (await ops.list_prompts()).prompts
            resource = resources[0]
            readable = await ops.read_resource(str(resource.uri))
            prompt = next(p for p in prompts if not any(a.required for a in p.arguments or []))
            got = await ops.get_prompt(prompt.name)
            await ops.subscribe_resource(str(resource.uri))
        async with streamable_client(front.mcp, plain(provider), mode="legacy") as user:
            seen_resources = (await user.list_resources()).resources
            seen_templates = (await user.list_resource_templates()).resource_templates
            seen_prompts = (await user.list_prompts()).prompts
            read = await refused(user.read_resource(str(resource.uri)))
            get = await refused(user.get_prompt(prompt.name))
            complete = await refused(
                user.complete(types.PromptReference(name=prompt.name), {"name": "x", "value": ""})
            )
            subscribe = await refused(user.subscribe_resource(str(resource.uri)))
            never_existed = await refused(user.read_resource("test://no/such/resource"))

    # subscribe is a handshake-era method (the SDK warns that 2026-07-28 drops it)
    # the operator's view is not empty: the denial below is the profile's, not a dry server
    assert resources and templates and prompts
    assert readable.contents and got.messages
    assert (seen_resources, seen_templates, seen_prompts) == ([], [], [])
    for error in (read, get, complete, subscribe):
        assert error.error.code == types.INVALID_PARAMS
        assert "unknown" in error.error.message
    # indistinguishable from a resource that never existed
    assert read.error.message.replace(str(resource.uri), "URI") == (
        never_existed.error.message.replace("test://no/such/resource", "URI")
    )


async def test_metrics_and_the_detailed_health_need_an_operator(
    front: Front, provider: IdentityProvider
) -> None:
    async with httpx2.AsyncClient(base_url=front.url, timeout=10) as http:
        with anyio.fail_after(30):
            anonymous_health = await http.get("/healthz")
            user_health = await http.get("/healthz", headers=plain(provider))
            ops_health = await http.get("/healthz", headers=operator(provider))
            token_health = await http.get("/healthz", headers=bearer(OPERATOR_TOKEN))
            user_metrics = await http.get("/metrics", headers=plain(provider))
            anonymous_metrics = await http.get("/metrics")
            ops_metrics = await http.get("/metrics", headers=operator(provider))
            token_metrics = await http.get("/metrics", headers=bearer(OPERATOR_TOKEN))
            # the operator token opens the operator paths only, never the MCP or REST API
            token_tools = await http.get("/v1/tools", headers=bearer(OPERATOR_TOKEN))

    for health in (anonymous_health, user_health):
        assert health.status_code == 200
        assert health.json() == {"status": "ready"}
    for health in (ops_health, token_health):
        assert health.json()["upstreams"] == 3
    assert user_metrics.status_code == 403
    assert anonymous_metrics.status_code == 401
    for metrics in (ops_metrics, token_metrics):
        assert metrics.status_code == 200
        assert "mcp_router_requests_total" in metrics.text
    assert token_tools.status_code == 401


async def test_search_coverage_names_only_the_servers_the_caller_sees(
    front: Front, provider: IdentityProvider
) -> None:
    query = {"query": "echo a message, then translate the text"}
    with anyio.fail_after(30):
        async with streamable_client(front.mcp, operator(provider)) as ops:
            seen_by_ops = (await ops.call_tool("search_tools", query)).structured_content
        async with streamable_client(front.mcp, plain(provider)) as user:
            seen_by_user = (await user.call_tool("search_tools", query)).structured_content

    assert seen_by_ops is not None and seen_by_user is not None
    ops_tools = {tool["name"] for tool in seen_by_ops["tools"]}
    user_tools = {tool["name"] for tool in seen_by_user["tools"]}
    assert {"everything__echo", "toolbox__translate_text"} <= ops_tools
    assert "toolbox__translate_text" in user_tools
    assert not any(name.startswith("everything__") for name in user_tools)
    # the down server, with its last error, is the operator's to read, not the user's
    assert [down["name"] for down in seen_by_ops["down"]] == ["broken"]
    assert seen_by_user["down"] == [] and "broken" not in str(seen_by_user)
