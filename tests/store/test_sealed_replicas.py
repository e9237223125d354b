"""Two router replicas sharing one PostgreSQL store: a sealed state authorizes one thing once
across both, and a held call stays where it is held, tried as an attacker would.

Two `mcp-router serve --http` children (`router.store` one real PostgreSQL,
`tests/support/postgres.py`), each with its own cache folder and its own upstreams: `guarded`
(`delete_note` confirmed by `router.policy`, `ran` the calls that ran in that process) and
`asking` (a handshake-era upstream whose `summarize` samples mid-call, so a 2026-07-28 call
to it is held in the replica that took it). The clients are raw 2026-07-28 HTTP requests
(tests/store/test_sealed_states.py `modern_call`), with no balancer: the test picks the replica,
as a balancer without affinity might.

- A confirmation asked on A and accepted on B runs once, on B; the accepted retry replayed
  unchanged on A, or on B again, runs nothing: the user is asked again, the question saying
  the state was used already (issue 33's "confirmation replayed on a second replica").
- A held call's retry that reaches the other replica is refused, naming the cause and what
  to do; on its own replica it resumes.
- With the store gone, a confirmation's answer authorizes nothing (fail closed), and it does
  again once the store is back.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import pytest

from tests.store.test_sealed_states import ACCEPT, SAMPLED, asked, modern_call, refusal
from tests.support.postgres import Postgres
from tests.support.replicas import (
    Replica,
    module_postgres,  # noqa: F401 (the postgres fixture)
    start_http_router,
)
from tests.support.serving import write_config
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

CONFIRMED = "guarded__delete_note"
ASKED_AGAIN = "mcp-router/confirm"


def _start(folder: Path, store: str) -> Replica:
    folder.mkdir()
    servers = {
        "guarded": script("guarded"),
        "asking": {**script("session_asking"), "protocol": "legacy"},
    }
    path = write_config(
        folder,
        servers,
        mode="all",
        policy={"confirm": ["guarded/delete_note"]},
        store={"url": store},
    )
    return start_http_router(folder.name, path)


@dataclass
class Pair:
    a: Replica
    b: Replica
    postgres: Postgres


@pytest.fixture(scope="module")
async def pair(postgres: Postgres, tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Pair]:
    scratch = tmp_path_factory.mktemp("sealed-replicas")
    a = await anyio.to_thread.run_sync(_start, scratch / "a", postgres.url)
    try:
        b = await anyio.to_thread.run_sync(_start, scratch / "b", postgres.url)
        try:
            yield Pair(a, b, postgres)
        finally:
            await anyio.to_thread.run_sync(b.stop)
    finally:
        await anyio.to_thread.run_sync(a.stop)


@asynccontextmanager
async def client() -> AsyncIterator[httpx2.AsyncClient]:
    async with httpx2.AsyncClient(timeout=30) as http:
        with anyio.fail_after(90):
            yield http


async def ran(http: httpx2.AsyncClient, at: Replica) -> list[str]:
    """The calls that ran in `at`'s own `guarded` upstream."""
    response = await modern_call(http, f"{at.url}/mcp", "guarded__ran", {})
    text: str = response["result"]["content"][0]["text"]
    return [line for line in text.splitlines() if line]


def asks_again(response: dict[str, Any]) -> str:
    """The question of a response that asks the user again (never an error, never a run)."""
    result = response.get("result", {})
    assert result.get("resultType") == "input_required", response
    question = result["inputRequests"][ASKED_AGAIN]["params"]["message"]
    assert isinstance(question, str)
    return question


async def test_a_confirmation_accepted_on_one_replica_runs_nothing_replayed_on_another(
    pair: Pair,
) -> None:
    note = {"name": "plans"}
    async with client() as http:
        state = asked(await modern_call(http, f"{pair.a.url}/mcp", CONFIRMED, note))
        accepted: dict[str, Any] = {"inputResponses": ACCEPT, "requestState": state}
        done = await modern_call(http, f"{pair.b.url}/mcp", CONFIRMED, note, **accepted)
        on_a = await modern_call(http, f"{pair.a.url}/mcp", CONFIRMED, note, **accepted)
        on_b = await modern_call(http, f"{pair.b.url}/mcp", CONFIRMED, note, **accepted)
        ran_a, ran_b = await ran(http, pair.a), await ran(http, pair.b)
    assert done["result"]["content"][0]["text"] == "deleted plans"  # any replica may answer
    for replayed in (on_a, on_b):
        assert "the request state was used already" in asks_again(replayed)
    assert (ran_a, ran_b) == ([], ["delete_note plans"])  # once, in all


async def test_a_held_calls_retry_on_the_other_replica_is_refused_saying_why(pair: Pair) -> None:
    text = {"text": "the news"}
    async with client() as http:
        state = asked(await modern_call(http, f"{pair.a.url}/mcp", "asking__summarize", text))
        retry: dict[str, Any] = {"inputResponses": SAMPLED, "requestState": state}
        elsewhere = await modern_call(http, f"{pair.b.url}/mcp", "asking__summarize", text, **retry)
        home = await modern_call(http, f"{pair.a.url}/mcp", "asking__summarize", text, **retry)
    message = refusal(elsewhere)
    assert "another replica holds this call" in message
    assert "retry the tool from the start" in message
    assert home["result"]["content"][0]["text"] == "model said: short"


async def test_without_the_store_an_answer_authorizes_nothing_until_it_is_back(
    pair: Pair,
) -> None:
    note = {"name": "drafts"}
    async with client() as http:
        state = asked(await modern_call(http, f"{pair.a.url}/mcp", CONFIRMED, note))
        accepted: dict[str, Any] = {"inputResponses": ACCEPT, "requestState": state}
        await anyio.to_thread.run_sync(pair.postgres.stop)
        try:
            down = await modern_call(http, f"{pair.a.url}/mcp", CONFIRMED, note, **accepted)
        finally:
            await anyio.to_thread.run_sync(pair.postgres.start)
        again = asked(down)
        back = await _until_spent(http, pair.a, note, again)
        ran_a = await ran(http, pair.a)
    assert "store that records used states is unreachable" in asks_again(down)
    assert back["result"]["content"][0]["text"] == "deleted drafts"
    assert ran_a == ["delete_note drafts"]


async def _until_spent(
    http: httpx2.AsyncClient, at: Replica, note: dict[str, str], state: str
) -> dict[str, Any]:
    """Accept `state` until the store is reachable again: each refused answer asks again
    with a fresh state (the store's reconnection waits `retry_after`, 5 s, after a failure;
    a child process offers no event for it)."""
    while True:
        accepted: dict[str, Any] = {"inputResponses": ACCEPT, "requestState": state}
        response = await modern_call(http, f"{at.url}/mcp", CONFIRMED, note, **accepted)
        if response.get("result", {}).get("resultType") != "input_required":
            return response
        state = response["result"]["requestState"]
        await anyio.sleep(0.5)
