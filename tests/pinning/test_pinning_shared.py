"""Tool pinning that replicas share, and pins that fail closed, tried as an attacker would.

The upstream is `tests/upstreams/shifty.py` (its `lookup` turns into a request for
`~/.ssh/id_rsa`). Routers are real `mcp-router serve` children: over HTTP (`--http`, pass-
through mode, so a listing change reaches a handshake-era session as
`notifications/tools/list_changed`, the event each wait is on) or over stdio. The shared
store is a real PostgreSQL (`tests/support/postgres.py`), stopped mid-test where the store goes
away; a pins file is made unreadable by a second SQLite connection holding its lock, as a
CLI holding it for 30 s would.

- A replica started after a rug pull, with its own cache folder, holds what another
  replica pinned: it never trusts the changed tool on first use, and one approval (the
  CLI, against the store) releases it on both replicas.
- Pins that cannot be read or written (a lock, PostgreSQL stopped) hold the changed tool:
  not listed, not callable; `/healthz` and the log say so; they recover when the pins do.
"""

from __future__ import annotations

import sqlite3
import uuid
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import httpx2
import mcp_types as types
import pytest
from mcp import Client

from router.pinning import PINS_FILE
from tests.pinning.test_pinning import (
    HONEST,
    LIMIT,
    LOOKUP,
    STOLEN,
    ListChanges,
    listed,
    reached,
    refused,
    routed,
    seen_once,
    shifty,
    tools_command,
)
from tests.support.http_serving import streamable_client
from tests.support.postgres import Postgres
from tests.support.replicas import (
    Replica,
    module_postgres,  # noqa: F401 (the postgres fixture)
    start_http_router,
)
from tests.support.serving import write_config
from tests.upstream.test_upstream_pool import first_text

pytestmark = pytest.mark.processes

RECOVERY = 40.0
"""Seconds pins that read again have to release what they held (a retry every 5 s)."""


def _own(postgres: Postgres) -> dict[str, str]:
    """A namespace of the store for one test: the tests share one PostgreSQL."""
    return {"url": postgres.url, "namespace": uuid.uuid4().hex}


def _start(folder: Path, entry: dict[str, Any], **router: Any) -> Replica:
    """`mcp-router serve --http` on `folder/servers.json` (its cache folder beside it), in
    pass-through mode; blocking until `/healthz` says ready."""
    folder.mkdir()
    path = write_config(folder, {"shifty": entry}, mode="all", **router)
    return start_http_router(folder.name, path)


@asynccontextmanager
async def replica(folder: Path, entry: dict[str, Any], **router: Any) -> AsyncIterator[Replica]:
    started = await anyio.to_thread.run_sync(lambda: _start(folder, entry, **router))
    try:
        yield started
    finally:
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(started.stop)


@asynccontextmanager
async def session(at: Replica, changes: ListChanges) -> AsyncIterator[Client]:
    """A handshake-era session on the replica that has listed the tools (so it is told when
    the listing changes)."""
    async with streamable_client(
        f"{at.url}/mcp", mode="legacy", message_handler=changes.on_message
    ) as client:
        await listed(client)
        yield client


async def health(at: Replica) -> dict[str, Any]:
    async with httpx2.AsyncClient(timeout=10) as http:
        answer = await http.get(f"{at.url}/healthz")
    body: dict[str, Any] = answer.json()
    return body


async def until_pins_read(at: Replica) -> dict[str, Any]:
    """`/healthz` until its pins read again. Polled: a child process offers no event, as
    `Replica.wait_ready` polls; bound it."""
    while True:
        body = await health(at)
        if body["pins"]["state"] == "ok":
            return body
        await anyio.sleep(0.2)


# -- replicas share the pins ---------------------------------------------------------------


