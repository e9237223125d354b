"""Per-user values (issue 51): a server entry's `${user:NAME}` is filled with each
principal's own key, so every principal acts upstream as itself.

The upstream is `tests/upstreams/keyed.py`, an SDK-written server that writes down the key
each call came with: over stdio the `KEYED_TOKEN` it was started with, over streamable HTTP
the `Authorization` header of the call. The front is the router's HTTP app with identities
from `tests/support/identity_provider.py`; the keys are stored as an operator stores them,
in the sealed records (`UserKeys` over `sealed_records`).
"""

from __future__ import annotations

import hashlib
import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from router.config import RouterConfig
from router.server.http.auth.security import SecurityPolicy
from router.upstream.personal.credentials import sealed_records
from router.upstream.personal.keys import KEYS_KIND, UserKeys
from tests.conftest import ROOT
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.identity_provider import IdentityProvider, running_provider

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
LIMIT = 60.0
KEYS = {"alice": "ghp_alice_0123456789abcdef", "bob": "ghp_bob_fedcba9876543210"}
SCRIPT = [sys.executable, "-m", "tests.upstreams.keyed"]


@pytest.fixture(autouse=True)
def secrets_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ROUTER_SECRETS_KEY", "k" * 48)


@asynccontextmanager
async def running_keyed(log: Path) -> AsyncIterator[str]:
    """`keyed.py --http` as a process: its MCP URL."""
    command = [*SCRIPT, str(log), "--http"]
    async with await anyio.open_process(command, cwd=ROOT, stderr=None) as process:
        assert process.stdout is not None
        try:
            with anyio.fail_after(20):
                line = await BufferedByteReceiveStream(process.stdout).receive_until(b"\n", 4096)
            yield line.decode().strip()
        finally:
            process.terminate()
            with anyio.move_on_after(10):
                await process.wait()


