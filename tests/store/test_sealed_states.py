"""One sealed-state primitive (`router.approvals.sealing`), its nonce ledgers, and the held calls
and
paused code runs it binds, tried as an attacker would.

In process: every field of a binding is checked; the cache folder's ledger spends a nonce
once for every router sharing it (0600), prunes what expired, and a ledger that fails
refuses the state; the memory ledger holds a share for each principal, so one that spends
states fast is refused alone.
Through a real front over real HTTP, with identities from a real identity
provider on loopback (tests/support/identity_provider.py) and real upstreams over stdio
(tests/upstreams/session_asking.py asks mid-call over the handshake, so a 2026-07-28 call to
it is held; tests/upstreams/guarded.py's `delete_note` is confirmed, so a program calling it
pauses): a held call's state resumes nothing as another principal, on another tool or with
other arguments; a principal at its share of held calls, or of the sandbox's workers, is
refused while another principal is served.
"""

from __future__ import annotations

import itertools
import json
import os
import sqlite3
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest

from router.approvals.sealing import Binding, LedgerFull, MemoryNonces, Opened, Refused, Sealer
from router.embedding.cache import EmbeddingCache
from router.server.calls import held_calls
from router.server.http.auth.security import SecurityPolicy
from router.store import nonces
from router.store.local import LocalStore
from router.store.nonces import NONCES_FILE, SqliteNonces
from router.store.opening import open_store
from tests.support.http_serving import MCP_ACCEPT, Front, config, http_front, until_indexed
from tests.support.identity_provider import (
    IdentityProvider,
    module_provider,  # noqa: F401 (the provider fixture)
)
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "attacker", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {"sampling": {}, "elicitation": {"form": {}}},
}
SAMPLED = {
    "input": {"role": "assistant", "content": {"type": "text", "text": "short"}, "model": "raw"}
}
ACCEPT = {"mcp-router/confirm": {"action": "accept", "content": {}}}
_ids = itertools.count(1)


async def modern_call(
    http: httpx2.AsyncClient,
    url: str,
    name: str,
    arguments: dict[str, Any],
    headers: dict[str, str] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """One raw 2026-07-28 `tools/call` (no session), its whole JSON-RPC response."""
    body = {
        "jsonrpc": "2.0",
        "id": next(_ids),
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments, "_meta": ENVELOPE, **extra},
    }
    wire = {
        **MCP_ACCEPT,
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tools/call",
        "mcp-name": name,
        **(headers or {}),
    }
    answer = await http.post(url, json=body, headers=wire)
    assert answer.status_code in (200, 400), answer.text  # 400: a JSON-RPC error's
    if answer.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:] for line in answer.text.splitlines() if line.startswith("data:")]
        response: dict[str, Any] = json.loads(data[-1])
    else:
        response = answer.json()
    return response


def asked(response: dict[str, Any]) -> str:
    """The `requestState` of an `InputRequiredResult` response."""
    result = response.get("result", {})
    assert result.get("resultType") == "input_required", response
    state: str = result["requestState"]
    return state


def refusal(response: dict[str, Any]) -> str:
    """The message of an `InvalidParams` error response."""
    assert response.get("error", {}).get("code") == -32602, response
    message: str = response["error"]["message"]
    return message


# -- the primitive and its ledgers, in process -------------------------------------------------


async def test_every_field_of_a_binding_is_checked_and_named() -> None:
    now = [1_000.0]
    sealer = Sealer(b"k" * 32, MemoryNonces(clock=lambda: now[0]), clock=lambda: now[0])
    bound = Binding("held", "alice", None, "d1")
    state = sealer.seal(bound, 60, {"id": "x"})
    others = {
        "purpose": Binding("code", "alice", None, "d1"),
        "principal": Binding("held", "bob", None, "d1"),
        "session": Binding("held", "alice", "s1", "d1"),
        "digest": Binding("held", "alice", None, "d2"),
    }
    for why, binding in others.items():
        refused = await sealer.open_once(state, binding)
        assert isinstance(refused, Refused) and refused.why == why, (why, refused)
    body, _, mac = state.rpartition(".")
    changed = mac[:-2] + ("AA" if mac[-2:] != "AA" else "BB")  # never the real MAC
    assert (await sealer.open_once(f"{body}.{changed}", bound)) == Refused("forged")
    assert (await sealer.open_once(Sealer(b"j" * 32).seal(bound, 60), bound)) == Refused("forged")
    opened = await sealer.open_once(state, bound)
    assert isinstance(opened, Opened) and opened.data == {"id": "x"}
    assert (await sealer.open_once(state, bound)) == Refused("used")
    late = sealer.seal(bound, 60)
    now[0] += 61
    assert (await sealer.open_once(late, bound)) == Refused("expired")
    assert "another principal" in Refused("principal").describe()


