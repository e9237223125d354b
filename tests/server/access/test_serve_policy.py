"""`router.policy` end to end: denied tools are never listed, searched or called; confirmed
tools ask the user through the host first; annotations pass through.

The upstream is `tests/upstreams/guarded.py`, which records each call that ran, so that a
refused call is proved never to have reached it. The host is the SDK `Client`, on both
revisions a host may speak: 2025-11-25 (the router asks with `elicitation/create`) and
2026-07-28 (it answers with an `InputRequiredResult` the client answers and retries with).
The router is a child process over stdio, BM25 only.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.shared.exceptions import MCPError

from tests.support.serving import User, router_parameters, write_config
from tests.upstream.test_upstream_pool import first_text, script

pytestmark = pytest.mark.processes

ERAS = {"legacy": "2025-11-25", "auto": "2026-07-28"}


@asynccontextmanager
async def routed(
    tmp_path: Path,
    user: User | None,
    *,
    mode: str = "legacy",
    entry: dict[str, Any] | None = None,
    servers: dict[str, dict[str, Any]] | None = None,
    **router: Any,
) -> AsyncIterator[Client]:
    servers = servers or {"guarded": script("guarded", **(entry or {}))}
    options: dict[str, Any] = {"mode": mode}
    if user is not None:
        options["elicitation_callback"] = user.elicitation
    parameters = router_parameters(write_config(tmp_path, servers, **router))
    with anyio.fail_after(60):
        async with Client(parameters, **options) as client:
            assert client.protocol_version == ERAS[mode]
            yield client


async def ran(client: Client) -> list[str]:
    text = first_text(await client.call_tool("guarded__ran", {}))
    return text.splitlines()


async def searched(client: Client, query: str) -> list[str]:
    result = await client.call_tool("search_tools", {"query": query, "k": 10})
    assert result.structured_content is not None
    return [tool["name"] for tool in result.structured_content["tools"]]


# -- deny -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_denied_tool_is_never_listed_searched_or_called(tmp_path: Path, mode: str) -> None:
    policy = {"deny": ["guarded/delete_*"]}
    async with routed(tmp_path, None, mode=mode, policy=policy, pin=["guarded/*"]) as client:
        listed = [tool.name for tool in (await client.list_tools()).tools]
        found = await searched(client, "delete a note")
        refusals = []
        for call in (
            client.call_tool("guarded__delete_note", {"name": "a"}),
            client.call_tool("call_tool", {"name": "guarded__delete_note", "arguments": {}}),
        ):
            with pytest.raises(MCPError) as refused:
                await call
            refusals.append(refused.value)
        ran_calls = await ran(client)

    assert "guarded__delete_note" not in listed and "guarded__read_note" in listed
    assert "guarded__delete_note" not in found and "guarded__read_note" in found
    for refusal in refusals:
        assert refusal.code == types.INVALID_PARAMS
        assert "denied by router.policy.deny 'guarded/delete_*'" in refusal.message
    assert ran_calls == []


async def test_an_allow_list_denies_every_tool_it_does_not_name(tmp_path: Path) -> None:
    policy = {"allow": ["guarded/read_*", "guarded/ran"]}
    async with routed(tmp_path, None, policy=policy, mode="legacy") as client:
        found = await searched(client, "read delete reset note calls ran")
        read = await client.call_tool("guarded__read_note", {"name": "a"})
        with pytest.raises(MCPError) as refused:
            await client.call_tool("guarded__reset_all", {})
        ran_calls = await ran(client)

    assert sorted(found) == ["guarded__ran", "guarded__read_note"]
    assert first_text(read) == "note a"
    assert "router.policy.allow (no pattern names it)" in refused.value.message
    assert ran_calls == ["read_note a"]


# -- confirm ----------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_confirmed_tool_runs_once_the_user_accepts(tmp_path: Path, mode: str) -> None:
    user = User("accept")
    policy = {"confirm": ["guarded/reset_*"]}
    async with routed(tmp_path, user, mode=mode, policy=policy) as client:
        direct = await client.call_tool("guarded__reset_all", {})
        routed_call = await client.call_tool("call_tool", {"name": "guarded__reset_all"})
        plain = await client.call_tool("guarded__read_note", {"name": "a"})
        ran_calls = await ran(client)

    assert first_text(direct) == first_text(routed_call) == "reset"
    assert first_text(plain) == "note a"
    assert user.asked == ["Run reset_all on guarded? (no arguments)"] * 2  # never for read_note
    assert ran_calls == ["reset_all", "reset_all", "read_note a"]


@pytest.mark.parametrize("action", ["decline", "cancel"])
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_confirmed_tool_does_not_run_when_the_user_says_no(
    tmp_path: Path, mode: str, action: str
) -> None:
    user = User(action)
    policy = {"confirm": ["guarded/delete_note"]}
    async with routed(tmp_path, user, mode=mode, policy=policy) as client:
        result = await client.call_tool("guarded__delete_note", {"name": "plans"})
        ran_calls = await ran(client)

    assert result.is_error
    assert first_text(result) == (
        "mcp-router: guarded__delete_note was not run: it needs the user's confirmation "
        f"(router.policy.confirm 'guarded/delete_note') and the user answered {action}."
    )
    assert user.asked == ['Run delete_note on guarded?\n- name: "plans"']
    assert ran_calls == []


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_a_host_that_cannot_ask_gets_a_refusal_never_a_silent_run(
    tmp_path: Path, mode: str
) -> None:
    policy = {"confirm": ["guarded/reset_all"]}
    async with routed(tmp_path, None, mode=mode, policy=policy) as client:
        result = await client.call_tool("guarded__reset_all", {})
        ran_calls = await ran(client)

    assert result.is_error
    assert "(router.policy.confirm 'guarded/reset_all')" in first_text(result)
    assert "this client cannot ask the user" in first_text(result)
    assert result.meta is not None and result.meta["mcp-router/policy"]["tool"] == (
        "guarded__reset_all"
    )
    assert ran_calls == []


async def test_confirm_destructive_asks_for_tools_annotated_destructive_only(
    tmp_path: Path,
) -> None:
    user = User("accept")
    async with routed(tmp_path, user, entry={"confirm_destructive": True}) as client:
        deleted = await client.call_tool("guarded__delete_note", {"name": "a"})
        read = await client.call_tool("guarded__read_note", {"name": "a"})
        reset = await client.call_tool("guarded__reset_all", {})  # not annotated: not asked

    assert [first_text(r) for r in (deleted, read, reset)] == ["deleted a", "note a", "reset"]
    assert user.asked == ['Run delete_note on guarded?\n- name: "a"']


async def test_a_stateless_host_confirms_once_then_answers_the_upstreams_own_question(
    tmp_path: Path,
) -> None:
    """2026-07-28 on both sides: the router's question and then the upstream's come back as
    results; the confirmation rides the router's sealed state, so it is asked once."""
    user = User("accept")
    sampled: list[str] = []

    async def sampling(
        context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        content = params.messages[0].content
        assert isinstance(content, types.TextContent)
        sampled.append(content.text)
        return types.CreateMessageResult(
            role="assistant", content=types.TextContent(text="fine"), model="host-model"
        )

    servers = {"asking": script("asking", protocol="2026-07-28")}
    parameters = router_parameters(
        write_config(tmp_path, servers, policy={"confirm": ["asking/ask_model"]})
    )
    with anyio.fail_after(60):
        async with Client(
            parameters,
            mode="auto",
            elicitation_callback=user.elicitation,
            sampling_callback=sampling,
        ) as client:
            result = await client.call_tool("asking__ask_model", {"prompt": "hi"})

    assert first_text(result) == "host-model: fine"
    assert user.asked == ['Run ask_model on asking?\n- prompt: "hi"']
    assert sampled == ["hi"]


# -- annotations ------------------------------------------------------------------------------


async def test_annotations_pass_through_in_listings_and_search_results(tmp_path: Path) -> None:
    async with routed(tmp_path, None, pin=["guarded/*"]) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        result = await client.call_tool("search_tools", {"query": "delete a note"})

    annotations = listed["guarded__delete_note"].annotations
    assert annotations is not None and annotations.destructive_hint is True
    read_only = listed["guarded__read_note"].annotations
    assert read_only is not None and read_only.read_only_hint is True
    assert result.structured_content is not None
    found = {t["name"]: t for t in result.structured_content["tools"]}
    assert found["guarded__delete_note"]["annotations"]["destructiveHint"] is True
