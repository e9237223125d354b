"""The config file applied while serving (`router.reload`), with real processes: servers added,
removed and changed, a broken file, SIGHUP and a live `router` setting, over stdio, and an
added server over streamable HTTP.

The file is always rewritten whole and renamed into place, as editors save. The router
watches the file from before it answers `initialize`, so every edit a test makes is seen;
each wait is for an event (a notification, a process's exit) bounded by `anyio.fail_after`.
"""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import IncomingMessage

from router.config import load_config
from tests.support.http_serving import http_front, streamable_client
from tests.support.serving import RawRouter, raw_router, write_config
from tests.upstream.test_lazy_upstreams import exited, lazy_server, notified, started, topic_tools

pytestmark = pytest.mark.processes

LIMIT = 60
LIST_CHANGED = "notifications/tools/list_changed"


def rewrite(config: Path, servers: dict[str, dict[str, Any]], **router: Any) -> None:
    """The config file saved anew (a new file renamed over the old, as editors do)."""
    router.setdefault("cache_dir", str(config.parent / "cache"))
    scratch = config.with_name(".servers.json.tmp")
    scratch.write_text(json.dumps({"mcpServers": servers, "router": router}), encoding="utf-8")
    os.replace(scratch, config)


def servers_of(tmp_path: Path, *topics: str) -> dict[str, dict[str, Any]]:
    return {topic: lazy_server(tmp_path / topic, topic_tools(topic)) for topic in topics}


async def names(router: RawRouter) -> list[str]:
    return [tool["name"] for tool in (await router.result("tools/list"))["tools"]]


async def until_listed(router: RawRouter, wanted: list[str]) -> None:
    """Until `tools/list` holds `wanted`, listing again at each `list_changed`."""
    while await names(router) != wanted:
        await notified(router, LIST_CHANGED)


async def test_an_added_server_is_started_and_its_tools_reach_the_host(tmp_path: Path) -> None:
    config = write_config(tmp_path, servers_of(tmp_path, "alpha"), mode="all")
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            assert await names(router) == ["alpha__find_alpha"]
            rewrite(config, servers_of(tmp_path, "alpha", "beta"), mode="all")
            await until_listed(router, ["alpha__find_alpha", "beta__find_beta"])
            called = await router.call("beta__find_beta", {"text": "x"})
            await router.finish()
    assert called["isError"] is False
    assert len(started(tmp_path / "alpha")) == len(started(tmp_path / "beta")) == 1


async def test_a_removed_server_is_stopped_and_its_tools_leave_the_index(tmp_path: Path) -> None:
    config = write_config(tmp_path, servers_of(tmp_path, "alpha", "beta"), mode="all")
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            await until_listed(router, ["alpha__find_alpha", "beta__find_beta"])
            [beta] = started(tmp_path / "beta")
            rewrite(config, servers_of(tmp_path, "alpha"), mode="all")
            await until_listed(router, ["alpha__find_alpha"])
            await exited(beta)
            gone = await router.request("tools/call", {"name": "beta__find_beta"})
            found = await router.call("search_tools", {"query": "find beta records"})
            await router.finish()
    assert gone["error"]["code"] == types.INVALID_PARAMS
    assert "beta__find_beta" not in [t["name"] for t in found["structuredContent"]["tools"]]


async def test_a_changed_entry_restarts_only_that_upstream(tmp_path: Path) -> None:
    config = write_config(tmp_path, servers_of(tmp_path, "alpha", "beta"), mode="all")
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            await until_listed(router, ["alpha__find_alpha", "beta__find_beta"])
            [beta] = started(tmp_path / "beta")
            changed = {
                **servers_of(tmp_path, "alpha"),
                "beta": lazy_server(tmp_path / "beta2", topic_tools("gamma")),
            }
            rewrite(config, changed, mode="all")
            await until_listed(router, ["alpha__find_alpha", "beta__find_gamma"])
            await exited(beta)
            await router.finish()
    assert len(started(tmp_path / "alpha")) == 1  # untouched
    assert len(started(tmp_path / "beta2")) == 1


