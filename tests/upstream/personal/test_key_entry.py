"""Per-user values entered the way the protocol intends (issue 51): a principal without its
key is asked, by URL-mode elicitation, to open a page of the router's front where it enters
the key; the value goes from that browser to the sealed store, never through the host.

Real processes: the router's HTTP app with identities (`tests/support/identity_provider.py`),
`tests/upstreams/keyed.py` over stdio (the key in its environment) and streamable HTTP (the
key in the call's header), and one `SignInBrowser` per person, each with its own cookie jar.
"""

from __future__ import annotations

import html
import json
import logging
import re
import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest

from router.config import RouterConfig
from router.server.http.auth.security import SecurityPolicy
from tests.conftest import ROOT
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.identity_provider import IdentityProvider, running_provider
from tests.support.postgres import Postgres
from tests.support.replicas import module_postgres  # noqa: F401 (the postgres fixture)
from tests.support.sign_in_browser import PUBLIC, SignInBrowser
from tests.upstream.personal.test_user_keys import (
    AUDIENCE,
    KEYS,
    LIMIT,
    SCRIPT,
    _seen,
    _store,
    _text,
    running_keyed,
)

pytestmark = pytest.mark.processes

FORGED = "ghp_mallory_forged_000000000"


@pytest.fixture(autouse=True)
def secrets_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ROUTER_SECRETS_KEY", "k" * 48)


