"""Per-user upstream credentials (issue 36): each principal at the front signs in to an
OAuth-protected upstream itself, and its calls carry its own token, never another's.

The upstream is `tests/upstreams/oauth_protected.py --login`, an SDK-written server whose
authorization server asks who signs in, and records which subject and token each call came
with (`/control/calls`, `/control/tokens`). The front is the router's HTTP app on loopback
with identities from `tests/identity_provider.py`; its audience names `router.test`, a
name the test's browser resolves to the front, as a DNS name would. Hosts are the SDK's
client; the one that can show URLs answers URL elicitation by following the link as a
person signing in would (`Browser`).
"""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import httpx2
import mcp_types as types
import pytest

from router.config import RemoteServer, RouterConfig
from router.server.http.auth.security import SecurityPolicy
from router.store.records import FileRecords
from router.upstream.personal.credentials import PERSONAL_KIND, personal_files
from tests.http_serving import Front, config, http_front, streamable_client
from tests.identity_provider import IdentityProvider, running_provider
from tests.test_upstream_auth import Upstream, start_upstream

AUDIENCE = "https://router.test/mcp"
KEY = "k" * 48
LIMIT = 60.0


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    yield from start_upstream(tmp_path_factory.mktemp("notes"), 3600, "--login")


@pytest.fixture(autouse=True)
def secrets_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ROUTER_SECRETS_KEY", KEY)


async def _control(upstream: Upstream, what: str) -> Any:
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{upstream.issuer}/control/{what}")
        answer.raise_for_status()
        return answer.json()


class Browser:
    """A host's URL elicitation, answered by a person called `user` who opens the link,
    signs in at the upstream's page, and comes back to the router (`router.test` is the
    front)."""

    def __init__(self, front: Front, user: str) -> None:
        self.front = front
        self.user = user
        self.asked: list[str] = []

    async def __call__(self, context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        self.asked.append(params.url)
        async with httpx2.AsyncClient(timeout=10) as http:
            login = await http.get(params.url)  # the authorization endpoint: to its login page
            assert login.status_code == 302, login.text
            page = str(login.headers["location"])
            back = await http.get(f"{page}&user={self.user}")
            assert back.status_code == 302, back.text
            callback = urlsplit(str(back.headers["location"]))
            assert callback.netloc == "router.test" and callback.path == "/oauth/callback"
            done = await http.get(f"{self.front.url}{callback.path}?{callback.query}")
            assert done.status_code == 200, done.text
        return types.ElicitResult(action="accept")


def _config(
    provider: IdentityProvider, upstream: Upstream, cache: Path, **router: Any
) -> RouterConfig:
    return config(
        {"notes": {"type": "http", "url": upstream.url, "oauth": {"perUser": True}}},
        cache_dir=str(cache),
        mode="all",
        http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
        **router,
    )


def _policy(cfg: RouterConfig) -> SecurityPolicy:
    return SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)


async def _call(
    front: Front,
    provider: IdentityProvider,
    who: str,
    tool: str,
    browser: Browser | None = None,
) -> types.CallToolResult:
    headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
    options = {"elicitation_callback": browser} if browser is not None else {}
    async with streamable_client(front.mcp, headers, **options) as client:
        return await client.call_tool(tool, {})


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def test_two_principals_each_sign_in_through_the_front_and_call_as_themselves(
    notes: Upstream, tmp_path: Path
) -> None:
    async with running_provider() as provider:
        cfg = _config(provider, notes, tmp_path / "cache")
        async with http_front(cfg, _policy(cfg)) as front:
            with anyio.fail_after(LIMIT):
                alice = Browser(front, "alice")
                first = await _call(front, provider, "alice", "notes__sign_in", alice)
                assert "Signed in to notes" in _text(first), _text(first)
                mine = await _call(front, provider, "alice", "notes__my_notes")
                assert _text(mine) == "notes of alice: buy milk"
                bob = Browser(front, "bob")
                theirs = await _call(front, provider, "bob", "notes__my_notes", bob)
                assert _text(theirs) == "notes of bob: buy milk"
                again = await _call(
                    front, provider, "alice", "notes__my_notes", Browser(front, "x")
                )
                assert _text(again) == "notes of alice: buy milk"
                assert len(alice.asked) == 1 and len(bob.asked) == 1
                status = front.state.pool.statuses()["notes"]
                assert status.principals == 2
    calls = [c for c in await _control(notes, "calls") if c["tool"] == "my_notes"]
    issued = await _control(notes, "tokens")
    assert [c["subject"] for c in calls][-3:] == ["alice", "bob", "alice"]
    for call in calls[-3:]:
        assert issued[call["token"]] == call["subject"]  # each call with its caller's token
    assert calls[-3]["token"] == calls[-1]["token"] != calls[-2]["token"]


async def test_another_principal_never_gets_a_token_not_after_a_restart_nor_from_a_moved_record(
    notes: Upstream, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    async with running_provider() as provider:
        cfg = _config(provider, notes, cache)
        async with http_front(cfg, _policy(cfg)) as front:
            with anyio.fail_after(LIMIT):
                await _call(front, provider, "alice", "notes__sign_in", Browser(front, "alice"))
        records = sorted((cache / PERSONAL_KIND).glob("*.json"))
        assert len(records) == 2  # the one registered client, and alice's tokens
        assert all(b"access_token" not in r.read_bytes() for r in records)  # sealed
        async with http_front(cfg, _policy(cfg)) as front:  # a restart: alice's tokens stay
            with anyio.fail_after(LIMIT):
                mine = await _call(front, provider, "alice", "notes__my_notes")
                assert _text(mine) == "notes of alice: buy milk"
                # mallory's host shows no URLs: the error names the sign-in link instead
                refused = await _call(front, provider, "mallory", "notes__my_notes")
                assert refused.is_error
                assert "sign in to notes as yourself" in _text(refused)
                assert "alice" not in _text(refused)
        # alice's sealed record copied to mallory's place does not open there
        server = cfg.servers["notes"]
        assert isinstance(server, RemoteServer)

        def place(who: str) -> Path:
            key = personal_files(cache, server, FileRecords(cache), f"{provider.url}\x1f{who}").key
            return FileRecords(cache).path(PERSONAL_KIND, key)

        shutil.copyfile(place("alice"), place("mallory"))
        before = await _control(notes, "calls")
        async with http_front(cfg, _policy(cfg)) as front:
            with anyio.fail_after(LIMIT):
                moved = await _call(front, provider, "mallory", "notes__my_notes")
                assert moved.is_error and "notes of alice" not in _text(moved)
        assert await _control(notes, "calls") == before  # nothing reached the upstream
    assert not any(c["subject"] == "mallory" for c in await _control(notes, "calls"))
