"""Per-user upstream credentials (issue 36): each principal at the front signs in to an
OAuth-protected upstream itself, and its calls carry its own token, never another's.

The upstream is `tests/upstreams/oauth_protected.py --login`, an SDK-written server whose
authorization server asks who signs in, and records which subject and token each call came
with (`/control/calls`, `/control/tokens`). The front is the router's HTTP app on loopback
with identities from `tests/support/identity_provider.py`; its audience names `router.test`, a
name the test's browser resolves to the front, as a DNS name would. Hosts are the SDK's
client; the one that can show URLs answers URL elicitation by following the link as a
person signing in would (`tests/support/sign_in_browser.py`).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest

from router.config import RemoteServer, RouterConfig, parse_config
from router.core.errors import ConfigError
from router.server.http.auth.security import SecurityPolicy
from router.store.postgres.store import PostgresStore
from router.store.records import FileRecords
from router.store.sealed_records import SealedRecords, Sealer
from router.store.shared_records import record_lock
from router.upstream.personal.credentials import PERSONAL_KIND, personal_files
from tests.conftest import ROOT
from tests.store.test_shared_state import LockHolder, token_expired, until_true
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.identity_provider import EXCHANGE_CLIENT, IdentityProvider, running_provider
from tests.support.postgres import Postgres
from tests.support.replicas import module_postgres  # noqa: F401 (the postgres fixture)
from tests.support.sign_in_browser import SignInBrowser
from tests.support.team_api import running_team_api
from tests.upstream.auth.test_upstream_auth import SHORT_LIFETIME, Upstream, start_upstream

pytestmark = pytest.mark.processes

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
    browser: SignInBrowser | None = None,
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
                alice = SignInBrowser(front.url, "alice")
                first = await _call(front, provider, "alice", "notes__sign_in", alice)
                assert "Signed in to notes" in _text(first), _text(first)
                mine = await _call(front, provider, "alice", "notes__my_notes")
                assert _text(mine) == "notes of alice: buy milk"
                bob = SignInBrowser(front.url, "bob")
                theirs = await _call(front, provider, "bob", "notes__my_notes", bob)
                assert _text(theirs) == "notes of bob: buy milk"
                again = await _call(
                    front, provider, "alice", "notes__my_notes", SignInBrowser(front.url, "x")
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
                await _call(
                    front, provider, "alice", "notes__sign_in", SignInBrowser(front.url, "alice")
                )
        records = sorted((cache / PERSONAL_KIND).glob("*.json"))
        assert len(records) == 2  # the one registered client, and alice's tokens
        assert all(b"access_token" not in r.read_bytes() for r in records)  # sealed
        async with http_front(cfg, _policy(cfg)) as front:  # a restart: alice's tokens stay
            with anyio.fail_after(LIMIT):
                # no listing is shared: sign_in opens her connection with her stored tokens
                back = await _call(front, provider, "alice", "notes__sign_in")
                assert "Signed in to notes" in _text(back), _text(back)
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
                moved = await _call(front, provider, "mallory", "notes__sign_in")
                assert moved.is_error and "notes of alice" not in _text(moved)
        assert await _control(notes, "calls") == before  # nothing reached the upstream
    assert not any(c["subject"] == "mallory" for c in await _control(notes, "calls"))


async def test_token_exchange_trades_each_callers_own_token_for_one_the_upstream_takes(
    tmp_path: Path,
) -> None:
    async with running_provider() as provider, running_team_api(provider.url) as team:
        client_id, secret = EXCHANGE_CLIENT
        oauth = {"grant": "token-exchange", "clientId": client_id, "clientSecret": secret}
        cfg = config(
            {"team": {"type": "http", "url": team, "oauth": oauth}},
            cache_dir=str(tmp_path / "cache"),
            mode="all",
            http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
        )
        async with http_front(cfg, _policy(cfg)) as front:
            with anyio.fail_after(LIMIT):
                first = await _call(front, provider, "alice", "team__sign_in")
                assert "Signed in to team" in _text(first), _text(first)
                texts = [
                    _text(await _call(front, provider, who, "team__whoami"))
                    for who in ("alice", "bob", "alice")
                ]
    through = f"for {team} through {client_id}"
    assert texts == [f"alice {through}", f"bob {through}", f"alice {through}"]
    # one exchange per principal (the second call of alice's reuses hers), each from a token
    # for the router to one for the upstream; no browser, no sign-in page
    assert [(e["sub"], e["from"], e["audience"]) for e in provider.exchanges] == [
        ("alice", AUDIENCE, team),
        ("bob", AUDIENCE, team),
    ]


@pytest.fixture(scope="module")
def rotating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """Per-user sign-ins whose access tokens live `SHORT_LIFETIME` seconds, each refresh
    token taken once."""
    yield from start_upstream(tmp_path_factory.mktemp("rotating"), SHORT_LIFETIME, "--login")


async def test_two_replicas_share_a_principals_tokens_and_spend_its_rotating_refresh_once(
    rotating: Upstream, postgres: Postgres, tmp_path: Path
) -> None:
    """Two fronts on one store: alice signs in on A and calls on B without a browser; bob
    on B gets none of hers; once her token has expired, both replicas call for her at the
    same moment (lined up on her record's lock, which the test holds until both wait for
    it): one refresh grant, none refused."""
    namespace = uuid.uuid4().hex
    store = {"url": postgres.url, "namespace": namespace}
    key = {"env": "MCP_ROUTER_SECRETS_KEY"}
    async with running_provider() as provider:
        a_cfg = _config(provider, rotating, tmp_path / "a", store=store, secrets_key=key)
        b_cfg = _config(provider, rotating, tmp_path / "b", store=store, secrets_key=key)
        async with http_front(a_cfg, _policy(a_cfg)) as a, http_front(b_cfg, _policy(b_cfg)) as b:
            with anyio.fail_after(LIMIT):
                signed = await _call(
                    a, provider, "alice", "notes__sign_in", SignInBrowser(a.url, "alice")
                )
                assert "Signed in to notes" in _text(signed), _text(signed)
                # B has not listed notes yet: its stand-in connects with her stored tokens
                there = await _call(b, provider, "alice", "notes__sign_in")
                assert "Signed in to notes" in _text(there), _text(there)
                mine = await _call(b, provider, "alice", "notes__my_notes")
                assert _text(mine) == "notes of alice: buy milk"
                refused = await _call(b, provider, "bob", "notes__my_notes")
                assert refused.is_error and "notes of alice" not in _text(refused)

                server = a_cfg.servers["notes"]
                assert isinstance(server, RemoteServer)
                opened = PostgresStore(postgres.url, namespace=namespace)
                opened.open()
                try:
                    sealed = SealedRecords(opened.records(), Sealer(KEY.encode()))
                    alice = f"{provider.url}\x1falice"
                    files = personal_files(tmp_path / "a", server, sealed, alice)
                    lock = record_lock(namespace, PERSONAL_KIND, files.key)
                    await until_true(token_expired, files)
                    before = await rotating.stats()
                    holder = LockHolder(postgres.url, lock)
                    answers: list[str] = []
                    try:

                        async def call(front: Front) -> None:
                            result = await _call(front, provider, "alice", "notes__my_notes")
                            answers.append(_text(result))

                        async with anyio.create_task_group() as calls:
                            calls.start_soon(call, a)
                            calls.start_soon(call, b)
                            await until_true(lambda: holder.waiting() >= 2)
                            holder.release()
                    except BaseException:
                        holder.release()
                        raise
                finally:
                    opened.close()
    after = await rotating.stats()
    assert answers == ["notes of alice: buy milk"] * 2, answers
    assert after.get("refresh_grants", 0) == before.get("refresh_grants", 0) + 1
    assert after.get("refused_refreshes", 0) == before.get("refused_refreshes", 0)
    assert after.get("authorizations", 0) == before.get("authorizations", 0)
    calls = await _control(rotating, "calls")
    assert not any(c["subject"] == "bob" for c in calls)


async def test_each_principal_sees_its_own_sign_in_and_a_revoked_one_is_asked_again(
    notes: Upstream, tmp_path: Path
) -> None:
    """`/v1/auth` shows the caller's own standing; another's needs an operator. `auth
    revoke` (another process) makes the serving router drop alice's connection at her next
    call; an operator's `DELETE /v1/auth/notes?principal=alice` closes it at once. Both the
    refusal and the revocation are on the audit trail, with no token in it."""
    cache, trail = tmp_path / "cache", tmp_path / "audit.jsonl"
    async with running_provider() as provider:
        router = {
            "cache_dir": str(cache),
            "mode": "all",
            "http": {"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
            "operators": {"subjects": ["ops"]},
            "audit": {"path": str(trail)},
        }
        servers = {"notes": {"type": "http", "url": notes.url, "oauth": {"perUser": True}}}
        file = tmp_path / "servers.json"
        file.write_text(json.dumps({"mcpServers": servers, "router": router}), encoding="utf-8")
        cfg = config(servers, **router)

        async def rest(method: str, path: str, who: str) -> httpx2.Response:
            headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
            async with httpx2.AsyncClient(base_url=front.url, timeout=10) as http:
                return await http.request(method, path, headers=headers)

        async with http_front(cfg, _policy(cfg)) as front:
            with anyio.fail_after(LIMIT):
                await _call(
                    front, provider, "alice", "notes__sign_in", SignInBrowser(front.url, "alice")
                )
                mine = (await rest("GET", "/v1/auth", "alice")).json()
                assert mine["principal"] == "alice"
                [standing] = mine["upstreams"]
                assert standing["server"] == "notes" and standing["signed_in"], standing
                assert standing["how"] == "per-user sign-in" and standing["refreshable"]
                theirs = (await rest("GET", "/v1/auth", "bob")).json()
                assert [u["signed_in"] for u in theirs["upstreams"]] == [False]
                assert (await rest("GET", "/v1/auth?principal=alice", "bob")).status_code == 403
                health = (await rest("GET", "/healthz", "ops")).json()
                assert health["personal_connections"] == {"notes": 1}

                status = await anyio.to_thread.run_sync(
                    _cli, "auth", "status", "--config", str(file), "--principal", "alice"
                )
                assert "notes: alice: signed in (issuer" in status, status
                revoked = await anyio.to_thread.run_sync(
                    _cli, "auth", "revoke", "notes", "--config", str(file), "--principal", "alice"
                )
                assert "notes: alice: revoked" in revoked, revoked
                asked = await _call(front, provider, "alice", "notes__my_notes")
                assert asked.is_error and "sign in to notes as yourself" in _text(asked)

                link = _text(asked).split("open ", 1)[1].split(" in a browser", 1)[0]
                await SignInBrowser(front.url, "alice").open(link)  # she follows the link it names
                again = await _call(front, provider, "alice", "notes__my_notes")
                assert _text(again) == "notes of alice: buy milk"
                gone = await rest("DELETE", "/v1/auth/notes?principal=alice", "ops")
                assert gone.json() == {
                    "server": "notes",
                    "principal": "alice",
                    "revoked": True,
                    "closed": True,
                }
                assert (
                    await rest("DELETE", "/v1/auth/notes?principal=alice", "bob")
                ).status_code == 403
                after = (await rest("GET", "/v1/auth", "alice")).json()
                assert [u["signed_in"] for u in after["upstreams"]] == [False]
    records = [json.loads(line) for line in trail.read_text(encoding="utf-8").splitlines()]
    outcomes = [(r.get("kind"), r.get("outcome")) for r in records]
    assert ("tool-call", "sign-in-needed") in outcomes
    assert ("sign-in", "revoked") in outcomes
    text = trail.read_text(encoding="utf-8")
    assert "eyJ" not in text and "token" not in text.lower()  # no JWT, no token field


def _cli(*argv: str) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "router", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_documented_per_user_example_is_a_valid_config(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    text = (ROOT / "docs" / "identities.md").read_text("utf-8")
    section = text[text.index("## Per-user upstreams") :]
    example = section[section.index("```json") + len("```json") : section.index("```\n\n")]
    monkeypatch.setenv("TEAM_API_SECRET", "s3cret")
    monkeypatch.setenv("MCP_ROUTER_STORE_URL", "postgresql://router@db.example.com/router")
    cfg = parse_config(json.loads(example))
    tracker, team = cfg.servers["tracker"], cfg.servers["team-api"]
    assert isinstance(tracker, RemoteServer) and isinstance(team, RemoteServer)
    assert tracker.oauth is not None and tracker.oauth.per_user
    assert team.oauth is not None and team.oauth.grant == "token-exchange"
    assert cfg.router.secrets_key is not None and cfg.router.personal.max_connections == 256
    without = json.loads(example)
    del without["router"]["http"]
    with pytest.raises(ConfigError, match=r"mcpServers\.team-api\.oauth\.grant|tracker"):
        parse_config(without)