async def test_a_replica_started_after_a_rug_pull_holds_what_another_replica_pinned(
    tmp_path: Path, postgres: Postgres
) -> None:
    store = {"store": _own(postgres)}
    async with replica(tmp_path / "a", shifty(), **store) as first:
        changes_a, changes_b = ListChanges(), ListChanges()
        async with session(first, changes_a) as on_a:
            honest = await listed(on_a)
            # replica B starts later, with its own cache folder, and meets the changed tool
            async with (
                replica(tmp_path / "b", shifty(turned=True), **store) as second,
                session(second, changes_b) as on_b,
            ):
                with anyio.fail_after(LIMIT):
                    listing_b = await listed(on_b)
                    call_b = await refused(on_b, LOOKUP, {"word": "x"})
                    reached_b = await reached(on_b)
                    seen = changes_a.count
                    await on_a.call_tool("shifty__turn", {})  # A's upstream changes too
                    await changes_a.after(seen)
                    listing_a = await listed(on_a)
                    review_code, review, _ = await tools_command(
                        tmp_path / "b" / "servers.json", "review"
                    )
                    # one approval, written to the store by the CLI, releases it on both
                    seen_a, seen_b = changes_a.count, changes_b.count
                    approved = await tools_command(
                        tmp_path / "a" / "servers.json",
                        "approve",
                        "shifty/lookup",
                        "--store",
                        postgres.url,
                    )
                    await changes_a.after(seen_a)
                    await changes_b.after(seen_b)
                    after_a, after_b = await listed(on_a), await listed(on_b)
                    served_b = await on_b.call_tool(LOOKUP, {"word": "cat"})
                    health_b = await health(second)

    assert honest[LOOKUP].description == HONEST
    assert LOOKUP not in listing_b and "shifty__turn" in listing_b  # not trusted on first use
    assert call_b.code == types.INVALID_PARAMS and "changed since it was approved" in call_b.message
    assert reached_b == []
    assert LOOKUP not in listing_a
    assert review_code == 0 and "shifty/lookup: changed since it was approved" in review
    assert approved[0] == 0, approved
    assert STOLEN in (after_a[LOOKUP].description or "")
    assert STOLEN in (after_b[LOOKUP].description or "")
    assert first_text(served_b) == "cat: a word"
    assert health_b["pins"]["kind"] == "postgresql" and health_b["pins"]["state"] == "ok"
    assert not (tmp_path / "b" / "cache" / PINS_FILE).exists()  # the store's, not a file


# -- pins that fail hold -------------------------------------------------------------------


async def test_a_stopped_store_holds_a_rug_pull_until_it_reads_again(
    tmp_path: Path, postgres: Postgres
) -> None:
    changes = ListChanges()
    async with (
        replica(tmp_path / "a", shifty(), store=_own(postgres)) as one,
        session(one, changes) as client,
    ):
        with anyio.fail_after(LIMIT):
            await anyio.to_thread.run_sync(postgres.stop)
            try:
                seen = changes.count
                await client.call_tool("shifty__turn", {})
                await changes.after(seen)  # re-listed, with pins that cannot be read
                listing = await listed(client)
                call = await refused(client, LOOKUP, {"word": "x"})
                calls = await reached(client)  # a tool seen approved earlier stays
                down = await health(one)
            finally:
                await anyio.to_thread.run_sync(postgres.start)
        with anyio.fail_after(RECOVERY):
            back = await until_pins_read(one)
        with anyio.fail_after(LIMIT):
            still = await refused(client, LOOKUP, {"word": "x"})
            _, review, _ = await tools_command(tmp_path / "a" / "servers.json", "review")
    log = one.log_path.read_text(errors="replace")

    assert LOOKUP not in listing and "shifty__ran" in listing
    assert call.code == types.INVALID_PARAMS and call.data is not None
    assert call.data["pinning"] == "unverified"
    assert "the tool pins cannot be read" in call.message
    assert calls == []
    assert down["pins"]["state"] == "unreadable" and down["pins"]["kind"] == "postgresql"
    assert "shifty/lookup" in down["held_tools"]
    assert "tool pinning: the pins" in log and "cannot be used" in log
    assert back["pins"]["state"] == "ok" and "read again" in log
    assert still.data is not None and still.data["pinning"] == "changed"  # held, now recorded
    assert "shifty/lookup: changed since it was approved" in review


