"""A per-user upstream's listing is its principal's alone (issue 48): kept sealed under that
principal's key, never the shared listing, not after a restart nor on another replica.

The upstream is `tests/upstreams/team_api.py` (token exchange, no browser): each caller lists
its own tool `payslip_<subject>`, resource `hr://<subject>/performance-review-2026` and
prompt `<subject>-private-feedback`. The attacker is bob, who has no connection of his own to
it, on a router that served alice before (a restart on the same cache folder, or a second
replica on the same store).
"""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import MCPError
from psycopg import sql

from router.config import RouterConfig
from router.pinning import PINS_FILE as PINS
from router.server.http.auth.security import SecurityPolicy
from router.store.postgres.store import PostgresStore
from router.upstream.listing.cache import (
    LISTINGS_DIR,
    PERSONAL_LISTINGS,
    CachedListing,
    ListingCache,
)
from router.upstream.listing.fetch import Listing
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.identity_provider import EXCHANGE_CLIENT, IdentityProvider, running_provider
from tests.support.postgres import Postgres
from tests.support.replicas import module_postgres  # noqa: F401 (the postgres fixture)
from tests.support.team_api import running_team_api

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
KEY = "k" * 48
LIMIT = 60.0
REVIEW = "hr://{who}/performance-review-2026"
ALICES = (b"performance-review", b"hr://alice", b"alice-private-feedback", b"payslip_alice")
"""What only alice's own listing holds, as it would sit in a file or row in clear."""


@pytest.fixture(autouse=True)
def secrets_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ROUTER_SECRETS_KEY", KEY)


def _config(provider: IdentityProvider, team: str, cache: Path, **router: Any) -> RouterConfig:
    client_id, secret = EXCHANGE_CLIENT
    oauth = {"grant": "token-exchange", "clientId": client_id, "clientSecret": secret}
    return config(
        {"team": {"type": "http", "url": team, "oauth": oauth}},
        cache_dir=str(cache),
        mode="all",
        http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
        **router,
    )


def _policy(cfg: RouterConfig) -> SecurityPolicy:
    return SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)


def _text(result: types.CallToolResult | types.GetPromptResult | types.ReadResourceResult) -> str:
    return result.model_dump_json()


async def _sign_in(
    front: Front, provider: IdentityProvider, who: str, tool: str = "team__sign_in"
) -> dict[str, list[str]]:
    """`who` calls `tool`, which opens its connection (that lists), then lists; what it
    saw, by kind."""
    headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
    async with streamable_client(front.mcp, headers) as client:
        called = await client.call_tool(tool, {})
        assert not called.is_error, _text(called)
        return await _listed(client)


async def _listed(client: Any) -> dict[str, list[str]]:
    tools = await client.list_tools()
    resources = await client.list_resources()
    prompts = await client.list_prompts()
    return {
        "tools": [t.name for t in tools.tools],
        "resources": [str(r.uri) for r in resources.resources],
        "prompts": [p.name for p in prompts.prompts],
    }


async def _as_bob(front: Front, provider: IdentityProvider) -> None:
    """bob, with no connection of his own, lists and reaches for alice's items: he sees the
    server's sign-in stand-in only, and nothing of hers comes back."""
    headers = {"Authorization": f"Bearer {provider.token('bob', AUDIENCE)}"}
    before = front.state.pool.statuses()["team"].principals
    async with streamable_client(front.mcp, headers) as client:
        seen = await _listed(client)
        assert "alice" not in repr(seen), seen
        assert seen["tools"] == ["team__sign_in"], seen
        assert seen["resources"] == [] and seen["prompts"] == [], seen
        answers: list[str] = []
        for reach in (
            lambda: client.read_resource(REVIEW.format(who="alice")),
            lambda: client.get_prompt("team__alice-private-feedback"),
            lambda: client.call_tool("team__payslip_alice", {}),
        ):
            try:
                answers.append(_text(await reach()))
            except MCPError as exc:
                answers.append(str(exc))
        assert not any("2/5" in a or "misses deadlines" in a or "4,200" in a for a in answers)
        assert front.state.pool.statuses()["team"].principals == before  # none for him


def _cached_files(cache: Path) -> list[bytes]:
    return [p.read_bytes() for p in cache.rglob("*") if p.is_file() and p.name != PINS]


def _in_clear(blobs: list[bytes]) -> list[bytes]:
    return [mark for mark in ALICES for blob in blobs if mark in blob]


