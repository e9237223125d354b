"""What is behind the door (`router.server.listing.door`): the `initialize` instructions and
`search_tools`' description name the servers behind the router and what each is for, within
their token budget, the same bytes at every start, and anew after a reload."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client.session import IncomingMessage

from router.accounting.tokens import TokenCounter
from router.config import load_config
from router.config.defaults import DEFAULT_SUMMARY_TOKENS
from router.server.listing.directory import HEADER
from tests.config.test_config_reload import rewrite, servers_of
from tests.support.http_serving import http_front, streamable_client
from tests.support.ports import free_port
from tests.support.serving import RawRouter, raw_router, until_indexed, write_config
from tests.upstream.test_lazy_upstreams import lazy_server, topic_tools
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

LIMIT = 60
NOTEBOOK = "Our team's notebook: meeting notes and to-dos"


async def _told(router: RawRouter) -> tuple[str, str]:
    """The instructions of a new session and `search_tools`' description."""
    instructions = (await router.initialize())["instructions"]
    listed = (await router.result("tools/list"))["tools"]
    [search] = [tool for tool in listed if tool["name"] == "search_tools"]
    return instructions, search["description"]


async def _listed_once(config: Path) -> None:
    """Start the router until every server has listed (kept in the cache folder), then stop."""
    async with raw_router(config) as router:
        await router.initialize()
        await until_indexed(router.search_text)
        await router.finish()


async def test_the_instructions_name_each_server_and_what_it_is_for_the_same_at_every_start(
    tmp_path: Path,
) -> None:
    notes = lazy_server(tmp_path / "notes", topic_tools("notes"))
    servers = {"notes": {**notes, "description": NOTEBOOK}, "scripted": script("scripted")}
    config = write_config(tmp_path, servers)
    with anyio.fail_after(LIMIT):
        await _listed_once(config)  # the lazy servers' listings are in the cache folder now
        told = []
        for _ in range(2):
            async with raw_router(config) as router:
                told.append(await _told(router))
                await router.finish()
    (instructions, description), again = told
    assert again == told[0]  # byte for byte: a host's prompt cache survives a restart
    assert f"- notes (1 tool): {NOTEBOOK}" in instructions
    assert "- scripted (6 tools): A scripted upstream for tests." in instructions
    assert instructions.index("- notes") < instructions.index("- scripted")  # sorted
    assert description.endswith(instructions.split("\n\n", 1)[1])  # the same directory


async def test_many_servers_are_cut_to_the_budget_alike_at_every_start(tmp_path: Path) -> None:
    """Forty servers, each with a long description, that never list (nothing listens at
    their URL): their names are kept, their descriptions cut, within the budget."""
    port = free_port()
    long = "Everything about the subject and more: " + "records, reports, files, " * 30
    servers: dict[str, dict[str, Any]] = {
        f"server_{n:02}": {"url": f"http://127.0.0.1:{port}/mcp/{n}", "description": long}
        for n in range(40)
    }
    config = write_config(tmp_path, servers)
    told = []
    with anyio.fail_after(LIMIT):
        for _ in range(2):
            async with raw_router(config) as router:
                told.append((await router.initialize())["instructions"])
                await router.finish()
    assert told[0] == told[1]
    directory = told[0].split("\n\n", 1)[1]
    assert directory.startswith(HEADER)
    assert TokenCounter().count_text(directory) <= DEFAULT_SUMMARY_TOKENS
    assert "records, reports, files, records" not in directory  # cut
    named = [line for line in directory.splitlines()[1:] if line.startswith("- server_")]
    more = [line for line in directory.splitlines() if line.startswith("- … and ")]
    assert named == sorted(named)
    assert len(named) + (int(more[0].split()[3]) if more else 0) == 40


async def test_a_reload_that_adds_a_server_tells_search_tools_and_new_sessions(
    tmp_path: Path,
) -> None:
    armed = [anyio.Event()]

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            armed[0].set()

    def described(tools: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
        return {name: {**entry, "description": f"The {name} desk"} for name, entry in tools.items()}

    path = write_config(tmp_path, described(servers_of(tmp_path, "alpha")))
    async with (
        http_front(load_config(path), read_config=lambda: load_config(path)) as front,
        streamable_client(front.mcp, mode="legacy", message_handler=on_message) as first,
    ):
        with anyio.fail_after(LIMIT):
            before = first.instructions or ""
            rewrite(path, described(servers_of(tmp_path, "alpha", "beta")))
            while True:
                armed[0] = anyio.Event()  # before listing: a notice meanwhile is not lost
                listed = (await first.list_tools()).tools
                search = next(t for t in listed if t.name == "search_tools")
                if "The beta desk" in (search.description or ""):
                    break
                await armed[0].wait()
            async with streamable_client(front.mcp, mode="legacy") as second:
                after = second.instructions or ""
            async with streamable_client(front.mcp) as modern:  # server/discover
                discovered = modern.instructions or ""
            kept = first.instructions
    assert "The alpha desk" in before
    assert "beta" not in before
    assert "- beta" in after and "The beta desk" in after
    assert "The beta desk" in discovered
    assert kept == before  # a session keeps what it was told
