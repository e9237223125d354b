"""Identities at the HTTP front (`router.http.oauth`) and per-principal profiles, tried as an
attacker would: tokens with the wrong audience, expired, signed by a foreign key, unsigned
or signed with the public key as an HMAC secret, made-up key ids, another principal's
session; and a principal outside a profile, on every surface (MCP listing, search and call,
`/v1/route`, `/v1/search`, `/v1/tools`). The identity provider is a real one on loopback
(tests/support/identity_provider.py); the upstreams are real MCP servers over stdio.
"""

from __future__ import annotations

import base64
import json
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

import anyio
import httpx2
import jwt
import mcp_types as types
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from mcp.shared.exceptions import MCPError

from router.core.errors import ConfigError
from router.server.http.auth.security import SecurityPolicy
from router.server.http.auth.tokens import REFRESH_FLOOR
from tests.support.http_serving import (
    MCP_ACCEPT,
    SCRIPTS,
    Front,
    config,
    http_front,
    streamable_client,
    until_indexed,
)
from tests.support.identity_provider import (
    IdentityProvider,
    bearer,
    module_provider,  # noqa: F401 (the provider fixture)
)
from tests.support.serving import initialize_request

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
"""The router's resource URL as clients reach it (behind a TLS proxy, say)."""

INITIALIZE = initialize_request("attacker")


def upstream(name: str) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SCRIPTS / f"{name}.py")]}


@pytest.fixture(scope="module")
async def front(provider: IdentityProvider) -> AsyncIterator[Front]:
    cfg = config(
        {"toolbox": upstream("toolbox"), "ledger": upstream("ledger")},
        pin=["ledger/get_balance", "toolbox/get_forecast"],
        http={"oauth": provider.oauth(AUDIENCE)},
        profiles={
            "finance": {"groups": ["finance"], "allow": ["*"]},
            "default": {"deny": ["ledger/*"]},
        },
    )
    policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
    async with http_front(cfg, policy) as running:
        with anyio.fail_after(30):
            await until_indexed(running.state)
        yield running


async def post_initialize(front: Front, headers: dict[str, str]) -> httpx2.Response:
    async with httpx2.AsyncClient(timeout=10) as http:
        return await http.post(front.mcp, json=INITIALIZE, headers={**MCP_ACCEPT, **headers})


def challenge_of(response: httpx2.Response) -> str:
    return response.headers.get("www-authenticate", "")


async def test_the_protected_resource_metadata_is_served_without_a_token(
    front: Front, provider: IdentityProvider
) -> None:
    async with httpx2.AsyncClient(base_url=front.url, timeout=10) as http:
        suffixed = await http.get("/.well-known/oauth-protected-resource/mcp")
        root = await http.get("/.well-known/oauth-protected-resource")
        anonymous = await http.post("/mcp", json=INITIALIZE, headers=MCP_ACCEPT)

    for response in (suffixed, root):
        assert response.status_code == 200
        metadata = response.json()
        assert metadata["resource"] == AUDIENCE
        assert [s.rstrip("/") for s in metadata["authorization_servers"]] == [provider.url]
        assert metadata["scopes_supported"] == ["mcp"]
    # RFC 9728 section 5.1: the 401 names where the metadata is, and no error without a token
    assert anonymous.status_code == 401
    assert challenge_of(anonymous) == (
        'Bearer scope="mcp", '
        'resource_metadata="https://router.test/.well-known/oauth-protected-resource/mcp"'
    )


async def test_a_valid_token_opens_a_session(front: Front, provider: IdentityProvider) -> None:
    token = provider.token("alice", AUDIENCE, groups=["finance"])
    async with streamable_client(front.mcp, bearer(token)) as client:
        listing = await client.list_tools()
    assert "ledger__get_balance" in [tool.name for tool in listing.tools]


def forged_tokens(provider: IdentityProvider) -> dict[str, tuple[str, str]]:
    """Each attack's token and the reason the router must give."""
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    public_pem = provider.signing.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
    )
    claims = provider.claims("mallory", AUDIENCE, groups=["finance"])
    unsigned_header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=")
    unsigned_body = base64.urlsafe_b64encode(json.dumps(claims).encode()).rstrip(b"=")
    hmac_header = base64.urlsafe_b64encode(b'{"alg":"HS256","kid":"rsa-1"}').rstrip(b"=")
    import hashlib
    import hmac

    signing_input = hmac_header + b"." + unsigned_body
    mac = hmac.new(public_pem, signing_input, hashlib.sha256).digest()
    hmac_token = signing_input + b"." + base64.urlsafe_b64encode(mac).rstrip(b"=")
    now = int(time.time())
    return {
        "wrong audience": (
            provider.token("mallory", "https://elsewhere.test/mcp", groups=["finance"]),
            "token not issued for https://router.test/mcp",
        ),
        "expired": (
            provider.token("mallory", AUDIENCE, iat=now - 7200, exp=now - 3600),
            "token expired",
        ),
        "foreign key, known kid": (
            jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": "rsa-1"}),
            "signature does not verify",
        ),
        "foreign key, own kid": (
            jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": "mallory-1"}),
            "signed by a key the issuer does not publish",
        ),
        "alg none": (
            (unsigned_header + b"." + unsigned_body + b".").decode(),
            "signing algorithm 'none' is not accepted",
        ),
        "public key as HMAC secret": (
            hmac_token.decode(),
            "signing algorithm 'HS256' is not accepted",
        ),
        "other issuer": (
            provider.token("mallory", AUDIENCE, iss="https://evil.test"),
            "token not issued by",
        ),
        "garbage": ("a.b.c", "malformed token"),
        "opaque, unknown": ("not-a-token-the-issuer-gave", "token not active"),
    }


