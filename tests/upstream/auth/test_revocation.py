"""Revoking a principal's sign-in revokes its tokens at the authorization server too (RFC 7009,
`router.upstream.auth.revocation`), issue 51.

The upstream is `tests/upstreams/oauth_protected.py --login --revocation`, an SDK-written
server whose authorization server offers the SDK's `/revoke` endpoint in its metadata and
lists what it revoked, and for which authenticated client (`/control/revoked`). The front is
the router's HTTP app with identities from `tests/support/identity_provider.py`; principals
sign in through it as a person would (`tests/support/sign_in_browser.py`). Alice revokes her
own sign-in through `DELETE /v1/auth/notes`, an operator revokes bob's with `mcp-router auth
revoke`: each revocation reaches the server with that principal's own tokens and the
router's client authentication, its outcome is on the audit trail, and the token no longer
opens the upstream.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from router.audit import chain_files, verify
from router.config import RemoteServer
from router.server.http.auth.security import SecurityPolicy
from router.upstream.personal.credentials import personal_files, sealed_records
from tests.conftest import ROOT
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.identity_provider import IdentityProvider, running_provider
from tests.support.sign_in_browser import SignInBrowser
from tests.upstream.auth.test_upstream_auth import Upstream, start_upstream

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
CALLBACK = "https://router.test/oauth/callback"
LIMIT = 60.0


@pytest.fixture(autouse=True)
def secrets_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ROUTER_SECRETS_KEY", "k" * 48)


@pytest.fixture(scope="module")
def revoking(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    yield from start_upstream(tmp_path_factory.mktemp("revoking"), 3600, "--login", "--revocation")


@pytest.fixture(scope="module")
def plain(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    yield from start_upstream(tmp_path_factory.mktemp("plain"), 3600, "--login")


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


async def _confidential_client(upstream: Upstream) -> dict[str, Any]:
    """A client registered ahead, as an operator registers one, with a secret sent by
    HTTP Basic (RFC 6749 2.3.1)."""
    body = {
        "redirect_uris": [CALLBACK],
        "token_endpoint_auth_method": "client_secret_basic",
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "scope": "notes:read",
    }
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.post(f"{upstream.issuer}/register", json=body)
    assert answer.status_code == 201, answer.text
    client: dict[str, Any] = answer.json()
    assert client["client_secret"]
    return client


def _servers(upstream: Upstream, client: dict[str, Any] | None) -> dict[str, Any]:
    oauth: dict[str, Any] = {"perUser": True}
    if client is not None:
        oauth |= {
            "clientId": client["client_id"],
            "clientSecret": client["client_secret"],
            "tokenEndpointAuthMethod": "client_secret_basic",
        }
    return {"notes": {"type": "http", "url": upstream.url, "oauth": oauth}}


async def _control(upstream: Upstream, what: str) -> Any:
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{upstream.issuer}/control/{what}")
        answer.raise_for_status()
        return answer.json()


async def _sign_in(front: Front, provider: IdentityProvider, who: str) -> None:
    headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
    browser = SignInBrowser(front.url, who)
    async with streamable_client(front.mcp, headers, elicitation_callback=browser) as client:
        signed = await client.call_tool("notes__sign_in", {})
        assert not signed.is_error, signed
    async with streamable_client(front.mcp, headers) as client:  # its own listing now
        mine = await client.call_tool("notes__my_notes", {})
        assert not mine.is_error, mine


def _stored(cfg: Any, provider: IdentityProvider, who: str) -> dict[str, Any]:
    server = cfg.servers["notes"]
    assert isinstance(server, RemoteServer)
    files = personal_files(
        cfg.router.cache_dir, server, sealed_records(cfg, None), f"{provider.url}\x1f{who}"
    )
    return files.read()


async def _opens(upstream: Upstream, access_token: str) -> bool:
    """Whether the upstream's MCP endpoint takes `access_token`."""
    headers = {"Authorization": f"Bearer {access_token}", "Accept": "application/json"}
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.post(upstream.url, json=ping, headers=headers)
    return answer.status_code != 401