def _config(
    provider: IdentityProvider, url: str, log: Path, tmp: Path, **more: Any
) -> RouterConfig:
    stdio = {
        "command": SCRIPT[0],
        "args": [*SCRIPT[1:], str(log)],
        "cwd": str(ROOT),
        "env": {"KEYED_TOKEN": "${user:GITHUB_TOKEN}"},
    }
    remote = {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${user:API_KEY}"}}
    return config(
        {"gh": stdio, "api": remote},
        cache_dir=str(tmp / "cache"),
        mode="all",
        audit={"path": str(tmp / "audit.jsonl")},
        http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
        **more,
    )


def _form(page: str) -> dict[str, str]:
    """The key form's hidden fields, and its value fields (empty)."""
    hidden = dict(re.findall(r'name=(flow|csrf) value="([^"]*)"', page))
    names = re.findall(r'name="value:([^"]+)"', page)
    return {k: html.unescape(v) for k, v in hidden.items()} | {f"value:{n}": "" for n in names}


class KeyBrowser(SignInBrowser):
    """A person's browser that enters `key` on the key page it is shown. Before its own post,
    an attacker who learnt the form's fields (not the cookie) posts them from another
    browser: that must store nothing."""

    def __init__(self, front: str, user: str, key: str) -> None:
        super().__init__(front, user)
        self.key = key
        self.forged: list[int] = []

    async def __call__(
        self, context: object, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        assert isinstance(params, types.ElicitRequestURLParams), params
        assert params.url.startswith(f"https://{PUBLIC}/keys/start?ticket="), params.url
        self.asked.append(params.url)
        page = await self.get(params.url)
        assert page.status_code == 200, page.text
        assert f"{self.user} (of " in page.text  # the page names whose key it is
        form = _form(page.text)
        values = [k for k in form if k.startswith("value:")]
        assert len(values) == 1
        attacker = SignInBrowser(self.front, "mallory")
        forged = await attacker.post(f"https://{PUBLIC}/keys/start", {**form, values[0]: FORGED})
        self.forged.append(forged.status_code)
        done = await self.post(f"https://{PUBLIC}/keys/start", {**form, values[0]: self.key})
        assert done.status_code == 200, done.text
        return types.ElicitResult(action="accept")


async def _call(
    front: Front, provider: IdentityProvider, who: str, tool: str, browser: KeyBrowser | None
) -> types.CallToolResult:
    headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
    options = {"elicitation_callback": browser} if browser is not None else {}
    async with streamable_client(front.mcp, headers, **options) as client:
        return await client.call_tool(tool, {})


async def test_each_principal_enters_its_own_key_on_the_front_page(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    log = tmp_path / "calls.jsonl"
    async with running_provider() as provider, running_keyed(log) as url:
        cfg = _config(provider, url, log, tmp_path)
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(LIMIT):
                browsers = {w: KeyBrowser(front.url, w, KEYS[w]) for w in ("alice", "bob")}
                for who, browser in browsers.items():
                    for server in ("gh", "api"):
                        opened = await _call(front, provider, who, f"{server}__sign_in", browser)
                        assert not opened.is_error, _text(opened)
                        called = await _call(front, provider, who, f"{server}__whoami", None)
                        assert _text(called) == "noted", _text(called)
                    assert len(browser.asked) == 2 and browser.forged == [403, 403]
                # a replayed link opens nothing: not in the browser that spent it, nor another
                alice = browsers["alice"]
                for again in (alice, SignInBrowser(front.url, "mallory")):
                    replayed = await again.get(alice.asked[0])
                    assert replayed.status_code == 400 and "already opened" in replayed.text
                # a host that cannot open URLs is told the page (and the operator's command)
                refused = await _call(front, provider, "carol", "gh__sign_in", None)
                assert refused.is_error
                said = _text(refused)
                assert f"https://{PUBLIC}/keys/start?ticket=" in said, said
                assert "mcp-router secrets set gh --principal carol" in said, said
    seen = _seen(log)
    stdio = [c["key"] for c in seen if c["how"] == "env"]
    remote = [c["key"] for c in seen if c["how"] == "header"]
    assert stdio == [KEYS["alice"], KEYS["bob"]] and remote == [KEYS["alice"], KEYS["bob"]]
    trail = (tmp_path / "audit.jsonl").read_text()
    entries = [json.loads(line) for line in trail.splitlines()]
    entered = [
        (r["principal"]["sub"], r["server"], r["outcome"], r["via"])
        for r in entries
        if r.get("kind") == "key-entry"
    ]
    assert entered == [
        ("alice", "gh", "entered", "page"),
        ("alice", "api", "entered", "page"),
        ("bob", "gh", "entered", "page"),
        ("bob", "api", "entered", "page"),
    ]
    # the attacker's grep: no key (nor the forged one) in the log or the trail
    logged = "\n".join(r.getMessage() for r in caplog.records)
    for key in (*KEYS.values(), FORGED):
        assert key not in logged and key not in trail


async def test_a_principal_lists_and_revokes_only_its_own_values(tmp_path: Path) -> None:
    log = tmp_path / "calls.jsonl"
    async with running_provider() as provider, running_keyed(log) as url:
        cfg = _config(provider, url, log, tmp_path)
        _store(cfg, provider, "alice")
        _store(cfg, provider, "bob")
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front, httpx2.AsyncClient(timeout=10) as http:

            async def as_(who: str, method: str, path: str) -> httpx2.Response:
                headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
                return await http.request(method, f"{front.url}{path}", headers=headers)

            with anyio.fail_after(LIMIT):
                mine = await as_("alice", "GET", "/v1/secrets")
                assert mine.status_code == 200, mine.text
                listed = {s["server"]: s for s in mine.json()["servers"]}
                assert mine.json()["principal"] == "alice"
                assert listed["gh"]["names"] == ["GITHUB_TOKEN"] and listed["gh"]["set_at"]
                assert listed["api"]["names"] == ["API_KEY"] and not listed["api"]["missing"]
                assert not any(key in mine.text for key in KEYS.values())
                # bob can neither read nor revoke alice's
                for method, path in (
                    ("GET", "/v1/secrets?principal=alice"),
                    ("DELETE", "/v1/secrets/gh?principal=alice"),
                ):
                    refused = await as_("bob", method, path)
                    assert refused.status_code == 403, refused.text
                nothing = await as_("bob", "DELETE", "/v1/secrets/nowhere")
                assert nothing.status_code == 404
                # alice revokes her own gh key: hers gone, bob's and her api key kept
                revoked = await as_("alice", "DELETE", "/v1/secrets/gh")
                assert revoked.status_code == 200 and revoked.json()["revoked"] is True
                after = {
                    s["server"]: s
                    for s in (await as_("alice", "GET", "/v1/secrets")).json()["servers"]
                }
                assert after["gh"]["names"] == [] and after["gh"]["missing"] == ["GITHUB_TOKEN"]
                assert after["gh"]["set_at"] is None and after["api"]["names"] == ["API_KEY"]
                bobs = {
                    s["server"]: s
                    for s in (await as_("bob", "GET", "/v1/secrets")).json()["servers"]
                }
                assert bobs["gh"]["names"] == ["GITHUB_TOKEN"]
                opened = await _call(front, provider, "bob", "gh__sign_in", None)
                assert not opened.is_error, _text(opened)
                called = await _call(front, provider, "bob", "gh__whoami", None)
                assert _text(called) == "noted", _text(called)
    assert [c["key"] for c in _seen(log)] == [KEYS["bob"]]
    trail = (tmp_path / "audit.jsonl").read_text()
    records = [json.loads(line) for line in trail.splitlines()]
    revocations = [
        (r["principal"]["sub"], r["server"], r["outcome"], r["via"])
        for r in records
        if r.get("kind") == "key-entry"
    ]
    assert revocations == [("alice", "gh", "revoked", "rest")]
    assert not any(key in trail for key in KEYS.values())


async def test_a_key_entered_on_one_replica_is_used_by_another_and_revoked_through_it(
    postgres: Postgres, tmp_path: Path
) -> None:
    """Two fronts on one store (each its own cache folder, upstream processes and trail):
    alice enters her keys on A's page; B uses them without asking her; she revokes them
    through B, and A's open connections refuse her at her next request."""
    log = tmp_path / "calls.jsonl"
    store = {"url": postgres.url, "namespace": uuid.uuid4().hex}
    key = {"env": "MCP_ROUTER_SECRETS_KEY"}
    async with running_provider() as provider, running_keyed(log) as url:
        a_cfg, b_cfg = (
            _config(provider, url, log, tmp_path / n, store=store, secrets_key=key) for n in "ab"
        )
        async with (
            http_front(a_cfg, SecurityPolicy.for_bind(a_cfg.router.http, "127.0.0.1", None)) as a,
            http_front(b_cfg, SecurityPolicy.for_bind(b_cfg.router.http, "127.0.0.1", None)) as b,
            httpx2.AsyncClient(timeout=10) as http,
        ):
            with anyio.fail_after(LIMIT):
                browser = KeyBrowser(a.url, "alice", KEYS["alice"])
                for server in ("gh", "api"):
                    opened = await _call(a, provider, "alice", f"{server}__sign_in", browser)
                    assert not opened.is_error, _text(opened)
                    called = await _call(a, provider, "alice", f"{server}__whoami", None)
                    assert _text(called) == "noted", _text(called)
                assert len(browser.asked) == 2
                # B never asks her: its own connections start with the sealed values
                for server in ("gh", "api"):
                    opened = await _call(b, provider, "alice", f"{server}__sign_in", None)
                    assert not opened.is_error, _text(opened)
                    called = await _call(b, provider, "alice", f"{server}__whoami", None)
                    assert _text(called) == "noted", _text(called)
                headers = {"Authorization": f"Bearer {provider.token('alice', AUDIENCE)}"}
                for server in ("gh", "api"):
                    gone = await http.delete(f"{b.url}/v1/secrets/{server}", headers=headers)
                    assert gone.status_code == 200 and gone.json()["revoked"], gone.text
                before = _seen(log)
                for front in (a, b):
                    for server in ("gh", "api"):
                        refused = await _call(front, provider, "alice", f"{server}__whoami", None)
                        assert refused.is_error, _text(refused)
                        assert "mcp-router secrets set" in _text(refused), _text(refused)
                assert _seen(log) == before  # no call reached the upstream after revoking
    stdio = [(c["key"], c["pid"]) for c in before if c["how"] == "env"]
    remote = [c["key"] for c in before if c["how"] == "header"]
    assert [k for k, _ in stdio] == [KEYS["alice"]] * 2 and remote == [KEYS["alice"]] * 2
    assert stdio[0][1] != stdio[1][1]  # a process on each replica, both with her key
    a_trail, b_trail = ((tmp_path / n / "audit.jsonl").read_text() for n in "ab")
    entries = {
        n: [
            (r["server"], r["outcome"], r["via"])
            for r in map(json.loads, trail.splitlines())
            if r.get("kind") == "key-entry"
        ]
        for n, trail in (("a", a_trail), ("b", b_trail))
    }
    assert entries == {
        "a": [("gh", "entered", "page"), ("api", "entered", "page")],
        "b": [("gh", "revoked", "rest"), ("api", "revoked", "rest")],
    }
    assert KEYS["alice"] not in a_trail + b_trail
