"""A tool call is the list of its stages (`router.server.calls.pipeline`), each tested here
through a real call: an in-process HTTP front, the SDK client over streamable HTTP, and real
upstream processes (`tests/upstreams/shop.py`, `guarded.py`).

Every test watches the stages a call passed, in order: each stage's own test shows what it
does and that a stage which answers the call stops it there."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.shared.exceptions import MCPError

from router.server.calls import pipeline
from router.server.calls.call import ToolCall
from tests.support.http_serving import Front, config, http_front, streamable_client
from tests.support.serving import User
from tests.upstream.test_upstream_pool import first_text, script

pytestmark = pytest.mark.processes

ARCHITECTURE = Path(__file__).resolve().parents[3] / "docs" / "architecture.md"
EVERY_STAGE = ["resolve", "validate", "shape", "authorize", "meter", "forward", "limit", "learn"]
SERVERS = {
    "shop": script("shop", result_tokens=300),
    "guarded": script("guarded"),
    "relay": script("relay", timeouts={"call": 1}),
}


@pytest.fixture
def passed(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The names of the stages each call passes, in order (every stage still runs)."""
    seen: list[str] = []

    def watched(stage: pipeline.Stage) -> pipeline.Stage:
        async def run(call: ToolCall) -> None:
            seen.append(stage.__name__)
            await stage(call)

        return run

    monkeypatch.setattr(pipeline, "STAGES", tuple(watched(s) for s in pipeline.STAGES))
    yield seen


@asynccontextmanager
async def routed(user: User | None = None, **router: Any) -> AsyncIterator[tuple[Front, Client]]:
    options: dict[str, Any] = {"mode": "legacy"}
    if user is not None:
        options["elicitation_callback"] = user.elicitation
    cfg = config(SERVERS, policy={"confirm": ["guarded/delete_note"]}, **router)
    with anyio.fail_after(60):
        async with http_front(cfg) as front, streamable_client(front.mcp, **options) as client:
            yield front, client


@pytest.fixture(scope="module")
async def shared() -> AsyncIterator[Front]:
    """One front for the tests that leave its upstreams as they found them: none of them calls
    a guarded tool, whose record of what ran the others read (each of those has its own)."""
    async with http_front(config(SERVERS, policy={"confirm": ["guarded/delete_note"]})) as front:
        yield front


@asynccontextmanager
async def client_of(front: Front) -> AsyncIterator[Client]:
    """A host of its own on the shared front (a fresh session)."""
    with anyio.fail_after(60):
        async with streamable_client(front.mcp, mode="legacy") as client:
            yield client


async def ran(client: Client) -> list[str]:
    return first_text(await client.call_tool("guarded__ran", {})).splitlines()


def test_the_stages_are_the_ones_docs_architecture_lists_in_its_order() -> None:
    section = ARCHITECTURE.read_text(encoding="utf-8").split("\n## A tool call's stages", 1)[1]
    documented = re.findall(r"^\d+\. \*\*(\w+)\*\*", section.split("\n## ", 1)[0], re.M)
    assert [stage.__name__ for stage in pipeline.STAGES] == documented == EVERY_STAGE


async def test_a_call_passes_every_stage_in_order(passed: list[str], shared: Front) -> None:
    async with client_of(shared) as client:
        result = await client.call_tool("shop__get_customer", {"customer_id": "c-001"})

    assert not result.is_error
    assert result.structured_content is not None
    assert result.structured_content["id"] == "c-001"
    assert passed == EVERY_STAGE


async def test_resolve_refuses_an_unknown_name_before_anything_else(
    passed: list[str], shared: Front
) -> None:
    async with client_of(shared) as client:
        with pytest.raises(MCPError) as refused:
            await client.call_tool("shop__get_custmer", {"customer_id": "c-001"})

    assert refused.value.error.code == types.INVALID_PARAMS
    assert "shop__get_customer" in refused.value.error.message  # the close match suggested
    assert passed == ["resolve"]


