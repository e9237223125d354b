"""Lazy upstreams (`router.start`), end to end with real processes: a stdio server whose
listing is cached is searched from that listing and started only by a call that needs it,
then stopped again when idle.

Each upstream is `tests/upstreams/lazy.py`, which appends its pid to a file when it starts,
so every test counts exactly which servers ran. The cache is warmed by a first router run
(a server never seen starts once, to learn its tools). Waits are events (a notification, a
process's exit seen through its pidfd) bounded by `anyio.fail_after`; nothing sleeps.
"""

from __future__ import annotations

import json
import os
import select
import sys
from pathlib import Path
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
import pytest

from router.config import parse_config
from router.upstream import UpstreamPool, UpstreamState
from router.upstream.listing.cache import ListingCache
from tests.support.serving import RawRouter, raw_router, script, write_config

LIMIT = 60
TOPICS = ("weather", "invoice", "calendar", "recipe", "parcel", "ticket", "flight", "payroll")


def lazy_server(state: Path, tools: list[dict[str, str]] | None = None) -> dict[str, Any]:
    state.mkdir(parents=True, exist_ok=True)
    if tools is not None:
        (state / "tools.json").write_text(json.dumps(tools), encoding="utf-8")
    entry = script("lazy")
    entry["args"].append(str(state))
    return entry


def topic_tools(topic: str) -> list[dict[str, str]]:
    return [{"name": f"find_{topic}", "description": f"Find {topic} records by keyword."}]


def started(state: Path) -> list[int]:
    """The pids of every start of the server whose state folder this is."""
    pids = state / "pids"
    return [int(line) for line in pids.read_text().split()] if pids.exists() else []


def forget_starts(*states: Path) -> None:
    for state in states:
        (state / "pids").unlink(missing_ok=True)


def many(tmp_path: Path, **router: Any) -> tuple[Path, dict[str, Path]]:
    """A config of eight lazy servers (each its own topic and state folder)."""
    states = {topic: tmp_path / topic for topic in TOPICS}
    servers = {topic: lazy_server(state, topic_tools(topic)) for topic, state in states.items()}
    return write_config(tmp_path, servers, **router), states


async def warm(config: Path) -> None:
    """A first run: every server starts once, lists, and its listing is cached."""
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            text = await router.search_text("find records")
            assert "still starting" not in text, text
            await router.finish()


def text_of(result: dict[str, Any]) -> str:
    value: str = result["content"][0]["text"]
    return value


def answered_by(result: dict[str, Any]) -> int:
    """The pid in a `ping_me` answer (`ping_me from PID: TEXT`)."""
    return int(text_of(result).split(":")[0].rsplit(" ", 1)[1])


async def exited(pid: int) -> None:
    """Until process `pid` has exited: its pidfd turns readable (no polling)."""
    try:
        descriptor = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    try:
        # A blocking wait in a thread, woken each second to let a deadline cancel it.
        while not (await anyio.to_thread.run_sync(select.select, [descriptor], [], [], 1.0))[0]:
            pass
    finally:
        os.close(descriptor)


async def notified(router: RawRouter, method: str) -> dict[str, Any]:
    """The next notification `method` from the router (those already kept count first)."""
    for index, message in enumerate(router.notifications):
        if message.get("method") == method:
            return router.notifications.pop(index)
    while True:
        message = await router.receive()
        if message.get("method") == method:
            return message
        router.notifications.append(message)


pytestmark = [
    pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses pidfd"),
    pytest.mark.processes,
]


async def test_the_first_search_with_many_servers_configured_starts_none_of_them(
    tmp_path: Path,
) -> None:
    config, states = many(tmp_path)
    await warm(config)
    forget_starts(*states.values())
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            found = await router.call("search_tools", {"query": "find parcel records"})
            await router.finish()
    assert found["structuredContent"]["tools"][0]["name"] == "parcel__find_parcel"
    assert found["structuredContent"]["starting"] == [] == found["structuredContent"]["down"]
    cached = {entry["name"]: entry for entry in found["structuredContent"]["cached"]}
    assert "parcel" in cached and cached["parcel"]["ageSeconds"] >= 0
    assert "From the last known listing (server not running; a call starts it)" in (text_of(found))
    assert [topic for topic, state in states.items() if started(state)] == []


async def test_a_call_starts_exactly_its_server(tmp_path: Path) -> None:
    config, states = many(tmp_path)
    await warm(config)
    forget_starts(*states.values())
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            called = await router.call("invoice__find_invoice", {"text": "march"})
            again = await router.call("call_tool", {"name": "invoice__find_invoice"})
            await router.finish()
    assert called["isError"] is False
    [pid] = started(states["invoice"])
    assert text_of(called) == f"find_invoice from {pid}: march"
    assert text_of(again).startswith(f"find_invoice from {pid}")  # the same process
    assert [t for t, s in states.items() if started(s)] == ["invoice"]


