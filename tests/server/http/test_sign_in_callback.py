"""A per-user sign-in belongs to who started it (issue 48, build item 5: the OAuth
login-CSRF case): bob starts a sign-in for his own connection to `notes` and sends it to
alice; whatever alice's browser does with it, her upstream tokens never land in bob's record.

Real processes throughout: the front with identities (tests/support/identity_provider.py),
`notes` (tests/upstreams/oauth_protected.py --login, whose authorization server asks who signs
in), and one `SignInBrowser` per person, each with its own cookie jar.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest

from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.identity_provider import IdentityProvider, running_provider
from tests.support.sign_in_browser import SignInBrowser
from tests.upstream.auth.test_upstream_auth import Upstream, start_upstream

pytestmark = pytest.mark.processes

AUDIENCE = "https://router.test/mcp"
LIMIT = 60.0


@pytest.fixture(scope="module")
def notes(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    yield from start_upstream(tmp_path_factory.mktemp("notes"), 3600, "--login")


@pytest.fixture(autouse=True)
def secrets_key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_ROUTER_SECRETS_KEY", "k" * 48)


async def _call(
    front: Front, provider: IdentityProvider, who: str, tool: str = "notes__sign_in"
) -> str:
    """`who` calls `tool` from a host that cannot show URLs: the answer's text (the error
    that names the sign-in link, until it has signed in)."""
    headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
    async with streamable_client(front.mcp, headers) as client:
        result = await client.call_tool(tool, {})
    return "\n".join(b.text for b in result.content if isinstance(b, types.TextContent))


async def _signed_in(front: Front, provider: IdentityProvider, who: str) -> bool:
    headers = {"Authorization": f"Bearer {provider.token(who, AUDIENCE)}"}
    async with httpx2.AsyncClient(base_url=front.url, timeout=10) as http:
        answer = (await http.get("/v1/auth", headers=headers)).json()
    [notes] = answer["upstreams"]
    return bool(notes["signed_in"])


async def _tokens(upstream: Upstream) -> dict[str, Any]:
    """Every access token the upstream issued, by the subject who signed in for it."""
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{upstream.issuer}/control/tokens")
    issued: dict[str, Any] = answer.json()
    return issued


def _link(error: str) -> str:
    assert "sign in to notes as yourself" in error, error
    return error.split("open ", 1)[1].split(" in a browser", 1)[0]


async def test_a_sign_in_link_sent_to_someone_else_stores_nothing_and_its_owner_finishes_it(
    notes: Upstream, tmp_path: Path
) -> None:
    async with running_provider() as provider:
        cfg = config(
            {"notes": {"type": "http", "url": notes.url, "oauth": {"perUser": True}}},
            cache_dir=str(tmp_path / "cache"),
            mode="all",
            http={"oauth": {"issuer": provider.url, "audience": AUDIENCE}},
        )
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as front:
            with anyio.fail_after(LIMIT):
                link = _link(await _call(front, provider, "bob"))
                assert link.startswith("https://router.test/oauth/start?ticket="), link
                bob = SignInBrowser(front.url, "bob")
                alice = SignInBrowser(front.url, "alice")
                mallory = SignInBrowser(front.url, "mallory")

                # bob opens his own link: the page names whose sign-in it is
                page = await bob.get(link)
                assert page.status_code == 200 and "signs bob (of" in page.text, page.text
                authorization = await bob.start(link)
                [cookie] = list(bob.cookies.jar)
                assert cookie.name.startswith("__Host-mcp-router-sign-in-") and cookie.secure
                assert cookie.has_nonstandard_attr("HttpOnly"), cookie
                assert str(cookie.get_nonstandard_attr("SameSite")).lower() == "lax"

                # the link is spent: opened again by alice (or by bob), it leads nowhere
                for who in (alice, bob):
                    again = await who.get(link)
                    assert again.status_code == 400 and "already opened" in again.text
                    hop = await who.get(f"{link}&go=1")
                    assert hop.status_code == 400 and "location" not in hop.headers

                # he sends alice the authorization server's URL: she signs in there as
                # herself, and her browser, which never opened the link, comes back refused
                callback = await alice.authorize(authorization)
                refused = await alice.get(callback)
                assert refused.status_code == 403, refused.text
                assert "nothing was stored" in refused.text
                # a forged cookie of the flow's name is refused too
                mallory.cookies.set(cookie.name, "forged", domain=cookie.domain, path="/")
                forged = await mallory.get(callback)
                assert forged.status_code == 403, forged.text
                assert not await _signed_in(front, provider, "bob")
                assert "sign in to notes" in await _call(front, provider, "bob")

                # bob's own browser finishes his sign-in, and he acts upstream as himself
                done = await bob.get(await bob.authorize(authorization))
                assert done.status_code == 200, done.text
                signed = await _call(front, provider, "bob")  # his connection comes up
                assert "Signed in to notes" in signed, signed
                assert await _signed_in(front, provider, "bob")
                mine = await _call(front, provider, "bob", "notes__my_notes")
                assert mine == "notes of bob: buy milk", mine
                assert not list(bob.cookies.jar)  # the flow's cookie is cleared
                replayed = await bob.get(callback)  # alice's redirect, now with no flow
                assert replayed.status_code == 400
    # the codes alice's sign-in brought were never exchanged: no token was issued to her
    subjects = set((await _tokens(notes)).values())
    assert "bob" in subjects and "alice" not in subjects and "mallory" not in subjects