async def test_forged_expired_and_misdirected_tokens_are_refused(
    front: Front, provider: IdentityProvider
) -> None:
    for attack, (token, reason) in forged_tokens(provider).items():
        response = await post_initialize(front, bearer(token))
        assert response.status_code == 401, attack
        assert 'error="invalid_token"' in challenge_of(response), attack
        assert reason in challenge_of(response), (attack, challenge_of(response))
        assert token not in response.text and token not in challenge_of(response)
        async with httpx2.AsyncClient(base_url=front.url, timeout=10) as http:
            rest = await http.get("/v1/tools", headers=bearer(token))
        assert rest.status_code == 401, attack


async def test_a_token_without_the_required_scope_is_forbidden(
    front: Front, provider: IdentityProvider
) -> None:
    response = await post_initialize(front, bearer(provider.token("bob", AUDIENCE, scope="read")))
    assert response.status_code == 403
    assert 'error="insufficient_scope"' in challenge_of(response)
    assert 'scope="mcp"' in challenge_of(response)


async def test_made_up_key_ids_do_not_make_the_router_hammer_the_issuer(
    front: Front, provider: IdentityProvider
) -> None:
    """A stream of tokens naming unknown keys fetches the key set at most once per floor."""
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    claims = provider.claims("mallory", AUDIENCE)
    await post_initialize(front, bearer(provider.token("alice", AUDIENCE)))  # keys loaded
    before = provider.jwks_fetches
    started = time.monotonic()
    for number in range(20):
        token = jwt.encode(claims, stranger, algorithm="RS256", headers={"kid": f"k{number}"})
        assert (await post_initialize(front, bearer(token))).status_code == 401
    floors = int((time.monotonic() - started) // REFRESH_FLOOR) + 1
    assert provider.jwks_fetches - before <= floors


async def test_an_opaque_token_is_introspected_and_an_inactive_one_refused(
    front: Front, provider: IdentityProvider
) -> None:
    active = provider.opaque_token("carol", AUDIENCE)
    inactive = provider.opaque_token("dave", AUDIENCE, active=False)
    other_resource = provider.opaque_token("erin", "https://elsewhere.test/mcp")

    async with streamable_client(front.mcp, bearer(active)) as client:
        found = await client.call_tool("search_tools", {"query": "ledger account balance"})
    assert "ledger__get_balance" in json.dumps(found.structured_content)
    assert (await post_initialize(front, bearer(inactive))).status_code == 401
    refused = await post_initialize(front, bearer(other_resource))
    assert refused.status_code == 401 and "not issued for" in challenge_of(refused)
    calls = provider.introspections
    async with streamable_client(front.mcp, bearer(active)) as client:
        await client.list_tools()
    assert provider.introspections == calls  # an active token's answer is kept until it expires


async def test_another_principal_cannot_use_a_session(
    front: Front, provider: IdentityProvider
) -> None:
    alice = provider.token("alice", AUDIENCE, groups=["finance"])
    mallory = provider.token("mallory", AUDIENCE)
    opened = await post_initialize(front, bearer(alice))
    session = opened.headers["mcp-session-id"]
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "ledger__get_balance", "arguments": {"account": "payroll"}},
    }
    async with httpx2.AsyncClient(timeout=10) as http:
        hijack = await http.post(
            front.mcp,
            json=call,
            headers={
                **MCP_ACCEPT,
                **bearer(mallory),
                "mcp-session-id": session,
                "mcp-protocol-version": "2025-11-25",
            },
        )
    assert hijack.status_code in (403, 404)
    assert "1200.00" not in hijack.text


def tool_names(result: types.CallToolResult) -> list[str]:
    assert result.structured_content is not None
    return [tool["name"] for tool in result.structured_content["tools"]]


