"""A question a per-user upstream asks outside any call goes to its own principal's calls
only (issue 48, build item 10, case 4).

Each principal's connection used to be started from inside that principal's first call, and
kept that call's context for good: a question the upstream asked later out of band went to
the session of that first call, closed or not. The upstream is
`tests/upstreams/team_asking.py` over token exchange, asked on the handshake revision (where
a server may ask out of band): alice starts a deliberation in her first session and closes
it; the deliberation's question comes while bob's call is in flight, and then also while her
second session's call is. It must reach her second session, or be refused with an error
that says why; never bob, never her closed session, and never wait out the time limit.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext

from router.config import RouterConfig
from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.identity_provider import (
    EXCHANGE_CLIENT,
    IdentityProvider,
    bearer,
    module_provider,  # noqa: F401 (the provider fixture)
)
from tests.support.team_api import running_team_api

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
LIMIT = 60.0
OUTSIDE = "error -32600: mcp-router: elicitation/create from 'team' arrived outside any call"


@pytest.fixture(autouse=True)
def secrets_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ROUTER_SECRETS_KEY", "k" * 48)


def _config(provider: IdentityProvider, team: str, cache: Path) -> RouterConfig:
    client_id, secret = EXCHANGE_CLIENT
    oauth = {"grant": "token-exchange", "clientId": client_id, "clientSecret": secret}
    server = {"type": "http", "url": team, "oauth": oauth, "protocol": "legacy"}
    return config(
        {"team": server},
        cache_dir=str(cache),
        http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
    )


class Host:
    """One session's host: every question the router put to it, answered with its name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []
        self.progressed = anyio.Event()

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": self.name})

    async def progress(self, progress: float, total: float | None, message: str | None) -> None:
        self.progressed.set()


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result.model_dump_json()
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def _session_call(
    front: Front, provider: IdentityProvider, who: str, host: Host, tool: str, **options: Any
) -> str:
    """`who`'s handshake-era session, `host` answering its questions: one call of `tool`."""
    headers = bearer(provider.token(who, AUDIENCE))
    async with streamable_client(
        front.mcp, headers, mode="legacy", elicitation_callback=host.elicitation
    ) as client:
        return _text(await client.call_tool(tool, {}, **options))


async def _deliberating(front: Front, provider: IdentityProvider, first: Host) -> None:
    """alice's first session opens her connection and starts the deliberation, then closes."""
    headers = bearer(provider.token("alice", AUDIENCE))
    async with streamable_client(
        front.mcp, headers, mode="legacy", elicitation_callback=first.elicitation
    ) as client:
        _text(await client.call_tool("team__sign_in", {}))
        while front.state.snapshot.catalog.get("team__deliberate") is None:
            await front.state.changes.wait()
        started = await client.call_tool("team__deliberate", {"topic": "alice's raise"})
        assert _text(started) == "deliberating"


@pytest.mark.parametrize("asked_during", ["bob's call", "her second session's call"])
async def test_a_question_outside_any_call_reaches_its_own_principal_only(
    provider: IdentityProvider, tmp_path: Path, asked_during: str
) -> None:
    """With bob's call the only one in flight, alice's upstream asks out of band: alice has
    no call in flight, so the upstream is told so (bob is not asked). With her second
    session's call in flight beside bob's, that session is asked. Her first session, closed,
    is never asked."""
    first, second, bob = Host("alice-first"), Host("alice-second"), Host("bob")
    async with running_team_api(provider.url, "team_asking") as team:
        cfg = _config(provider, team, tmp_path / "cache")
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(LIMIT):
                await _deliberating(front, provider, first)
                if asked_during == "bob's call":
                    outcome = await _session_call(front, provider, "bob", bob, "team__conclude")
                else:
                    async with anyio.create_task_group() as group:
                        group.start_soon(
                            lambda: _session_call(
                                front,
                                provider,
                                "bob",
                                bob,
                                "team__hold",
                                progress_callback=bob.progress,
                            )
                        )
                        await bob.progressed.wait()  # bob's call is in flight there
                        outcome = await _session_call(
                            front, provider, "alice", second, "team__conclude"
                        )

    assert first.asked == [] and bob.asked == [], (first.asked, bob.asked)
    if asked_during == "bob's call":
        assert outcome.startswith(OUTSIDE), outcome
        assert second.asked == []
    else:
        assert outcome == "accept: alice-second", outcome
        assert second.asked == ["About alice's raise: go on?"]