async def test_a_broken_file_is_reported_and_the_last_good_config_keeps_serving(
    tmp_path: Path,
) -> None:
    config = write_config(tmp_path, servers_of(tmp_path, "alpha"), mode="all")
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            assert await names(router) == ["alpha__find_alpha"]
            config.write_text('{"mcpServers": {"beta": }', encoding="utf-8")
            bad_json = await notified(router, "notifications/message")
            rewrite(config, servers_of(tmp_path, "alpha", "beta"), mode="all", k=0)
            bad_field = await notified(router, "notifications/message")
            still = await names(router)
            called = await router.call("alpha__find_alpha", {"text": "x"})
            rewrite(config, servers_of(tmp_path, "alpha", "beta"), mode="all")
            await until_listed(router, ["alpha__find_alpha", "beta__find_beta"])
            await router.finish()
    assert bad_json["params"]["level"] == "error"
    text = bad_json["params"]["data"]
    assert "still serving the last good one" in text
    assert f"{config}: line 1 column 25: invalid JSON" in text and "Fix:" in text
    assert "router.k" in bad_field["params"]["data"] and str(config) in bad_field["params"]["data"]
    assert still == ["alpha__find_alpha"] and called["isError"] is False
    log = (tmp_path / "router.log").read_text(encoding="utf-8")
    assert "config not applied (the file changed)" in log


@pytest.mark.skipif(not hasattr(signal, "SIGHUP"), reason="no SIGHUP here")
async def test_sighup_applies_the_file_at_once(tmp_path: Path) -> None:
    """`reload: "signal"`: the file is not watched, SIGHUP alone applies it."""
    config = write_config(tmp_path, servers_of(tmp_path, "alpha"), mode="all", reload="signal")
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            assert await names(router) == ["alpha__find_alpha"]
            rewrite(config, servers_of(tmp_path, "alpha", "beta"), mode="all", reload="signal")
            router.process.send_signal(signal.SIGHUP)
            await until_listed(router, ["alpha__find_alpha", "beta__find_beta"])
            await router.finish()
    log = (tmp_path / "router.log").read_text(encoding="utf-8")
    assert "applied (SIGHUP): added beta" in log


async def test_a_changed_pin_reaches_the_default_listing(tmp_path: Path) -> None:
    """Search mode: `tools/list` is the pins and the meta-tools; a new pin changes it."""
    config = write_config(tmp_path, servers_of(tmp_path, "alpha"))
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            assert await names(router) == ["search_tools", "call_tool"]
            rewrite(config, servers_of(tmp_path, "alpha"), pin=["alpha/*"], mode="search")
            await until_listed(router, ["alpha__find_alpha", "search_tools", "call_tool"])
            await router.finish()
    log = (tmp_path / "router.log").read_text(encoding="utf-8")
    assert "router.pin changed" in log


async def test_a_setting_read_only_at_start_is_named_as_needing_a_restart(tmp_path: Path) -> None:
    config = write_config(tmp_path, servers_of(tmp_path, "alpha"))
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            rewrite(config, servers_of(tmp_path, "alpha"), mode="dynamic")
            warned = await notified(router, "notifications/message")
            await router.finish()
    assert warned["params"]["level"] == "warning"
    assert warned["params"]["data"] == (
        f"router.mode changed in {config}: it applies at the next start"
    )


async def test_the_http_front_applies_an_edited_file(tmp_path: Path) -> None:
    armed = [anyio.Event()]

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            armed[0].set()

    path = write_config(tmp_path, servers_of(tmp_path, "alpha"), mode="all")
    async with (
        http_front(load_config(path), read_config=lambda: load_config(path)) as front,
        streamable_client(front.mcp, mode="legacy", message_handler=on_message) as client,
    ):
        with anyio.fail_after(LIMIT):
            before = [tool.name for tool in (await client.list_tools()).tools]
            rewrite(path, servers_of(tmp_path, "alpha", "beta"), mode="all")
            while True:
                armed[0] = anyio.Event()  # before listing: a notice meanwhile is not lost
                after = [tool.name for tool in (await client.list_tools()).tools]
                if len(after) == 2:
                    break
                await armed[0].wait()
    assert before == ["alpha__find_alpha"]
    assert after == ["alpha__find_alpha", "beta__find_beta"]


async def test_a_watching_router_exits_at_once_when_the_host_closes_stdin(tmp_path: Path) -> None:
    """The file watcher waits in a worker thread that a cancellation cannot interrupt (its
    wait ends at a change, its stop event or a 5 s timeout): the router sets the stop event
    as it shuts down, so a host closing the session does not wait for the timeout. The
    cache is kept outside the watched folder, so nothing written there wakes the watcher."""
    folder = tmp_path / "config"
    folder.mkdir()
    config = write_config(
        folder, servers_of(tmp_path, "alpha"), mode="all", cache_dir=str(tmp_path / "cache")
    )
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            await router.initialize()
            assert await names(router) == ["alpha__find_alpha"]
        with anyio.fail_after(3):  # well under the watcher's 5 s timeout
            await router.finish()
    assert router.process.returncode == 0
