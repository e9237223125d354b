"""The router is right from its first second: a search or a call sent at once after
`initialize` waits for the starting upstreams (and the model) instead of answering from an
empty index, and every answer names what it could not search, and why."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import pytest

from tests.support.serving import (
    Installed,
    RawRouter,
    example_servers,
    pending_upstreams,
    raw_router,
    script,
    write_config,
)
from tests.upstream.test_upstream_pool import installed as installed  # the shared fixture

pytestmark = [pytest.mark.model, pytest.mark.processes]

TOKYO = "what time is it in Tokyo"


def names(result: dict[str, Any]) -> list[str]:
    return [tool["name"] for tool in result["structuredContent"]["tools"]]


def text(result: dict[str, Any]) -> str:
    value: str = result["content"][0]["text"]
    return value


@pytest.fixture(scope="module")
async def at_once(
    installed: Installed, tmp_path_factory: pytest.TempPathFactory
) -> dict[str, dict[str, Any]]:
    """Six real upstreams, a cold embedding cache, the real model: a search and two calls
    (one by name, one through `call_tool`) sent together at once after `initialize`, nothing
    waited for in between, and no polling. Their results, by request."""
    scratch = tmp_path_factory.mktemp("at-once")
    config = write_config(scratch, example_servers(installed, scratch))
    requests = {
        "search": ("search_tools", {"query": TOKYO}),
        "now": ("time__get_current_time", {"timezone": "Asia/Tokyo"}),
        "via_meta": ("call_tool", {"name": "memory__read_graph", "arguments": {}}),
    }
    ids = {key: 10 + index for index, key in enumerate(requests)}
    results: dict[str, dict[str, Any]] = {}
    async with raw_router(config, bm25_only=False) as router:
        with anyio.fail_after(90):
            await router.initialize()
            for key, (name, arguments) in requests.items():
                params = {"name": name, "arguments": arguments}
                await router.send(
                    {"jsonrpc": "2.0", "id": ids[key], "method": "tools/call", "params": params}
                )
            waiting = {number: key for key, number in ids.items()}
            while waiting:  # in whatever order the router answers
                message = await router.receive()
                if "method" not in message and message.get("id") in waiting:
                    assert "result" in message, message
                    results[waiting.pop(message["id"])] = message["result"]
            await router.finish()
    return results


async def test_a_search_sent_at_once_after_initialize_finds_the_right_tool(
    at_once: dict[str, dict[str, Any]],
) -> None:
    found = at_once["search"]
    assert names(found)[0] == "time__get_current_time"
    assert pending_upstreams(text(found)) == set()
    assert found["structuredContent"]["starting"] == [] == found["structuredContent"]["down"]
    assert "No tools" not in text(found)


async def test_a_call_sent_at_once_after_initialize_waits_for_its_upstream(
    at_once: dict[str, dict[str, Any]],
) -> None:
    now, via_meta = at_once["now"], at_once["via_meta"]
    assert now["isError"] is False and "Asia/Tokyo" in text(now)
    assert via_meta["isError"] is False


async def test_an_answer_names_the_upstreams_still_starting(
    installed: Installed, tmp_path: Path
) -> None:
    """An upstream that never finishes its handshake holds a search for at most the router's
    connect timeout; the answer then gives what was found and names the upstream as
    starting (its own, longer connect timeout has not run out).

    The search is sent once time's tools are indexed with the model (pass-through mode
    announces them with `notifications/tools/list_changed`): the router's connect timeout
    runs from its start, and on a loaded machine time's start and the model's load could
    take longer than it, so the answer named time as starting too. Sent before the
    deadline, the search is held until it; after, it is answered at once: either way,
    silent is still starting."""
    servers = {
        # time's own connect timeout too: on a loaded machine its handshake took over 6 s
        "time": {
            "command": str(installed.root / "time" / "bin" / "mcp-server-time"),
            "timeouts": {"connect": 60},
        },
        "silent": script("silent", timeouts={"connect": 60}),
    }
    config = write_config(tmp_path, servers, mode="all", timeouts={"connect": 6})
    async with raw_router(config, bm25_only=False) as router:
        with anyio.fail_after(60):
            await router.initialize()
            await until_listed(router, "time__get_current_time")
            found = await router.call("search_tools", {"query": TOKYO})
            await router.finish()
    assert names(found)[0] == "time__get_current_time"
    assert "Not searched yet, still starting: silent" in text(found)
    assert "connecting" not in text(found)
    assert found["structuredContent"]["starting"] == ["silent"]


async def until_listed(router: RawRouter, tool: str) -> None:
    """List the tools until `tool` is listed, waiting for `notifications/tools/list_changed`
    between listings (a pass-through router announces each change of its catalog)."""
    changed = "notifications/tools/list_changed"
    while True:
        router.notifications.clear()
        listed = await router.result("tools/list")
        if tool in [t["name"] for t in listed["tools"]]:
            return
        if any(n.get("method") == changed for n in router.notifications):
            continue  # announced while the listing was on its way: list again
        while (await router.receive()).get("method") != changed:
            pass


async def test_an_upstream_that_cannot_start_is_named_down_with_its_error_and_retry(
    installed: Installed, tmp_path: Path
) -> None:
    servers: dict[str, dict[str, Any]] = {
        "time": {"command": str(installed.root / "time" / "bin" / "mcp-server-time")},
        "missing": {"command": str(tmp_path / "no-such-server")},
        "crashing": {"command": sys.executable, "args": ["-c", "raise SystemExit(3)"]},
    }
    config = write_config(tmp_path, servers)
    async with raw_router(config, bm25_only=False) as router:
        with anyio.fail_after(60):
            await router.initialize()
            found = await router.call("search_tools", {"query": "list my commits"})
            nothing = await router.call("search_tools", {"query": "zzzz qqqq xxxx"})
            await router.finish()
    message = text(found)
    assert "Down, not searched: crashing (last error: " in message
    assert "Down, not searched: missing (last error: " in message
    assert "next retry in" in message
    assert "starting" not in message and "connecting" not in message
    down = {d["name"]: d for d in found["structuredContent"]["down"]}
    assert set(down) == {"crashing", "missing"}
    assert down["missing"]["lastError"] and down["missing"]["retryIn"] is not None
    # an empty answer never reads as "no such tool" while upstreams are missing
    assert "No tools match" not in text(nothing)
    assert pending_upstreams(text(nothing)) == {"crashing", "missing"}
