"""Tool transforms (a server entry's `tools` section, `router.shaping.transforms`) with real
processes: the upstream is `tests/upstreams/tracker.py`, an issue tracker whose tools have
clipped names and descriptions ("Creates tkt."), and `tests/upstreams/shifty.py` for a rug
pull. The front is the in-process HTTP front over streamable HTTP, with the real model where
ranking is the point; tool pinning runs a real `mcp-router serve` child over stdio, as a user
would, and `inspect` is the command a person types.

Every wait is bounded by `anyio.fail_after`; a reload is waited for on the router's
`notifications/tools/list_changed`."""

from __future__ import annotations

import json
import logging
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import IncomingMessage

from router.config import load_config, parse_config
from router.core.errors import ConfigError
from router.embedding.base import Embedder
from tests.pinning.test_pinning import ListChanges, configure, refused, routed, shifty
from tests.support.http_serving import config, http_front, streamable_client, until_indexed
from tests.support.serving import ROOT, User, write_config
from tests.upstream.test_upstream_pool import first_text, script

pytestmark = pytest.mark.processes

LIMIT = 60
NEW_TICKET = {
    "name": "create_ticket",
    "description": "Open a new ticket in the team's issue tracker: a bug report, a feature "
    "request or a task, with a title, a longer text and a priority (1 is the most urgent).",
    "fixed": {"proj": "OPS"},
    "defaults": {"pri": 2},
}
TRACKER_TOOLS: dict[str, Any] = {
    "tkt_new": NEW_TICKET,
    "tkt_upd": {
        "name": "set_ticket_status",
        "description": "Change a ticket's status (open, in progress, closed).",
        "annotations": {"destructiveHint": True},
    },
    "tkt_rm": {"hide": True},
    "tkt_*": {"tags": ["tickets"]},
    "usr_get": {"description_append": "Looks up a person in the tracker by their user id."},
}
QUERY = "file a bug report that the login page is broken"


def tracker(tools: dict[str, Any] | None = None, **entry: Any) -> dict[str, Any]:
    return script("tracker", tools=TRACKER_TOOLS if tools is None else tools, **entry)


async def reached(client: Client) -> list[dict[str, Any]]:
    """The calls that reached the tracker's tools."""
    text = first_text(await client.call_tool("tracker__calls", {}))
    return [json.loads(line) for line in text.splitlines()]


async def ranked(client: Client, query: str) -> list[tuple[str, float]]:
    result = await client.call_tool("search_tools", {"query": query, "k": 6})
    assert result.structured_content is not None
    return [(t["name"], t["score"]) for t in result.structured_content["tools"]]


# -- ranked and called by its new name ----------------------------------------------------


async def test_a_redescribed_renamed_tool_is_ranked_and_called_by_its_new_name(
    real_embedder: Embedder,
) -> None:
    async def ranking(tools: dict[str, Any]) -> list[tuple[str, float]]:
        async with (
            http_front(config({"tracker": tracker(tools)}), embedder=real_embedder) as front,
            streamable_client(front.mcp) as client,
        ):
            with anyio.fail_after(LIMIT):
                await until_indexed(front.state)
                return await ranked(client, QUERY)

    as_listed = await ranking({})
    async with (
        http_front(config({"tracker": tracker()}), embedder=real_embedder) as front,
        streamable_client(front.mcp) as client,
    ):
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)
            shaped = await ranked(client, QUERY)
            made = await client.call_tool("tracker__create_ticket", {"ttl": "Login is broken"})
            old_name = await refused(client, "tracker__tkt_new", {"proj": "OPS", "ttl": "x"})
            calls = await reached(client)

    # Under its upstream text the tool barely leads tools that share its clipped words;
    # redescribed, it leads by far.
    (top, top_score), (_, second_score) = shaped[0], shaped[1]
    assert top == "tracker__create_ticket"
    listed_margin = as_listed[0][1] - as_listed[1][1]
    assert top_score - second_score > max(0.3, 3 * listed_margin)
    assert "tracker__tkt_new" not in [name for name, _ in shaped]
    # ... and called by that name, the upstream's own tool runs with the preset values.
    assert not made.is_error and first_text(made) == "OPS-1"
    assert calls == [
        {
            "tool": "tkt_new",
            "arguments": {"proj": "OPS", "ttl": "Login is broken", "txt": "", "pri": 2},
        }
    ]
    assert old_name.code == types.INVALID_PARAMS
    assert old_name.data == {"suggestions": ["tracker__create_ticket"]}


