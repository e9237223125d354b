"""State that replicas of one store share (issue 33): upstream OAuth tokens, their refresh,
usage memories and lazy upstreams' listings, tried with real processes.

The store is a real PostgreSQL (`tests/support/postgres.py`), each test in a namespace of its own.
The upstream is `tests/upstreams/oauth_protected.py` (its authorization server rotates
refresh tokens and refuses a spent one, and counts what it did at `/control/stats`) or
`tests/upstreams/lazy.py` (it writes its pid when it starts). Replicas are `mcp-router
serve` children over stdio, each with its own cache folder, driven as a host would
(`tests.upstream.auth.test_upstream_auth.Host`); the usage tests' replicas are two HTTP fronts,
or two opened stores (two connection pools), in this process. Waits are bounded; where the state
waited on is a database's (an advisory lock, an expiry) it is polled, since neither offers an event.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import numpy as np
import psycopg
import pytest

from router.core.errors import StoreError
from router.retrieval.usage_scopes import PRINCIPAL_PAIRS, UsageScopes, scope_key
from router.store import shared_records
from router.store.postgres.store import PostgresStore
from router.store.shared_records import record_lock
from router.upstream.auth.providers import token_files
from router.upstream.auth.storage import AUTH_FOLDER, TokenFiles
from router.upstream.listing.cache import LISTINGS_DIR
from tests.support.postgres import Postgres
from tests.support.replicas import module_postgres  # noqa: F401 (the postgres fixture)
from tests.support.serving import raw_router, write_config
from tests.upstream.auth.test_upstream_auth import (
    SHORT_LIFETIME,
    WHOAMI,
    Setup,
    Upstream,
    assert_no_secret,
    login,
    router_setup,
    serving,
    start_upstream,
    until_tools,
)
from tests.upstream.test_lazy_upstreams import (
    LIMIT,
    forget_starts,
    lazy_server,
    started,
    topic_tools,
)

pytestmark = pytest.mark.processes

RESOURCE = "https://mcp.example.com/mcp"


@pytest.fixture(scope="module")
def lasting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """Access tokens that outlive the test."""
    yield from start_upstream(tmp_path_factory.mktemp("lasting"), 3600)


@pytest.fixture(scope="module")
def rotating(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Upstream]:
    """Access tokens of `SHORT_LIFETIME` seconds; each refresh token is taken once."""
    yield from start_upstream(tmp_path_factory.mktemp("rotating"), SHORT_LIFETIME)


@pytest.fixture
def namespace() -> str:
    return uuid.uuid4().hex


def _opened(url: str, namespace: str) -> PostgresStore:
    store = PostgresStore(url, namespace=namespace)
    store.open()
    return store


@pytest.fixture
def store(postgres: Postgres, namespace: str) -> Iterator[PostgresStore]:
    """The test's own view of the store (what the replicas read)."""
    opened = _opened(postgres.url, namespace)
    yield opened
    opened.close()


def _setup(folder: Path, server: Upstream, postgres: Postgres, namespace: str) -> Setup:
    store = {"url": postgres.url, "namespace": namespace}
    return router_setup(folder, server, mode="all", store=store)


def _stored(setup: Setup, store: PostgresStore) -> TokenFiles:
    return token_files(setup.cache_dir, setup.server, store.records())


class LockHolder:
    """A connection of its own holding one record's advisory lock, as a replica would."""

    def __init__(self, url: str, key: int) -> None:
        self._connection = psycopg.connect(url, autocommit=True)
        self._key = key
        self._connection.execute("SELECT pg_advisory_lock(%s)", (key,))

    def waiting(self) -> int:
        """Sessions waiting for an advisory lock (the replicas' refreshes)."""
        row = self._connection.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND NOT granted"
        ).fetchone()
        return int(row[0]) if row else 0

    def release(self) -> None:
        self._connection.execute("SELECT pg_advisory_unlock(%s)", (self._key,))
        self._connection.close()


async def until_true(check: Any, *arguments: Any) -> None:
    """Until the blocking `check(*arguments)` is true, polled (the caller bounds it)."""
    while True:
        if await anyio.to_thread.run_sync(check, *arguments):
            return
        await anyio.sleep(0.05)  # a database's state has no event to wait on