async def test_a_principal_outside_a_profile_never_meets_its_tools(
    front: Front, provider: IdentityProvider
) -> None:
    alice = bearer(provider.token("alice", AUDIENCE, groups=["finance"]))
    bob = bearer(provider.token("bob", AUDIENCE, groups=["support"]))
    query = {"query": "post a journal entry to a ledger account, then get the forecast", "k": 5}

    async with streamable_client(front.mcp, alice) as client:
        alice_listing = [tool.name for tool in (await client.list_tools()).tools]
        alice_found = tool_names(await client.call_tool("search_tools", query))
        posted = await client.call_tool(
            "ledger__post_entry", {"account": "payroll", "amount": 5, "memo": "x"}
        )
    async with streamable_client(front.mcp, bob) as client:
        bob_listing = [tool.name for tool in (await client.list_tools()).tools]
        bob_found = tool_names(await client.call_tool("search_tools", query))
        with pytest.raises(MCPError) as direct:
            await client.call_tool(
                "ledger__post_entry", {"account": "payroll", "amount": 5, "memo": "x"}
            )
        with pytest.raises(MCPError) as misspelt:
            await client.call_tool("ledger__post_entri", {"account": "payroll"})
        with pytest.raises(MCPError) as meta:
            await client.call_tool(
                "call_tool", {"name": "ledger__get_balance", "arguments": {"account": "x"}}
            )

    assert "ledger__get_balance" in alice_listing and "toolbox__get_forecast" in alice_listing
    assert "ledger__post_entry" in alice_found and not posted.is_error
    # Bob's default listing differs: the ledger pin is not his
    assert "ledger__get_balance" not in bob_listing and "toolbox__get_forecast" in bob_listing
    assert bob_found and not any(name.startswith("ledger__") for name in bob_found)
    called = ("ledger__post_entry", "ledger__post_entri", "ledger__get_balance")
    for refused, name in zip((direct, misspelt, meta), called, strict=True):
        assert refused.value.error.code == types.INVALID_PARAMS
        # the called name is echoed; no ledger tool is suggested
        assert "ledger" not in refused.value.error.message.replace(name, ""), name
    assert "unknown tool" in direct.value.error.message

    async with httpx2.AsyncClient(base_url=front.url, timeout=30) as http:
        rest = {
            who: {
                "route": (await http.post("/v1/route", json=query, headers=headers)).json(),
                "search": (
                    await http.post("/v1/search", json={**query, "format": "mcp"}, headers=headers)
                ).json(),
                "tools": (await http.get("/v1/tools", headers=headers)).json(),
            }
            for who, headers in (("alice", alice), ("bob", bob))
        }
    for surface in ("route", "search"):
        assert any(r["server"] == "ledger" for r in rest["alice"][surface]["results"])
        assert not any(r["server"] == "ledger" for r in rest["bob"][surface]["results"])
        assert rest["bob"][surface]["catalog_tools"] < rest["alice"][surface]["catalog_tools"]
    assert rest["bob"]["route"]["tokens"]["full"] < rest["alice"]["route"]["tokens"]["full"]
    assert {t["server"] for t in rest["alice"]["tools"]["tools"]} == {"ledger", "toolbox"}
    assert {t["server"] for t in rest["bob"]["tools"]["tools"]} == {"toolbox"}
    assert [u["name"] for u in rest["bob"]["tools"]["upstreams"]] == ["toolbox"]


async def test_two_requests_of_one_principal_list_the_same_bytes(
    front: Front, provider: IdentityProvider
) -> None:
    """What replicas rely on: a principal's default listing depends on nothing else."""
    listings = []
    for _ in range(2):
        token = provider.token("bob", AUDIENCE, groups=["support"])
        async with streamable_client(front.mcp, bearer(token)) as client:
            listing = await client.list_tools()
        listings.append(json.dumps([tool.model_dump(mode="json") for tool in listing.tools]))
    assert listings[0] == listings[1]


def test_identity_settings_are_checked_where_they_are_read() -> None:
    with pytest.raises(ConfigError) as plain:
        config({}, http={"oauth": {"issuer": "http://idp.example", "audience": AUDIENCE}})
    with pytest.raises(ConfigError) as hmac_allowed:
        config(
            {},
            http={
                "oauth": {
                    "issuer": "https://idp.example",
                    "audience": AUDIENCE,
                    "algorithms": ["HS256"],
                }
            },
        )
    with pytest.raises(ConfigError) as nobody:
        config({}, profiles={"finance": {"allow": ["ledger/*"]}})
    with pytest.raises(ConfigError) as introspection:
        config(
            {},
            http={
                "oauth": {
                    "issuer": "https://idp.example",
                    "audience": AUDIENCE,
                    "introspection_endpoint": "https://idp.example/introspect",
                }
            },
        )

    assert "router.http.oauth.issuer" in str(plain.value) and "https" in str(plain.value)
    assert "router.http.oauth.algorithms" in str(hmac_allowed.value)
    assert "profile 'finance' names no subjects and no groups" in str(nobody.value)
    assert "needs client_id" in str(introspection.value)


def test_identities_stand_in_for_the_shared_token_beyond_loopback() -> None:
    cfg = config({}, http={"oauth": {"issuer": "https://idp.example", "audience": AUDIENCE}})
    policy = SecurityPolicy.for_bind(cfg.router.http, "0.0.0.0", "shared-secret")
    assert policy.tokens is not None and policy.token is None