async def test_the_listing_shows_the_transformed_tools_and_never_a_hidden_one() -> None:
    async with (
        http_front(config({"tracker": tracker()}, mode="all")) as front,
        streamable_client(front.mcp) as client,
    ):
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)
            tools = {t.name: t for t in (await client.list_tools()).tools}
            hidden = await refused(client, "tracker__tkt_rm", {"id": "T-1"})
            calls = await reached(client)

    assert set(tools) == {
        "tracker__create_ticket",
        "tracker__tkt_ls",
        "tracker__set_ticket_status",
        "tracker__usr_get",
        "tracker__calls",
    }
    create = tools["tracker__create_ticket"]
    assert create.description == NEW_TICKET["description"]
    schema = create.input_schema
    assert "proj" not in schema["properties"]  # fixed: the model never sees it
    assert schema["properties"]["pri"]["default"] == 2  # a default, shown as one
    assert schema["required"] == ["ttl"]
    assert create.meta == {"mcp-router/tags": ["tickets"]}
    assert tools["tracker__tkt_ls"].meta == {"mcp-router/tags": ["tickets"]}
    assert tools["tracker__usr_get"].description == (
        "Gets usr.\n\nLooks up a person in the tracker by their user id."
    )
    status = tools["tracker__set_ticket_status"]
    assert status.annotations is not None and status.annotations.destructive_hint is True
    assert hidden.code == types.INVALID_PARAMS and "unknown tool" in hidden.message
    assert calls == []  # the hidden tool's call never reached the upstream


# -- fixed arguments ----------------------------------------------------------------------


async def test_a_fixed_argument_is_set_on_every_call_and_the_model_cannot_override_it() -> None:
    async with (
        http_front(config({"tracker": tracker()})) as front,
        streamable_client(front.mcp) as client,
    ):
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)
            sent = {"ttl": "Move me", "proj": "PAYROLL", "pri": 1}
            overriding = await client.call_tool("tracker__create_ticket", sent)
            wrapped = await client.call_tool(
                "call_tool",
                {"name": "tracker__create_ticket", "arguments": {"ttl": "Me too", "proj": "HR"}},
            )
            calls = await reached(client)

    assert not overriding.is_error and not wrapped.is_error
    assert [call["arguments"]["proj"] for call in calls] == ["OPS", "OPS"]
    assert calls[0]["arguments"]["pri"] == 1  # a default gives way to the caller's value
    assert calls[1]["arguments"]["pri"] == 2


async def test_an_annotation_override_makes_policy_confirm_the_tool() -> None:
    user = User("decline")
    async with (
        http_front(config({"tracker": tracker(confirm_destructive=True)})) as front,
        streamable_client(front.mcp, mode="legacy", elicitation_callback=user.elicitation) as c,
    ):
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)
            declined = await c.call_tool("tracker__set_ticket_status", {"id": "T-1", "st": "x"})
            calls = await reached(c)

    assert len(user.asked) == 1 and "set_ticket_status" in user.asked[0]
    assert declined.is_error and calls == []


async def test_a_policy_rule_on_the_upstream_name_still_holds_under_a_rename() -> None:
    cfg = config({"tracker": tracker()}, policy={"deny": ["tracker/tkt_new"]})
    async with http_front(cfg) as front, streamable_client(front.mcp) as client:
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)
            denied = await refused(client, "tracker__create_ticket", {"ttl": "x"})
            calls = await reached(client)
    assert "tracker__create_ticket" in denied.message and calls == []


# -- reloads ------------------------------------------------------------------------------


async def test_transforms_change_live_with_the_config_without_restarting_the_upstream(
    tmp_path: Path,
) -> None:
    armed = [anyio.Event()]

    async def on_message(message: IncomingMessage) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            armed[0].set()

    path = write_config(tmp_path, {"tracker": tracker()}, mode="all")
    async with (
        http_front(load_config(path), read_config=lambda: load_config(path)) as front,
        streamable_client(front.mcp, mode="legacy", message_handler=on_message) as client,
    ):
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)
            await client.call_tool("tracker__create_ticket", {"ttl": "before"})
            renamed = {**TRACKER_TOOLS, "tkt_new": {**NEW_TICKET, "name": "open_ticket"}}
            write_config(tmp_path, {"tracker": tracker(renamed)}, mode="all")
            while True:
                armed[0] = anyio.Event()  # before listing: a notice meanwhile is not lost
                names = {tool.name for tool in (await client.list_tools()).tools}
                if "tracker__open_ticket" in names:
                    break
                await armed[0].wait()
            await client.call_tool("tracker__open_ticket", {"ttl": "after"})
            calls = await reached(client)

    assert "tracker__create_ticket" not in names
    # the same upstream process answered both: its record of calls survived the reload
    assert [call["arguments"]["ttl"] for call in calls] == ["before", "after"]


# -- warnings and errors ------------------------------------------------------------------


async def test_a_transform_naming_a_missing_tool_is_a_warning_in_inspect_and_the_log(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    tools = {**TRACKER_TOOLS, "tkt_close": {"hide": True}, "wiki_*": {"tags": ["wiki"]}}
    path = write_config(tmp_path, {"tracker": tracker(tools)})
    command = [sys.executable, "-m", "router", "inspect", "--json", "--config", str(path)]
    with anyio.fail_after(LIMIT):
        done = await anyio.run_process(command, cwd=ROOT, check=False)
    report = json.loads(done.stdout)
    caplog.set_level(logging.WARNING, logger="router.server.listing.index")
    async with http_front(load_config(path)) as front:
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)

    assert done.returncode == 0
    assert report["transforms"] == [
        "tracker: `tools.tkt_close` names a tool the upstream does not list",
        "tracker: `tools.wiki_*` matches none of the upstream's tools",
    ]
    logged = [r.getMessage() for r in caplog.records if "tool transforms" in r.getMessage()]
    assert sorted(logged) == sorted(f"tool transforms: {p}" for p in report["transforms"])


