"""A per-user server's tools are shown to each principal as its own connection lists them
(issue 48, build item 4): the index holds them once, and every listing surface (tools/list,
search_tools, a misspelt name's suggestions, `/v1/search`, `/v1/tools`) filters them by the
acting principal's own listing; without a connection, a principal is shown `sign_in` only.

The upstream is `tests/upstreams/team_api.py` (token exchange): each caller lists its own
tool `payslip_<subject>`. The attacker is bob, on a front where alice's connection is open
and the index holds her `team__payslip_alice`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import MCPError

from router.config import RouterConfig
from router.server.http.auth.security import SecurityPolicy
from router.server.lifecycle.state import RouterState
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.identity_provider import (
    EXCHANGE_CLIENT,
    IdentityProvider,
    bearer,
    module_provider,  # noqa: F401 (the provider fixture)
)
from tests.support.serving import META_TOOLS
from tests.support.team_api import running_team_api

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
LIMIT = 60.0
HERS = "team__payslip_alice"
HIS = "team__payslip_bob"


@pytest.fixture(autouse=True)
def secrets_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ROUTER_SECRETS_KEY", "k" * 48)


def _config(
    provider: IdentityProvider, team: str, cache: Path, mode: str, **router: Any
) -> RouterConfig:
    client_id, secret = EXCHANGE_CLIENT
    oauth = {"grant": "token-exchange", "clientId": client_id, "clientSecret": secret}
    return config(
        {"team": {"type": "http", "url": team, "oauth": oauth}},
        cache_dir=str(cache),
        mode=mode,
        http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
        **router,
    )


def _policy(cfg: RouterConfig) -> SecurityPolicy:
    return SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)


def _headers(provider: IdentityProvider, who: str) -> dict[str, str]:
    return bearer(provider.token(who, AUDIENCE))


async def _signed_in(front: Front, provider: IdentityProvider, who: str, tool: str) -> None:
    """`who` calls `team__sign_in`, which opens its connection; until the index holds
    `tool`, which that connection lists."""
    async with streamable_client(front.mcp, _headers(provider, who)) as client:
        called = await client.call_tool("team__sign_in", {})
        assert not called.is_error, called.model_dump_json()
    await _until_indexed(front.state, tool)


async def _until_indexed(state: RouterState, name: str) -> None:
    while state.snapshot.catalog.get(name) is None:
        await state.changes.wait()


async def _search(client: Any, query: str) -> str:
    found = await client.call_tool("search_tools", {"query": query, "k": 10})
    assert not found.is_error, found.model_dump_json()
    return str(found.model_dump_json())


async def _misspelt(client: Any, name: str) -> str:
    """What a call of the unknown `name` answers (its suggestions)."""
    try:
        answer = await client.call_tool(name, {})
    except MCPError as exc:
        return f"{exc} {exc.error.data!r}"
    assert answer.is_error, answer.model_dump_json()
    return str(answer.model_dump_json())


async def test_another_principals_own_tool_is_named_on_no_surface_of_his(
    provider: IdentityProvider, tmp_path: Path
) -> None:
    """Dynamic mode: with alice's connection open, bob's search, his session's listing
    after it, a misspelt call's suggestions and the REST search and catalog never name her
    payslip tool. Called by its name, it opens his own connection (sign-in on first use)
    and is refused against his own listing. With his own connection, he is shown his own
    payslip tool and still not hers. alice is shown hers (the control)."""
    changed = anyio.Event()

    async def on_message(message: object) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with running_team_api(provider.url) as team:
        cfg = _config(provider, team, tmp_path / "cache", "dynamic")
        async with http_front(cfg, _policy(cfg)) as front:
            with anyio.fail_after(LIMIT):
                await _signed_in(front, provider, "alice", HERS)
                alice = _headers(provider, "alice")
                async with streamable_client(front.mcp, alice, mode="legacy") as client:
                    assert HERS in await _search(client, "alice payslip")
                    assert HERS in await _misspelt(client, "team__payslip_alise")

                bob = _headers(provider, "bob")
                async with streamable_client(
                    front.mcp, bob, mode="legacy", message_handler=on_message
                ) as client:
                    searched = await _search(client, "sign in to alice payslip")
                    await changed.wait()
                    listed = [t.name for t in (await client.list_tools()).tools]
                    misspelt = await _misspelt(client, "team__payslip_alise")
                async with httpx2.AsyncClient(base_url=front.url, headers=bob) as http:
                    body = {"query": "sign in to alice payslip", "k": 10, "format": "mcp"}
                    rest_search = (await http.post("/v1/search", json=body)).text
                    catalog = (await http.get("/v1/tools")).text

                for seen in (searched, repr(listed), misspelt, rest_search, catalog):
                    assert "payslip_alice" not in seen, seen
                assert listed == ["team__sign_in", *META_TOOLS], listed  # his search's
                assert "team__sign_in" in rest_search, rest_search
                assert "team__sign_in" in catalog and "team__whoami" not in catalog, catalog

                async with streamable_client(front.mcp, bob, mode="legacy") as client:
                    called = await _misspelt(client, HERS)
                assert "unknown tool 'team/payslip_alice'" in called, called
                assert "4,200" not in called, called

                await _signed_in(front, provider, "bob", HIS)
                async with streamable_client(front.mcp, bob, mode="legacy") as client:
                    own = await _search(client, "bob alice payslip")
                assert HIS in own and "payslip_alice" not in own, own


async def _shown(client: Any, mode: str) -> list[str]:
    """The tool names a listing shows: tools/list in mode all, a program's search in code
    mode."""
    if mode == "all":
        return [t.name for t in (await client.list_tools()).tools]
    program = "[t['name'] for t in await search_tools('sign in to alice bob payslip', 10)]"
    ran = await client.call_tool("execute", {"code": program})
    assert not ran.is_error, ran.model_dump_json()
    text = ran.content[0]
    assert isinstance(text, types.TextContent)
    return list(json.loads(text.text))


@pytest.mark.parametrize("mode", ["all", "code"])
async def test_each_principal_is_shown_what_its_own_connection_lists(
    provider: IdentityProvider, tmp_path: Path, mode: str
) -> None:
    """Mode all's tools/list and a code-mode program's search: bob, without a connection,
    is shown `sign_in` only while alice's payslip tool is indexed; with his own, his
    payslip tool and `sign_in`, never hers. Both are of one profile: what one is shown is
    not kept for the other."""
    staff = {"staff": {"subjects": ["alice", "bob"], "allow": ["team/*"]}}
    async with running_team_api(provider.url) as team:
        cfg = _config(provider, team, tmp_path / "cache", mode, profiles=staff)
        async with http_front(cfg, _policy(cfg)) as front:
            with anyio.fail_after(LIMIT):
                await _signed_in(front, provider, "alice", HERS)
                alice, bob = _headers(provider, "alice"), _headers(provider, "bob")
                async with streamable_client(front.mcp, bob) as client:
                    before = await _shown(client, mode)
                async with streamable_client(front.mcp, alice) as client:
                    hers = await _shown(client, mode)  # after his, on the same snapshot
                await _signed_in(front, provider, "bob", HIS)
                async with streamable_client(front.mcp, bob) as client:
                    after = await _shown(client, mode)
    assert HERS in hers and HIS not in hers, hers
    assert before == ["team__sign_in"], before
    assert HIS in after and "team__sign_in" in after and HERS not in after, after