def _cli(*argv: str) -> str:
    command = [sys.executable, "-m", "router", *argv]
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.mark.parametrize("registered", ["dynamic", "confidential"])
async def test_a_revoked_sign_in_is_revoked_at_the_authorization_server_as_the_router_s_client(
    revoking: Upstream, tmp_path: Path, registered: str
) -> None:
    client = await _confidential_client(revoking) if registered == "confidential" else None
    cache, trail = tmp_path / "cache", tmp_path / "audit.jsonl"
    async with running_provider() as provider:
        router = {
            "cache_dir": str(cache),
            "mode": "all",
            "http": {"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
            "audit": {"path": str(trail)},
        }
        servers = _servers(revoking, client)
        file = tmp_path / "servers.json"
        file.write_text(json.dumps({"mcpServers": servers, "router": router}), encoding="utf-8")
        cfg = config(servers, **router)
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(LIMIT):
                await _sign_in(front, provider, "alice")
                await _sign_in(front, provider, "bob")
                alice, bob = (_stored(cfg, provider, w)["tokens"] for w in ("alice", "bob"))
                before = len(await _control(revoking, "revoked"))
                headers = {"Authorization": f"Bearer {provider.token('alice', AUDIENCE)}"}
                async with httpx2.AsyncClient(base_url=front.url, timeout=30) as http:
                    gone = await http.delete("/v1/auth/notes", headers=headers)
                assert gone.status_code == 200 and gone.json()["revoked"], gone.text
                after_alice = (await _control(revoking, "revoked"))[before:]
                revoke = ("auth", "revoke", "notes", "--config", str(file), "--principal", "bob")
                said = await anyio.to_thread.run_sync(_cli, *revoke)
                assert "notes: bob: revoked" in said and "server: revoked" in said, said
                after_bob = (await _control(revoking, "revoked"))[before + len(after_alice) :]
                assert not await _opens(revoking, alice["access_token"])
                assert not await _opens(revoking, bob["access_token"])
    client_id = client["client_id"] if client is not None else None
    method = "client_secret_basic" if client is not None else "none"
    for tokens, revoked in ((alice, after_alice), (bob, after_bob)):
        # the refresh token first (it ends the grant), then the access token; each by the
        # client it was issued to, authenticated as it registered (the SDK's handler checks)
        assert [(r["kind"], r["token"]) for r in revoked] == [
            ("refresh", _digest(tokens["refresh_token"])),
            ("access", _digest(tokens["access_token"])),
        ]
        assert {r["auth"] for r in revoked} == {method}
        assert len({r["client"] for r in revoked}) == 1
        assert client_id is None or revoked[0]["client"] == client_id
    assert not _stored(cfg, provider, "alice") and not _stored(cfg, provider, "bob")
    lines = [json.loads(line) for line in trail.read_text(encoding="utf-8").splitlines()]
    assert verify(chain_files(trail)) == (len(lines), None)
    revocations = [
        (r["principal"]["sub"], r.get("via"), r.get("upstream_revocation"))
        for r in lines
        if r["kind"] == "sign-in"
    ]
    assert revocations == [("alice", None, "revoked"), ("bob", "cli", "revoked")]
    text = trail.read_text(encoding="utf-8")
    for tokens in (alice, bob):
        assert tokens["access_token"] not in text and tokens["refresh_token"] not in text


async def test_without_a_revocation_endpoint_the_local_copy_goes_and_the_trail_says_so(
    plain: Upstream, tmp_path: Path
) -> None:
    trail = tmp_path / "audit.jsonl"
    async with running_provider() as provider:
        cfg = config(
            _servers(plain, None),
            cache_dir=str(tmp_path / "cache"),
            mode="all",
            http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
            audit={"path": str(trail)},
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(LIMIT):
                await _sign_in(front, provider, "alice")
                headers = {"Authorization": f"Bearer {provider.token('alice', AUDIENCE)}"}
                async with httpx2.AsyncClient(base_url=front.url, timeout=30) as http:
                    gone = await http.delete("/v1/auth/notes", headers=headers)
                assert gone.json()["revoked"], gone.text
    assert not _stored(cfg, provider, "alice")
    assert await _control(plain, "revoked") == []
    lines = [json.loads(line) for line in trail.read_text(encoding="utf-8").splitlines()]
    [revoked] = [r for r in lines if r["kind"] == "sign-in"]
    assert revoked["upstream_revocation"] == "no-endpoint"
