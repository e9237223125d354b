"""What a flood of opaque tokens costs the issuer (`router.server.http.auth.tokens`), tried as an
attacker would against a real front and the real identity provider of
tests/support/identity_provider.py, which counts its introspection requests: a burst of made-up
tokens reaches the issuer at most the bucket's size, the rest get 503 with `Retry-After`, a
dead token retried is asked about once, and tokens the front already knows are served all
along. The bucket's clock is held still during a burst (a slow machine would otherwise
refill it between requests), then moved on to show it refills.
"""

from __future__ import annotations

import secrets
from collections.abc import AsyncIterator

import anyio
import httpx2
import pytest

from router.server.http.auth.security import SecurityPolicy
from router.server.http.auth.tokens import INTROSPECTION_BURST, INTROSPECTION_RATE, TokenBucket
from tests.support.http_serving import MCP_ACCEPT, Front, config, http_front
from tests.support.identity_provider import IdentityProvider, running_provider
from tests.support.serving import initialize_request

AUDIENCE = "https://router.test/mcp"
INITIALIZE = initialize_request("attacker")


@pytest.fixture
async def provider() -> AsyncIterator[IdentityProvider]:
    async with running_provider() as running:
        yield running


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
async def front(provider: IdentityProvider, clock: Clock) -> AsyncIterator[Front]:
    """A fresh front for each test: each starts with a full bucket and empty caches."""
    cfg = config(
        {},
        http={"oauth": provider.oauth(AUDIENCE)},
    )
    policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
    assert policy.tokens is not None
    policy.tokens.introspection_bucket = TokenBucket(INTROSPECTION_BURST, INTROSPECTION_RATE, clock)
    async with http_front(cfg, policy) as running:
        yield running


async def initialize(http: httpx2.AsyncClient, front: Front, token: str) -> httpx2.Response:
    headers = {**MCP_ACCEPT, "Authorization": f"Bearer {token}"}
    return await http.post(front.mcp, json=INITIALIZE, headers=headers)


async def test_a_burst_of_made_up_tokens_reaches_the_issuer_at_most_the_bucket(
    front: Front, provider: IdentityProvider, clock: Clock
) -> None:
    known = provider.opaque_token("carol", AUDIENCE)
    dead = provider.opaque_token("dave", AUDIENCE, active=False)
    tried = 3 * INTROSPECTION_BURST
    statuses: list[int] = []
    retry_after: set[str] = set()
    async with httpx2.AsyncClient(timeout=10) as http:
        assert (await initialize(http, front, known)).status_code == 200
        assert (await initialize(http, front, dead)).status_code == 401
        before = provider.introspections

        async def attack(limiter: anyio.CapacityLimiter) -> None:
            async with limiter:
                answer = await initialize(http, front, secrets.token_urlsafe(24))
            statuses.append(answer.status_code)
            if answer.status_code == 503:
                retry_after.add(answer.headers["retry-after"])
                assert "too many unknown tokens" in answer.text

        with anyio.fail_after(60):
            limiter = anyio.CapacityLimiter(16)
            async with anyio.create_task_group() as group:
                for _ in range(tried):
                    group.start_soon(attack, limiter)
        asked = provider.introspections - before
        # the bucket is empty: the tokens the front knows are still answered from its caches
        assert (await initialize(http, front, known)).status_code == 200
        assert (await initialize(http, front, dead)).status_code == 401
        assert provider.introspections - before == asked
        clock.now += 1  # a second later the bucket has refilled a little
        fresh = provider.opaque_token("erin", AUDIENCE)
        assert (await initialize(http, front, fresh)).status_code == 200

    assert asked == INTROSPECTION_BURST - 2  # the known and the dead token took two
    assert statuses.count(401) == asked  # every one the issuer was asked about is refused
    assert statuses.count(503) == tried - asked  # the others were not asked about, not refused
    assert retry_after == {"1"}


async def test_a_dead_token_retried_is_asked_about_once(
    front: Front, provider: IdentityProvider
) -> None:
    inactive = provider.opaque_token("dave", AUDIENCE, active=False)
    misdirected = provider.opaque_token("erin", "https://elsewhere.test/mcp")
    async with httpx2.AsyncClient(timeout=10) as http:
        before = provider.introspections
        answers = [await initialize(http, front, inactive) for _ in range(20)]
        others = [await initialize(http, front, misdirected) for _ in range(20)]

    assert provider.introspections - before == 2
    assert all(a.status_code == 401 for a in answers + others)
    assert all("token not active" in a.headers["www-authenticate"] for a in answers)
    assert all("not issued for" in a.headers["www-authenticate"] for a in others)