def _config(
    provider: IdentityProvider,
    url: str,
    log: Path,
    cache: Path,
    file: Path | None = None,
    **more: Any,
) -> RouterConfig:
    """The config (written to `file` too, for the CLI, when given), `more` in its router."""
    stdio = {
        "command": SCRIPT[0],
        "args": [*SCRIPT[1:], str(log)],
        "cwd": str(ROOT),
        "env": {"KEYED_TOKEN": "${user:GITHUB_TOKEN}"},
    }
    remote = {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${user:API_KEY}"}}
    router = {
        "cache_dir": str(cache),
        "mode": "all",
        "http": {"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
        **more,
    }
    if file is not None:
        file.write_text(json.dumps({"mcpServers": {"gh": stdio, "api": remote}, "router": router}))
    return config({"gh": stdio, "api": remote}, **router)


async def _secrets(file: Path, *args: str, value: str | None = None) -> str:
    """`mcp-router secrets ...` as an operator runs it (a value on stdin, never argv)."""
    command = [sys.executable, "-m", "router", "secrets", *args, "--config", str(file)]
    stdin = value.encode() if value else None
    done = await anyio.run_process(command, input=stdin, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr.decode()
    return done.stdout.decode()


def _store(cfg: RouterConfig, provider: IdentityProvider, who: str) -> None:
    keys = UserKeys(sealed_records(cfg, None))
    owner = f"{provider.url}\x1f{who}"
    keys.set("gh", cfg.servers["gh"], owner, {"GITHUB_TOKEN": KEYS[who]})
    keys.set("api", cfg.servers["api"], owner, {"API_KEY": KEYS[who]})


def _own(key: str) -> str:
    return "own_" + hashlib.sha256(key.encode()).hexdigest()[:8]


async def _as(
    front: Front, provider: IdentityProvider, who: str, tool: str
) -> tuple[types.CallToolResult, set[str]]:
    headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
    async with streamable_client(front.mcp, headers) as client:
        result = await client.call_tool(tool, {})
        listed = {t.name for t in (await client.list_tools()).tools}
        return result, listed


def _text(result: types.CallToolResult) -> str:
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


def _seen(log: Path) -> list[dict[str, Any]]:
    if not log.exists():
        return []
    return [json.loads(line) for line in log.read_text().splitlines()]


async def test_each_principal_reaches_stdio_and_remote_upstreams_with_its_own_key(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    log, cache = tmp_path / "calls.jsonl", tmp_path / "cache"
    async with running_provider() as provider, running_keyed(log) as url:
        file = tmp_path / "team.json"
        cfg = _config(provider, url, log, cache, file)
        _store(cfg, provider, "bob")
        for server, name in (("gh", "GITHUB_TOKEN"), ("api", "API_KEY")):
            said = await _secrets(file, "set", server, "--principal", "alice", value=KEYS["alice"])
            assert said == f"{server}: {name} stored for alice\n"
        status = await _secrets(file, "status", "--principal", "alice")
        assert "gh: alice: stored (set " in status and KEYS["alice"] not in status
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(LIMIT):
                for who in ("alice", "bob", "alice"):
                    for server in ("gh", "api"):
                        # the principal's own connection lists its tools (sign_in opens it)
                        opened, _ = await _as(front, provider, who, f"{server}__sign_in")
                        assert not opened.is_error, _text(opened)
                        result, listed = await _as(front, provider, who, f"{server}__whoami")
                        assert _text(result) == "noted", _text(result)
                        mine = {f"{server}__{_own(KEYS[who])}"}
                        theirs = {f"{server}__{_own(k)}" for w, k in KEYS.items() if w != who}
                        assert mine <= listed and not theirs & listed  # its own listing
                # mallory entered no key: refused, never served with another's
                before = _seen(log)
                for server in ("gh", "api"):
                    refused, listed = await _as(front, provider, "mallory", f"{server}__sign_in")
                    assert refused.is_error
                    assert "mcp-router secrets set" in _text(refused), _text(refused)
                    assert not any(key in _text(refused) for key in KEYS.values())
                    assert not {f"{server}__{_own(k)}" for k in KEYS.values()} & listed
                assert _seen(log) == before
                statuses = front.state.pool.statuses()
                # mallory's connection waits for her key (the page the error names)
                assert statuses["gh"].principals == 3 and statuses["api"].principals == 3
                healthz = json.dumps([repr(s) for s in statuses.values()])
                # revoked by an operator: her open connection closes at her next request
                said = await _secrets(file, "revoke", "api", "--principal", "alice")
                assert said.startswith("api: alice: revoked")
                revoked, listed = await _as(front, provider, "alice", "api__whoami")
                assert revoked.is_error and "mcp-router secrets set" in _text(revoked)
                assert f"api__{_own(KEYS['alice'])}" not in listed
                still, _ = await _as(front, provider, "alice", "gh__whoami")
                assert _text(still) == "noted"
    seen = _seen(log)
    stdio = [(c["key"], c["pid"]) for c in seen if c["how"] == "env"]
    remote = [c["key"] for c in seen if c["how"] == "header"]
    alice, bob = KEYS["alice"], KEYS["bob"]
    assert [k for k, _ in stdio] == [alice, bob, alice, alice] and remote == [alice, bob, alice]
    assert stdio[0][1] == stdio[2][1] == stdio[3][1] != stdio[1][1]  # a process of each's own
    # the attacker's grep: no key in the log, /healthz's statuses, or anything on disk
    logged = "\n".join(r.getMessage() for r in caplog.records) + healthz
    for key in KEYS.values():
        assert key not in logged
        for path in cache.rglob("*"):
            if path.is_file():
                assert key.encode() not in path.read_bytes(), path
    sealed = [p for p in (cache / KEYS_KIND).iterdir() if not p.name.startswith(".")]
    assert (
        len(sealed) == 3
    )  # alice's api values revoked; one per (server, principal), none holding a key in clear


async def test_a_key_entered_for_one_program_never_goes_to_another_of_that_name(
    tmp_path: Path,
) -> None:
    log, cache = tmp_path / "calls.jsonl", tmp_path / "cache"
    async with running_provider() as provider, running_keyed(log) as url:
        cfg = _config(provider, url, log, cache)
        _store(cfg, provider, "alice")
        moved = _config(provider, url.replace("/mcp", "/other/mcp"), log, cache)
        policy = SecurityPolicy.for_bind(moved.router.http, "127.0.0.1", None)
        async with http_front(moved, policy) as front:
            with anyio.fail_after(LIMIT):
                refused, _ = await _as(front, provider, "alice", "api__sign_in")
                assert refused.is_error and "mcp-router secrets set" in _text(refused)
    assert _seen(log) == []


async def test_an_operator_s_secrets_set_and_revoke_are_on_the_trail_beside_a_serving_router(
    tmp_path: Path,
) -> None:
    """`mcp-router secrets set|revoke` write their own lines into the trail a serving router
    writes too (a process of each), and with none serving: one unbroken chain, no key."""
    from router.audit import chain_files, verify

    log, cache, trail = tmp_path / "calls.jsonl", tmp_path / "cache", tmp_path / "audit.jsonl"
    async with running_provider() as provider, running_keyed(log) as url:
        file = tmp_path / "team.json"
        cfg = _config(provider, url, log, cache, file, audit={"path": str(trail)})
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(LIMIT):
                asked, _ = await _as(front, provider, "alice", "gh__sign_in")  # a router line
                assert asked.is_error
                await _secrets(file, "set", "gh", "--principal", "alice", value=KEYS["alice"])
                # the waiting connection looks for a stored key every key_entry.POLL (1 s):
                # calling again, as the error says, reaches the upstream once it has looked
                opened, _ = await _as(front, provider, "alice", "gh__sign_in")
                while opened.is_error and "sign-in needed" in _text(opened):
                    opened, _ = await _as(front, provider, "alice", "gh__sign_in")
                assert not opened.is_error, _text(opened)
                ran, _ = await _as(front, provider, "alice", "gh__whoami")  # after the CLI's
                assert _text(ran) == "noted", _text(ran)
                said = await _secrets(file, "revoke", "gh", "--principal", "alice")
                assert said.startswith("gh: alice: revoked")
                refused, _ = await _as(front, provider, "alice", "gh__whoami")
                assert refused.is_error
        # no router serving now: the command still writes the next line of the chain
        await _secrets(file, "set", "gh", "--principal", "bob", value=KEYS["bob"])
    lines = [json.loads(line) for line in trail.read_text().splitlines()]
    assert verify(chain_files(trail)) == (len(lines), None)
    ours = [(r["kind"], r.get("outcome"), r.get("via"), r["principal"]["sub"]) for r in lines]
    cli = [entry for entry in ours if entry[2] == "cli"]
    assert cli == [
        ("key-entry", "entered", "cli", "alice"),
        ("key-entry", "revoked", "cli", "alice"),
        ("key-entry", "entered", "cli", "bob"),
    ]
    assert ours.index(cli[0]) < ours.index(("tool-call", "ran", None, "alice"))  # interleaved
    assert {r["replica"] for r in lines if r.get("via") == "cli"}.isdisjoint(
        {r["replica"] for r in lines if r.get("via") != "cli"}
    )
    assert all(r["principal"]["iss"] == provider.url and "by" in r for r in lines if r.get("via"))
    for key in KEYS.values():
        assert key not in trail.read_text()