async def test_after_a_restart_another_principal_never_gets_a_principals_own_listing(
    tmp_path: Path,
) -> None:
    """A restart on the same cache folder: bob sees none of alice's items, alice hers; with
    the upstream down, alice's connection serves her the listing it kept (sealed), and bob
    still nothing."""
    cache = tmp_path / "cache"
    async with running_provider() as provider:
        async with running_team_api(provider.url) as team:
            cfg = _config(provider, team, cache)
            async with http_front(cfg, _policy(cfg)) as front:
                with anyio.fail_after(LIMIT):
                    hers = await _sign_in(front, provider, "alice")
            assert REVIEW.format(who="alice") in hers["resources"], hers
            assert "team__alice-private-feedback" in hers["prompts"], hers
            assert "team__payslip_alice" in hers["tools"], hers
            # her listing is sealed (the pins of the tools the index held are not)
            assert _in_clear(_cached_files(cache)) == []
            legacy = await _plant_legacy_listing(cfg, cache)
            async with http_front(cfg, _policy(cfg)) as front:  # a restart: same cache folder
                with anyio.fail_after(LIMIT):
                    assert not legacy.exists()  # what older versions kept in clear: deleted
                    await _as_bob(front, provider)
                    again = await _sign_in(front, provider, "alice")  # hers are still hers
                    assert REVIEW.format(who="alice") in again["resources"], again
                    # bob calls a tool by name: that opens his own connection, which lists
                    bobs = await _sign_in(front, provider, "bob", "team__whoami")
                    own = {"resources": bobs["resources"], "prompts": bobs["prompts"]}
                    assert "alice" not in repr(own), own
                    assert REVIEW.format(who="bob") in own["resources"], own
        async with http_front(cfg, _policy(cfg)) as front:  # again, with the upstream down
            with anyio.fail_after(LIMIT):
                await _as_bob(front, provider)
                headers = {"Authorization": f"Bearer {provider.token('alice', AUDIENCE)}"}
                async with streamable_client(front.mcp, headers) as client:
                    down = await client.call_tool("team__sign_in", {})
                    assert down.is_error, _text(down)
                    kept = await _listed(client)
                assert REVIEW.format(who="alice") in kept["resources"], kept
                assert "team__alice-private-feedback" in kept["prompts"], kept
                assert "hr://bob" not in repr(kept), kept
                await _as_bob(front, provider)
                kept_files = cache / PERSONAL_LISTINGS
                assert len(list(kept_files.iterdir())) == 2  # alice's and bob's
                async with httpx2.AsyncClient(base_url=front.url, headers=headers) as http:
                    signed_out = await http.delete("/v1/auth/team")
                assert signed_out.status_code == 200, signed_out.text
                assert len(list(kept_files.iterdir())) == 1  # hers went with her sign-out
    assert _in_clear(_cached_files(cache)) == []


async def test_a_replica_started_later_on_the_same_store_never_serves_her_listing_to_him(
    postgres: Postgres, tmp_path: Path
) -> None:
    namespace = uuid.uuid4().hex
    store = {"url": postgres.url, "namespace": namespace}
    key = {"env": "MCP_ROUTER_SECRETS_KEY"}
    async with running_provider() as provider, running_team_api(provider.url) as team:
        a_cfg = _config(provider, team, tmp_path / "a", store=store, secrets_key=key)
        b_cfg = _config(provider, team, tmp_path / "b", store=store, secrets_key=key)
        async with http_front(a_cfg, _policy(a_cfg)) as a:
            with anyio.fail_after(LIMIT):
                hers = await _sign_in(a, provider, "alice")
                assert REVIEW.format(who="alice") in hers["resources"], hers
                async with http_front(b_cfg, _policy(b_cfg)) as b:
                    await _as_bob(b, provider)
    opened = PostgresStore(postgres.url, namespace=namespace)
    opened.open()
    try:
        rows = _every_value(opened, namespace)
    finally:
        opened.close()
    assert rows and _in_clear(rows) == []


async def _plant_legacy_listing(cfg: RouterConfig, cache: Path) -> Path:
    """alice's listing as older versions kept it: under the server's name, in clear."""
    server = cfg.servers["team"]
    resource = types.Resource(uri=REVIEW.format(who="alice"), name="performance-review-2026")
    await ListingCache(cache).save("team", server, CachedListing(Listing(resources=(resource,))))
    [path] = (cache / LISTINGS_DIR).iterdir()
    return path


def _every_value(store: PostgresStore, namespace: str) -> list[bytes]:
    """Every record in the store's namespace (its kind, key and value), as stored."""
    query = sql.SQL("SELECT kind, key, value FROM mcp_router_records WHERE namespace = %(ns)s")
    rows = store.fetch(query.format(), {"ns": namespace})
    return [f"{kind}/{key}".encode() + bytes(value) for kind, key, value in rows]