async def test_routers_sharing_a_cache_folder_spend_a_nonce_once(tmp_path: Path) -> None:
    """Two routers on one machine (each its own store and ledger on the folder): a state
    sealed by one and used there is used for the other too."""
    first = LocalStore(EmbeddingCache(tmp_path)).nonce_ledger()
    second = LocalStore(EmbeddingCache(tmp_path)).nonce_ledger()
    assert isinstance(first, SqliteNonces) and first is not second
    key = b"k" * 32
    state = Sealer(key, first).seal(Binding("confirm", digest="d"), 60)
    on_first = await Sealer(key, first).open_once(state, Binding("confirm", digest="d"))
    on_second = await Sealer(key, second).open_once(state, Binding("confirm", digest="d"))
    assert isinstance(on_first, Opened)
    assert on_second == Refused("used")
    assert os.stat(tmp_path / NONCES_FILE).st_mode & 0o777 == 0o600
    assert isinstance(LocalStore(None).nonce_ledger(), MemoryNonces)  # no folder: memory


def test_expired_nonces_are_pruned(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(nonces, "PRUNE_EVERY", 2)
    ledger = SqliteNonces(tmp_path)
    assert ledger.claim("old", 1.0)  # expired long ago
    assert ledger.claim("new", 4_000_000_000.0)  # the second claim prunes
    with sqlite3.connect(tmp_path / NONCES_FILE) as connection:
        rows = [row[0] for row in connection.execute("SELECT nonce FROM nonces")]
    assert rows == ["new"]


async def test_a_ledger_that_cannot_be_written_refuses_the_state(tmp_path: Path) -> None:
    """Fail closed: a state whose nonce cannot be recorded authorizes nothing."""
    (tmp_path / "not-a-folder").write_text("x")
    sealer = Sealer(b"k" * 32, SqliteNonces(tmp_path / "not-a-folder"))
    binding = Binding("confirm", digest="d")
    refused = await sealer.open_once(sealer.seal(binding, 60), binding)
    assert refused == Refused("unavailable")
    assert "unreachable" in refused.describe()


def test_the_memory_ledger_keeps_each_principals_share_and_forgets_nothing_unexpired() -> None:
    now = [1_000.0]
    ledger = MemoryNonces(limit=8, clock=lambda: now[0])  # a share is 2
    assert ledger.claim("m1", 1_010.0, "mallory") and ledger.claim("m2", 1_100.0, "mallory")
    with pytest.raises(LedgerFull) as share:
        ledger.claim("m3", 1_100.0, "mallory")
    assert not ledger.claim("m1", 1_010.0, "mallory")  # still spent: never forgotten early
    assert ledger.claim("c1", 1_100.0, "carol")  # the others are served
    now[0] = 1_050.0  # m1 expired: room for one more of mallory's
    assert ledger.claim("m3", 1_100.0, "mallory")
    for n in range(5):  # without identities every caller is "": the whole ledger applies
        assert ledger.claim(f"x{n}", 1_100.0)
    with pytest.raises(LedgerFull) as full:
        ledger.claim("y", 1_100.0, "dave")
    assert share.value.share and not full.value.share


def test_a_served_router_spends_nonces_in_its_cache_folder_even_unconfigured(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store a router serves with (`open_store`) always has a cache folder, the default
    one when `cache_dir` is unset: its ledger is the folder's file, which no bound fills;
    the memory ledger above serves a router state built in process without a store."""
    monkeypatch.setenv("MCP_ROUTER_CACHE_DIR", str(tmp_path))
    store = open_store(config({}))
    try:
        assert isinstance(store.nonce_ledger(), SqliteNonces)
    finally:
        store.close()


# -- held calls and paused runs, over HTTP with identities ------------------------------------


def _front_config(provider: IdentityProvider, **router: Any) -> Any:
    oauth = {"issuer": provider.url, "audience": AUDIENCE, "scopes": ["mcp"]}
    asking = {**script("session_asking"), "protocol": "legacy"}
    # One call at a time can wait on each: the relay cannot tell whose question an upstream
    # asks out of band while calls of several clients are in flight to it.
    servers = {"asking": asking, **{f"held{n}": asking for n in range(4)}}
    return config({**servers, "guarded": script("guarded")}, http={"oauth": oauth}, **router)


@pytest.fixture(scope="module")
async def front(provider: IdentityProvider) -> AsyncIterator[Front]:
    cfg = _front_config(provider, mode="all")
    async with http_front(cfg, SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)) as f:
        with anyio.fail_after(30):
            await until_indexed(f.state)
        yield f


def bearer(provider: IdentityProvider, subject: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {provider.token(subject, AUDIENCE)}"}


async def test_a_held_call_resumes_only_for_its_principal_its_tool_and_its_arguments(
    front: Front, provider: IdentityProvider
) -> None:
    alice, bob = bearer(provider, "alice"), bearer(provider, "bob")
    numbers, minutes = {"text": "the quarterly numbers"}, {"text": "the board's minutes"}
    async with httpx2.AsyncClient(timeout=30) as http:

        async def call(name: str, arguments: Any, who: Any, **extra: Any) -> dict[str, Any]:
            return await modern_call(http, front.mcp, f"asking__{name}", arguments, who, **extra)

        with anyio.fail_after(60):
            state = asked(await call("summarize", numbers, alice))
            retry = {"inputResponses": SAMPLED, "requestState": state}
            as_bob = await call("summarize", numbers, bob, **retry)
            moved = await call("pick_colour", {}, alice, **retry)
            changed = await call("summarize", minutes, alice, **retry)
            done = await call("summarize", numbers, alice, **retry)
            again = await call("summarize", numbers, alice, **retry)
    assert "issued to another principal" in refusal(as_bob)
    assert "issued for another call" in refusal(moved)
    assert "issued for another call" in refusal(changed)
    assert done["result"]["content"][0]["text"] == "model said: short"  # the owner's, once
    assert "no longer held here" in refusal(again)


async def test_a_principal_at_its_share_of_held_calls_is_refused_and_another_is_served(
    front: Front, provider: IdentityProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(held_calls, "PRINCIPAL_SHARE", 3)  # the front runs in this process
    mallory, carol = bearer(provider, "mallory"), bearer(provider, "carol")
    async with httpx2.AsyncClient(timeout=30) as http:

        async def summarize(server: int, who: Any, **extra: Any) -> dict[str, Any]:
            name, arguments = f"held{server}__summarize", {"text": "the news"}
            return await modern_call(http, front.mcp, name, arguments, who, **extra)

        with anyio.fail_after(60):
            holding = [asked(await summarize(n, mallory)) for n in range(3)]
            over = await summarize(3, mallory)
            served = asked(await summarize(3, carol))
            retry = {"inputResponses": SAMPLED, "requestState": holding[0]}
            freed = await summarize(0, mallory, **retry)
            after = await summarize(0, mallory)
    assert "your share of this router's held calls" in refusal(over)
    assert served  # carol got her question while mallory was at her share
    assert freed["result"]["content"][0]["text"] == "model said: short"
    asked(after)  # one answered: mallory may hold another


async def test_a_principal_at_its_share_of_sandbox_workers_is_refused_and_another_is_served(
    provider: IdentityProvider,
) -> None:
    """Code mode, 2 workers: a paused program holds its worker, and one principal may hold
    one (half). Mallory's second paused program is refused; Carol's program runs; Carol
    cannot resume Mallory's program with its state."""
    cfg = _front_config(
        provider,
        mode="code",
        policy={"confirm": ["guarded/delete_note"]},
        code={"workers": 1, "max_workers": 2},
    )
    mallory, carol = bearer(provider, "mallory"), bearer(provider, "carol")
    program = "await call_tool('guarded__delete_note', {'name': 'x'})"
    policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
    async with http_front(cfg, policy) as running, httpx2.AsyncClient(timeout=60) as http:

        async def execute(code: str, who: Any, **extra: Any) -> dict[str, Any]:
            return await modern_call(http, running.mcp, "execute", {"code": code}, who, **extra)

        with anyio.fail_after(120):
            await until_indexed(running.state)
            paused = asked(await execute(program, mallory))
            second = await execute("1 + 1", mallory)
            served = await execute("1 + 1", carol)
            retry = {"inputResponses": ACCEPT, "requestState": paused}
            stolen = await execute(program, carol, **retry)
            own = await execute(program, mallory, **retry)
    second_text = second["result"]["content"][0]["text"]
    assert "your share" in second_text and "router.code.max_workers" in second_text, second
    assert served["result"]["content"][0]["text"] == "2"
    assert "issued to another principal" in refusal(stolen)
    assert json.loads(own["result"]["content"][0]["text"]) == {"result": "deleted x"}