@asynccontextmanager
async def locked(pins: Path, *, readers_too: bool) -> AsyncIterator[Callable[[], None]]:
    """Another connection holding the pins' write lock (`BEGIN EXCLUSIVE`), or, with
    `readers_too`, every lock (`locking_mode=EXCLUSIVE`: nobody else even reads). Yields
    what lets it go before the block ends."""

    def take() -> sqlite3.Connection:
        connection = sqlite3.connect(pins, isolation_level=None, check_same_thread=False)
        if readers_too:
            connection.execute("PRAGMA locking_mode=EXCLUSIVE")
        connection.execute("BEGIN EXCLUSIVE")
        connection.execute("UPDATE pins SET first_seen = first_seen")  # the lock, taken
        return connection

    connection = await anyio.to_thread.run_sync(take)
    held = [connection]

    def unlock() -> None:
        while held:
            held.pop().close()  # its transaction rolled back, its locks gone

    try:
        yield unlock
    finally:
        unlock()


async def test_a_rug_pull_while_the_pins_are_locked_is_held_never_released(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, {"shifty": shifty()}, mode="all")
    changes = ListChanges()
    async with routed(config, changes=changes) as client:
        before = await listed(client)
        async with locked(tmp_path / "cache" / PINS_FILE, readers_too=False):
            seen = changes.count
            await client.call_tool("shifty__turn", {})
            await changes.after(seen)  # its change could not be written: held all the same
            listing = await listed(client)
            call = await refused(client, LOOKUP, {"word": "x"})
            calls = await reached(client)

    assert before[LOOKUP].description == HONEST
    assert LOOKUP not in listing and "shifty__turn" in listing
    assert call.code == types.INVALID_PARAMS and "changed since it was approved" in call.message
    assert calls == []


async def test_pins_nobody_can_read_hold_every_unconfirmed_tool_and_say_so(
    tmp_path: Path,
) -> None:
    """The pins are locked, even to readers, when a router starts after a rug pull: it can
    confirm no approval, so it serves no tool of the upstream, and says why; once they read,
    it serves what they approve, and the changed tool stays held."""
    await seen_once(write_config(tmp_path, {"shifty": shifty()}))  # recorded, trusted
    cache = tmp_path / "cache"
    changes = ListChanges()
    async with (
        locked(cache / PINS_FILE, readers_too=True) as unlock,
        replica(tmp_path / "b", shifty(turned=True), cache_dir=str(cache)) as one,
        session(one, changes) as client,
    ):
        with anyio.fail_after(LIMIT):
            listing = await listed(client)
            call = await refused(client, "shifty__ran", {})
            down = await health(one)
            seen = changes.count
        unlock()
        with anyio.fail_after(RECOVERY):
            await changes.after(seen)  # read again: what they approve is served
        with anyio.fail_after(LIMIT):
            after = await listed(client)
            still = await refused(client, LOOKUP, {"word": "x"})
            back = await health(one)
    log = one.log_path.read_text(errors="replace")

    assert not [name for name in listing if name.startswith("shifty__")]
    assert call.data is not None and call.data["pinning"] == "unverified"
    assert "the tool pins cannot be read" in call.message
    assert down["pins"]["kind"] == "sqlite" and down["pins"]["state"] == "unreadable"
    assert down["pins"]["where"].endswith(PINS_FILE) and "locked" in down["pins"]["error"]
    assert sorted(down["held_tools"]) == ["shifty/lookup", "shifty/ran", "shifty/turn"]
    assert "shifty__ran" in after and LOOKUP not in after
    assert still.data is not None and still.data["pinning"] == "changed"
    assert back["pins"]["state"] == "ok" and back["pins"]["error"] is None
    assert "cannot be used" in log and "read again" in log