async def test_concurrent_calls_to_an_idle_server_share_one_start(tmp_path: Path) -> None:
    state = tmp_path / "solo"
    servers = {"solo": lazy_server(state)}
    cfg = parse_config({"mcpServers": servers, "router": {"cache_dir": str(tmp_path)}})
    listings = ListingCache(tmp_path)
    listed = anyio.Event()

    async def indexed(_server: str, _tools: tuple[object, ...]) -> None:
        listed.set()  # called once the listing is in the cache folder

    # never seen: it starts to learn its tools
    async with UpstreamPool(cfg, listings=listings, on_tools_changed=indexed):
        with anyio.fail_after(LIMIT):
            await listed.wait()
    forget_starts(state)
    async with UpstreamPool(cfg, listings=listings) as pool:
        assert pool.statuses()["solo"].state is UpstreamState.IDLE
        assert pool.statuses()["solo"].from_cache and pool.upstream("solo").tools
        results: list[types.CallToolResult] = []

        async def call(text: str) -> None:
            results.append(await pool.call_tool("solo", "ping_me", {"text": text}))

        with anyio.fail_after(LIMIT):
            async with anyio.create_task_group() as group:
                for text in ("a", "b", "c", "d"):
                    group.start_soon(call, text)
    [pid] = started(state)
    assert sorted(r.content[0].text for r in results) == [  # type: ignore[union-attr]
        f"ping_me from {pid}: {text}" for text in "abcd"
    ]


async def test_an_idle_lazy_server_is_stopped_and_the_next_call_starts_it_again(
    tmp_path: Path,
) -> None:
    """Never seen, the server starts once at the router's start to be listed; on a loaded
    machine the idle timeout may stop that start before the first call comes, and the call
    starts it again. So the pids are read from the answers: the one that answered the first
    call exits, and the second call is answered by a new start."""
    state = tmp_path / "sleepy"
    config = write_config(tmp_path, {"sleepy": lazy_server(state)}, timeouts={"idle": 0.5})
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            first = await router.call("sleepy__ping_me", {"text": "one"})
            first_pid = answered_by(first)
            await exited(first_pid)  # stopped for want of calls
            second = await router.call("sleepy__ping_me", {"text": "two"})
            await router.finish()
    second_pid = answered_by(second)
    assert text_of(first) == f"ping_me from {first_pid}: one"
    assert text_of(second) == f"ping_me from {second_pid}: two"
    assert first_pid != second_pid
    assert started(state)[-2:] == [first_pid, second_pid]  # started after the first exited


async def test_a_stale_cached_listing_is_replaced_when_its_server_starts(tmp_path: Path) -> None:
    """Pass-through mode lists every tool: the cached one at once, then, once a call started
    the server, its real listing, announced with `notifications/tools/list_changed`."""
    state = tmp_path / "shop"
    old = [{"name": "list_orders", "description": "List the shop's orders."}]
    config = write_config(tmp_path, {"shop": lazy_server(state, old)}, mode="all")
    await warm(config)
    new = [*old, {"name": "refund_order", "description": "Refund one order."}]
    (state / "tools.json").write_text(json.dumps(new), encoding="utf-8")
    forget_starts(state)
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            before = await router.result("tools/list")
            assert started(state) == []  # listed from the cache
            await router.call("shop__list_orders", {})
            after = before
            while len(after["tools"]) == 1:  # one notice may be the cached listing's own
                await notified(router, "notifications/tools/list_changed")
                after = await router.result("tools/list")
            await router.finish()
    assert [tool["name"] for tool in before["tools"]] == ["shop__list_orders"]
    assert [tool["name"] for tool in after["tools"]] == ["shop__list_orders", "shop__refund_order"]
    assert len(started(state)) == 1


async def test_a_server_that_no_longer_starts_is_named_down_at_the_first_call(
    tmp_path: Path,
) -> None:
    config, states = many(tmp_path)
    await warm(config)
    (states["ticket"] / "broken").touch()
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            found = await router.call("search_tools", {"query": "find ticket records"})
            failed = await router.call("ticket__find_ticket", {"text": "x"})
            after = await router.call("search_tools", {"query": "find ticket records"})
            await router.finish()
    assert found["structuredContent"]["tools"][0]["name"] == "ticket__find_ticket"
    assert failed["isError"] is True
    assert text_of(failed).startswith("upstream 'ticket': did not start (")
    down = {d["name"]: d for d in after["structuredContent"]["down"]}
    assert down["ticket"]["indexed"] is True and down["ticket"]["lastError"]


async def test_an_eager_server_starts_with_the_router_even_when_cached(tmp_path: Path) -> None:
    state = tmp_path / "keen"
    config = write_config(tmp_path, {"keen": lazy_server(state)}, start="eager")
    await warm(config)
    forget_starts(state)
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            text = await router.search_text("ping")
            await router.finish()
    assert "From the last known listing" not in text
    assert len(started(state)) == 1


async def test_an_idle_server_s_extensions_come_from_its_cached_listing(tmp_path: Path) -> None:
    """What a server declared under `capabilities.extensions` (tests/upstreams/charts.py:
    MCP Apps) is kept with its listing, so a lazy server not started since says it too."""
    cfg = parse_config({"mcpServers": {"charts": script("charts")}, "router": {}})
    listings = ListingCache(tmp_path)
    listed = anyio.Event()

    async def indexed(_server: str, _tools: tuple[object, ...]) -> None:
        listed.set()  # called once the listing is in the cache folder

    async with UpstreamPool(cfg, listings=listings, on_tools_changed=indexed) as pool:
        with anyio.fail_after(LIMIT):
            await listed.wait()
        live = pool.statuses()["charts"]
    async with UpstreamPool(cfg, listings=listings) as pool:
        idle = pool.statuses()["charts"]

    assert live.extensions == ("io.modelcontextprotocol/ui",)
    assert idle.state is UpstreamState.IDLE and idle.from_cache
    assert idle.extensions == ("io.modelcontextprotocol/ui",)