async def test_validate_refuses_bad_arguments_before_the_user_is_asked(
    passed: list[str],
) -> None:
    user = User()
    async with routed(user) as (_, client):
        with pytest.raises(MCPError) as refused:
            await client.call_tool("guarded__delete_note", {"name": 7})
        passed.clear()
        record = await ran(client)

    assert refused.value.error.code == types.INVALID_PARAMS
    assert "name" in refused.value.error.message
    assert user.asked == []  # confirmation comes after validation: nothing asked
    assert "delete_note" not in "\n".join(record)


async def test_authorize_asks_first_and_the_user_s_no_ends_the_call(passed: list[str]) -> None:
    user = User("decline")
    async with routed(user) as (_, client):
        result = await client.call_tool("guarded__delete_note", {"name": "todo"})
        stopped_at = list(passed)
        record = await ran(client)

    assert result.is_error
    assert len(user.asked) == 1 and "delete_note" in user.asked[0]
    assert stopped_at == ["resolve", "validate", "shape", "authorize"]
    assert "delete_note" not in "\n".join(record)  # the upstream never saw it


async def test_authorize_lets_a_confirmed_call_on(passed: list[str]) -> None:
    user = User("accept")
    async with routed(user) as (_, client):
        result = await client.call_tool("guarded__delete_note", {"name": "todo"})
        stages = list(passed)
        record = await ran(client)

    assert not result.is_error
    assert stages == EVERY_STAGE
    assert any("delete_note" in line for line in record)


async def test_meter_ends_a_call_over_the_callers_quota_before_forward(
    passed: list[str],
) -> None:
    quotas = {"default": {"upstreams": {"guarded": {"calls_per_minute": 1}}}}
    async with routed(quotas=quotas) as (_, client):
        first = await client.call_tool("guarded__read_note", {"name": "todo"})
        admitted = list(passed)
        passed.clear()
        second = await client.call_tool("guarded__read_note", {"name": "todo"})

    assert not first.is_error and admitted == EVERY_STAGE
    assert second.is_error and "guarded.calls_per_minute is 1" in first_text(second)
    assert passed == ["resolve", "validate", "shape", "authorize", "meter"]


async def test_forward_turns_an_upstream_that_hangs_into_an_error_result_that_ends_the_call(
    passed: list[str],
    shared: Front,
) -> None:
    async with client_of(shared) as client:
        result = await client.call_tool("relay__block", {"tag": "pipeline"})

    assert result.is_error
    assert "relay" in first_text(result)
    # nor cut, nor learnt
    assert passed == ["resolve", "validate", "shape", "authorize", "meter", "forward"]


async def test_forward_passes_a_tool_s_own_error_on_and_the_call_goes_on(
    passed: list[str],
    shared: Front,
) -> None:
    async with client_of(shared) as client:
        result = await client.call_tool("shop__fail", {"reason": "out of stock"})

    assert result.is_error
    assert "out of stock" in first_text(result)
    assert passed == EVERY_STAGE


async def test_limit_cuts_a_result_over_its_server_s_limit_and_keeps_the_rest(
    passed: list[str],
    shared: Front,
) -> None:
    async with client_of(shared) as client:
        result = await client.call_tool("shop__list_orders", {})
        meta = result.meta or {}

    assert passed == EVERY_STAGE
    assert meta["mcp-router/truncated"]["limit"] == 300
    assert "read_result" in first_text(result) or any(
        "read_result" in getattr(block, "text", "") for block in result.content
    )


async def test_learn_records_only_a_call_that_succeeded(
    passed: list[str], monkeypatch: pytest.MonkeyPatch, shared: Front
) -> None:
    async with client_of(shared) as client:
        learned: list[str] = []
        searcher = shared.state.searcher
        original = searcher.learn

        async def spy(connection: Any, record: Any) -> None:
            learned.append(record.qualified_name)
            await original(connection, record)

        monkeypatch.setattr(searcher, "learn", spy)
        await client.call_tool("shop__get_customer", {"customer_id": "c-001"})
        failed = await client.call_tool("shop__fail", {"reason": "no"})

    assert failed.is_error
    assert learned == ["shop__get_customer"]
