"""Names beyond the top k (`router.names_after_k`): a `search_tools` answer shows the top k
tools with their full schemas, then names the next N, one line each; a query that is only a
tool's name answers with that tool's full schema alone; and a call with wrong arguments is
answered with the tool's input schema, so a model that saw only a name still gets there.

A real router over stdio (BM25 only) in front of `tests/upstreams/lazy.py` listing twenty
tools about notes, each taking a string `text`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from router.server.listing.rendering import NEARBY
from tests.support.serving import RawRouter, raw_router, until_indexed, write_config
from tests.upstream.test_lazy_upstreams import lazy_server

pytestmark = pytest.mark.processes

LIMIT = 60
QUERY = "find notes about the meeting"
LONG = "Find notes about meetings, projects and people, " + "with every detail kept, " * 10
NOTES = [{"name": f"find_notes_{n:02}", "description": f"{LONG}variant {n}."} for n in range(20)]
SCHEMA = {"type": "object", "properties": {"text": {"type": "string"}}}


def _config(tmp_path: Path, **router: Any) -> Path:
    notes = {**lazy_server(tmp_path / "notes", NOTES), "start": "eager"}
    return write_config(tmp_path, {"notes": notes}, k=3, **router)


async def _searched(router: RawRouter, query: str) -> dict[str, Any]:
    await router.initialize()
    await until_indexed(router.search_text)
    return await router.call("search_tools", {"query": query})


async def test_an_answer_names_the_next_tools_after_the_top_k_schemas(tmp_path: Path) -> None:
    config = _config(tmp_path, names_after_k=4, name_line_chars=30)
    async with raw_router(config) as router:
        with anyio.fail_after(LIMIT):
            answer = await _searched(router, QUERY)
    shown = [tool["name"] for tool in answer["structuredContent"]["tools"]]
    nearby = answer["structuredContent"]["nearby"]
    assert len(shown) == 3
    assert all(tool["inputSchema"] == SCHEMA for tool in answer["structuredContent"]["tools"])
    assert len(nearby) == 4
    assert not {row["name"] for row in nearby} & set(shown)  # the next ones, not the same
    assert all(set(row) == {"name", "description"} for row in nearby)  # no schema
    assert all(len(row["description"]) <= 30 for row in nearby)
    text = answer["content"][0]["text"]
    lines = text.split(NEARBY, 1)[1].strip().splitlines()
    assert [line.split(" — ")[0] for line in lines] == [
        f"{rank}. {row['name']}" for rank, row in enumerate(nearby, 4)
    ]
    assert text.count("- text (string)") == 3  # parameters of the top k alone


async def test_no_names_follow_when_n_is_zero(tmp_path: Path) -> None:
    async with raw_router(_config(tmp_path, names_after_k=0)) as router:
        with anyio.fail_after(LIMIT):
            answer = await _searched(router, QUERY)
    assert len(answer["structuredContent"]["tools"]) == 3
    assert answer["structuredContent"]["nearby"] == []
    assert NEARBY not in answer["content"][0]["text"]


async def test_a_name_from_the_list_as_the_query_gives_that_tools_schema_alone(
    tmp_path: Path,
) -> None:
    async with raw_router(_config(tmp_path, names_after_k=5)) as router:
        with anyio.fail_after(LIMIT):
            first = await _searched(router, QUERY)
            named = first["structuredContent"]["nearby"][-1]["name"]
            answer = await router.call("search_tools", {"query": named})
            two = await router.call("search_tools", {"query": f"{named}, notes__find_notes_00"})
    [tool] = answer["structuredContent"]["tools"]
    assert tool["name"] == named
    assert tool["inputSchema"] == SCHEMA
    assert tool["description"].startswith(LONG.strip())  # whole, not a line's cut
    assert answer["structuredContent"]["nearby"] == []
    assert [t["name"] for t in two["structuredContent"]["tools"]] == [
        named,
        "notes__find_notes_00",
    ]


@pytest.mark.parametrize("through_call_tool", [True, False], ids=["call_tool", "direct"])
async def test_a_call_with_wrong_arguments_is_answered_with_the_tools_schema(
    tmp_path: Path, through_call_tool: bool
) -> None:
    name, arguments = "notes__find_notes_07", {"text": 5}
    params: dict[str, Any] = {"name": name, "arguments": arguments}
    if through_call_tool:
        params = {"name": "call_tool", "arguments": params}
    async with raw_router(_config(tmp_path)) as router:
        with anyio.fail_after(LIMIT):
            await _searched(router, QUERY)
            response = await router.request("tools/call", params)
    error = response["error"]
    assert error["code"] == -32602
    assert "field 'text'" in error["message"]
    assert "inputSchema" in error["message"]  # the hint says where the schema is
    assert error["data"]["inputSchema"] == SCHEMA
    assert error["data"]["problems"]
    assert not (tmp_path / "notes" / "calls").exists()  # never forwarded