def token_expired(files: TokenFiles) -> bool:
    stored = files.describe()
    assert stored is not None and stored.expires_at is not None, stored
    return stored.expires_at < time.time()


# -- upstream OAuth tokens -------------------------------------------------------------------


async def test_a_sign_in_on_one_replica_serves_another_that_cannot_sign_in(
    lasting: Upstream, postgres: Postgres, namespace: str, store: PostgresStore, tmp_path: Path
) -> None:
    """Replica A's host signs the upstream in (URL elicitation); replica B, started after with
    its own cache folder and a host that cannot sign in, calls with A's token: no second
    registration or sign-in, and no credentials file in either cache folder."""
    a = _setup(tmp_path / "a", lasting, postgres, namespace)
    b = _setup(tmp_path / "b", lasting, postgres, namespace)
    async with serving(a) as first:
        with anyio.fail_after(45):
            await first.handshake(url_elicitation=True)
            await until_tools(first)
            assert (await first.call_text(WHOAMI)).startswith("client ")
    signed_in = await lasting.stats()
    async with serving(b) as second:
        with anyio.fail_after(45):
            await second.handshake(url_elicitation=False)
            await until_tools(second)
            answer = await second.call_text(WHOAMI)
    after = await lasting.stats()

    stored = _stored(a, store).describe()
    assert stored is not None and stored.has_access and stored.has_refresh
    assert answer == f"client {stored.client_id} with scopes notes:read"
    assert second.elicitations == []
    for grant in ("registrations", "authorizations", "code_grants", "refresh_grants"):
        assert after.get(grant, 0) == signed_in.get(grant, 0), grant
    assert not (a.cache_dir / AUTH_FOLDER).exists() and not (b.cache_dir / AUTH_FOLDER).exists()
    tokens = _stored(a, store).read()["tokens"]
    logs = [first.stderr_text(), second.stderr_text()]
    assert_no_secret(logs, tokens["access_token"], tokens["refresh_token"])


async def test_two_replicas_refreshing_at_once_spend_the_rotating_refresh_token_once(
    rotating: Upstream,
    postgres: Postgres,
    namespace: str,
    store: PostgresStore,
    tmp_path: Path,
) -> None:
    """`auth login` against the store; two replicas hold the token when it expires and both
    call at the same moment (lined up on the record's lock, which the test holds until both
    wait for it): one refresh grant, none refused, both calls answered, no sign-in."""
    a = _setup(tmp_path / "a", rotating, postgres, namespace)
    b = _setup(tmp_path / "b", rotating, postgres, namespace)
    login(a)  # the CLI writes to the store
    files = _stored(a, store)
    assert files.describe() is not None and not (a.cache_dir / AUTH_FOLDER).exists()
    answers: list[str] = []
    async with serving(a) as first, serving(b) as second:
        with anyio.fail_after(60):
            for host in (first, second):
                await host.handshake(url_elicitation=False)
                await until_tools(host)
            holder = LockHolder(postgres.url, record_lock(namespace, AUTH_FOLDER, files.key))
            try:
                await until_true(token_expired, files)
                before = await rotating.stats()

                async def call(host: Any) -> None:
                    answers.append(await host.call_text(WHOAMI))

                async with anyio.create_task_group() as calls:
                    calls.start_soon(call, first)
                    calls.start_soon(call, second)
                    await until_true(lambda: holder.waiting() >= 2)
                    holder.release()
            except BaseException:
                holder.release()
                raise
        after = await rotating.stats()
        logs = [first.stderr_text(), second.stderr_text()]

    assert len(answers) == 2 and all(text.startswith("client ") for text in answers), answers
    assert after.get("refresh_grants", 0) == before.get("refresh_grants", 0) + 1
    assert after.get("refused_refreshes", 0) == before.get("refused_refreshes", 0)
    assert after.get("authorizations", 0) == before.get("authorizations", 0)
    assert after.get("rejected_tokens", 0) == before.get("rejected_tokens", 0)
    tokens = files.read()["tokens"]
    assert_no_secret(logs, tokens["access_token"], tokens["refresh_token"])