@pytest.mark.parametrize(
    ("tools", "field", "says"),
    [
        ({"tkt_*": {"name": "ticket"}}, "tools", "glob, and a rename names one tool"),
        ({"tkt_new": {"description": "a", "description_append": "b"}}, "tkt_new", "not both"),
        ({"tkt_new": {"defaults": {"pri": 1}, "fixed": {"pri": 2}}}, "tkt_new", "pri is in both"),
        ({"tkt_new": {"fixd": {"proj": "OPS"}}}, "fixd", "fixd"),
        ({"tkt_new": {"annotations": {"destructive": True}}}, "destructive", "destructive"),
        ({"tkt_new": {"name": "no spaces allowed"}}, "name", "name"),
    ],
)
def test_a_bad_transform_is_a_config_error_naming_the_field(
    tools: dict[str, Any], field: str, says: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config({"mcpServers": {"tracker": tracker(tools)}})
    message = str(caught.value)
    assert "mcpServers.tracker.tools" in message and field in message and says in message


# -- tool pinning -------------------------------------------------------------------------


async def test_a_rug_pull_under_a_transform_is_still_held(tmp_path: Path) -> None:
    transform = {"lookup": {"name": "define_word", "description": "Define an English word."}}
    path = configure(tmp_path, {**shifty(), "tools": transform}, mode="all")
    await seen_once_as(path, "shifty__define_word")

    # The user redescribes the tool again: their own change, not the upstream's, holds nothing.
    other = {"lookup": {"name": "define_word", "description": "Give a word's meaning."}}
    configure(tmp_path, {**shifty(), "tools": other}, mode="all")
    async with routed(path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        called = await client.call_tool("shifty__define_word", {"word": "cat"})
    assert tools["shifty__define_word"].description == "Give a word's meaning."
    assert first_text(called) == "cat: a word"

    # The upstream turns under the transform: its own definition changed, so it is held,
    # although what the model would read (the transform's text) is the same.
    configure(tmp_path, {**shifty(turned=True), "tools": other}, mode="all")
    async with routed(path) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
        held = await refused(client, "shifty__define_word", {"word": "x"})
    assert "shifty__define_word" not in tools
    assert "changed since it was approved" in held.message
    assert "mcp-router tools approve shifty/lookup" in held.message


async def seen_once_as(path: Path, name: str) -> None:
    """Run the router until it indexed the upstream under its transformed name."""
    changes = ListChanges()
    async with routed(path, changes=changes) as client:
        assert name in {t.name for t in (await client.list_tools()).tools}


def test_the_pinned_definition_is_the_upstreams_own() -> None:
    from router.core.catalog import Catalog, ToolSpec
    from router.pinning.decide import definition, fingerprint
    from router.shaping.transforms import Transforms

    cfg = parse_config(
        {"mcpServers": {"s": {"command": "x", "tools": {"t": {"name": "u", "fixed": {"a": 1}}}}}}
    )
    spec = ToolSpec("s", "t", "Does t.", {"type": "object", "properties": {"a": {}}})
    plain = Catalog.from_specs([spec]).records[0]
    shaped = Catalog.from_specs(Transforms.from_config(cfg).apply([spec])).records[0]
    assert (shaped.name, shaped.called_as, shaped.key) == ("u", "t", ("s", "t"))
    assert fingerprint(definition(shaped)) == fingerprint(definition(plain))


# -- docs/transforms.md -------------------------------------------------------------------


async def test_the_documented_example_lists_and_calls_as_documented() -> None:
    text = (ROOT / "docs" / "transforms.md").read_text("utf-8")
    documented = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, re.DOTALL)]
    example, listed = documented[0], documented[1]
    entry = example["mcpServers"]["tracker"]
    entry.update(script("tracker"))  # the documented `tracker-mcp` is tests/upstreams/tracker.py
    async with (
        http_front(config(example["mcpServers"], mode="all")) as front,
        streamable_client(front.mcp) as client,
    ):
        with anyio.fail_after(LIMIT):
            await until_indexed(front.state)
            tools = {t.name: t for t in (await client.list_tools()).tools}
            await client.call_tool("tracker__create_ticket", {"ttl": "Login is broken"})
            calls = await reached(client)

    live = tools[listed["name"]].model_dump(by_alias=True, exclude_none=True, mode="json")
    assert live["description"] == listed["description"]
    assert live["_meta"] == listed["_meta"]
    for key in ("properties", "required", "type"):
        assert live["inputSchema"][key] == listed["inputSchema"][key]
    assert "tracker__tkt_rm" not in tools
    assert calls == [
        {
            "tool": "tkt_new",
            "arguments": {"proj": "OPS", "ttl": "Login is broken", "txt": "", "pri": 2},
        }
    ]