async def test_a_credentials_file_from_before_the_store_fills_it_once(
    store: PostgresStore, tmp_path: Path
) -> None:
    from mcp.shared.auth import OAuthToken

    old = TokenFiles(tmp_path / "a", RESOURCE)  # signed in before router.store was set
    await old.set_tokens(OAuthToken(access_token="a" * 32, refresh_token="r" * 32))

    replica_a = TokenFiles(tmp_path / "a", RESOURCE, store.records())
    replica_b = TokenFiles(tmp_path / "b", RESOURCE, store.records())
    first = await replica_a.get_tokens()
    assert first is not None and first.access_token == "a" * 32
    again = await replica_b.get_tokens()  # another cache folder: the store's copy
    assert again is not None and again.refresh_token == "r" * 32
    await replica_b.set_tokens(OAuthToken(access_token="b" * 32, refresh_token="s" * 32))
    refreshed = await replica_a.get_tokens()  # the store wins over the file it came from
    assert refreshed is not None and refreshed.access_token == "b" * 32

    assert await replica_a.clear()  # logout forgets the store's and the file's
    assert await replica_b.get_tokens() is None and not old.path.exists()


def test_a_held_record_lock_makes_another_replica_wait_then_fail_clearly(
    postgres: Postgres, namespace: str, store: PostgresStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(shared_records, "LOCK_TIMEOUT", 0.3)
    other = _opened(postgres.url, namespace)
    try:
        records, theirs = store.records(), other.records()
        with records.locked(AUTH_FOLDER, "k") as held:
            held.put(b'{"tokens": {"access_token": "' + b"x" * 32 + b'"}}')
            with pytest.raises(StoreError) as refused, theirs.locked(AUTH_FOLDER, "k"):
                pass
        assert "x" * 32 not in str(refused.value)
        with theirs.locked(AUTH_FOLDER, "k") as mine:  # released: the write is there
            assert mine.get() == records.get(AUTH_FOLDER, "k")
    finally:
        other.close()


# -- usage memories per principal ------------------------------------------------------------


def _unit(*values: float) -> np.ndarray:
    vector = np.asarray(values, dtype=np.float32)
    return vector / np.linalg.norm(vector)


def test_a_principals_usage_learnt_on_one_replica_lifts_the_tool_on_another(
    postgres: Postgres, namespace: str, store: PostgresStore
) -> None:
    """Alice's calls on replica A lift the tool for her on replica B, also where B held her
    memory already; never for Mallory, nor for the shared scope. The table names no one."""
    other = _opened(postgres.url, namespace)
    try:
        on_a = UsageScopes("m", None, shared=store.usage())
        on_b = UsageScopes("m", None, shared=other.usage())
        assert on_b.memory_for("issuer\x1falice").lift(_unit(1, 0)) == {}  # held by B now
        for _ in range(2):
            on_a.memory_for("issuer\x1falice").record("what time is it", _unit(1, 0), [("c", "t")])

        assert on_b.memory_for("issuer\x1falice").lift(_unit(1, 0)) == {("c", "t"): 1.0}
        assert on_b.memory_for("issuer\x1fmallory").lift(_unit(1, 0)) == {}
        assert on_b.memory_for(None).lift(_unit(1, 0)) == {}
        fresh = UsageScopes("m", None, shared=other.usage())  # a replica started after
        assert fresh.memory_for("issuer\x1falice").lift(_unit(1, 0)) == {("c", "t"): 1.0}
        with psycopg.connect(postgres.url) as connection:
            rows = connection.execute(
                "SELECT scope, calls FROM mcp_router_usage WHERE namespace = %s", (namespace,)
            ).fetchall()
        assert rows == [(scope_key("issuer\x1falice"), 2)]
        assert "alice" not in rows[0][0]
    finally:
        other.close()


def test_a_principals_pairs_in_the_store_are_bounded(namespace: str, store: PostgresStore) -> None:
    """The store keeps a principal's newest `keep` pairs (the scopes pass `PRINCIPAL_PAIRS`;
    a smaller bound proves the same cut without a thousand transactions)."""
    keep = 40
    assert keep < PRINCIPAL_PAIRS
    rows = store.usage().rows("m", scope_key("p"))
    vector = _unit(1, 0).tobytes()
    for number in range(keep + 5):
        rows.add(f"query {number}", [("s", "t")], vector, float(number), keep)
    kept = store.usage().rows("m", scope_key("p")).load(keep * 2)
    assert len(kept) == keep
    assert kept[0][0] == "query 5" and kept[-1][0] == f"query {keep + 4}"


async def test_usage_learnt_through_one_front_lifts_the_tool_on_another(
    postgres: Postgres, namespace: str, tmp_path: Path
) -> None:
    """Two HTTP fronts on one store, `learn: true` (one scope, no identities): a client's
    searches and calls through front A lift the tool for the same query on front B, and
    neither cache folder gets a usage file."""
    from router.embedding.hashing import HashingEmbedder
    from tests.support.http_serving import config as front_config
    from tests.support.http_serving import counting_upstream, http_front, streamable_client

    query = "record one call on the counter"
    servers = {"count": counting_upstream(tmp_path / "calls.log")}
    store = {"url": postgres.url, "namespace": namespace}
    configs = [
        front_config(servers, cache_dir=str(tmp_path / name), learn=True, store=store)
        for name in ("a", "b")
    ]
    async with (
        http_front(configs[0], embedder=HashingEmbedder()) as a,
        http_front(configs[1], embedder=HashingEmbedder()) as b,
    ):
        with anyio.fail_after(60):
            # B may find the tool in the store's listing and never start the server: what
            # counts is that a search on either front misses nothing.
            for front in (a, b):
                await front.state.readiness.until_covered()  # the model and memory loaded
            async with streamable_client(a.mcp, mode="legacy") as client:
                for _ in range(2):
                    await client.call_tool("search_tools", {"query": query})
                    await client.call_tool("count__touch", {})
            usage, retriever = b.state.searcher.usage, b.state.snapshot.retriever
            assert usage is not None and retriever is not None

            def lift() -> dict[tuple[str, str], float]:
                return usage.memory_for(None).lift(retriever.embed_query(query)[0])

            lifted = await anyio.to_thread.run_sync(lift)
    assert lifted == {("count", "touch"): pytest.approx(1.0)}
    for name in ("a", "b"):
        assert not (tmp_path / name / "usage.sqlite3").exists()


# -- listing caches --------------------------------------------------------------------------


async def test_a_lazy_upstreams_listing_taken_by_one_replica_is_served_by_another(
    postgres: Postgres, namespace: str, tmp_path: Path
) -> None:
    """Replica A starts the lazy server once and lists it; replica B, started fresh with its
    own (empty) cache folder, finds its tool from the store's listing without starting it."""
    state = tmp_path / "state"
    servers = {"parcel": lazy_server(state, topic_tools("parcel"))}
    store = {"url": postgres.url, "namespace": namespace}
    configs = []
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        configs.append(write_config(tmp_path / name, servers, store=store))
    async with raw_router(configs[0]) as first:
        with anyio.fail_after(LIMIT):
            await first.initialize()
            assert "still starting" not in await first.search_text("find parcel records")
            await first.finish()
    assert len(started(state)) == 1
    forget_starts(state)
    async with raw_router(configs[1]) as second:
        with anyio.fail_after(LIMIT):
            await second.initialize()
            found = await second.call("search_tools", {"query": "find parcel records"})
            await second.finish()
    assert found["structuredContent"]["tools"][0]["name"] == "parcel__find_parcel"
    assert [entry["name"] for entry in found["structuredContent"]["cached"]] == ["parcel"]
    assert started(state) == []
    for name in ("a", "b"):
        assert not (tmp_path / name / "cache" / LISTINGS_DIR).exists()


def test_file_records_lock_across_handles(tmp_path: Path) -> None:
    """One machine: two processes' handles on one cache folder take turns (flock)."""
    from router.store.records import FileRecords

    first, second = FileRecords(tmp_path), FileRecords(tmp_path)
    seen: list[bytes | None] = []

    def take() -> None:
        with second.locked(AUTH_FOLDER, "k") as held:
            seen.append(held.get())

    waiter = threading.Thread(target=take)
    with first.locked(AUTH_FOLDER, "k") as held:
        held.put(b"first")
        waiter.start()
        waiter.join(0.3)  # a wait that must not end: the lock is held
        assert waiter.is_alive() and seen == []
    waiter.join(5)
    assert seen == [b"first"]
    assert (tmp_path / AUTH_FOLDER / "k.json").stat().st_mode & 0o777 == 0o600
