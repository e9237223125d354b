"""The result limit end to end: a real upstream's oversized results cut by a real router.

The upstream is `tests/upstreams/large.py` (the mcp SDK's server) under three names: `large`
with the router's limit (the default, 25,000 tokens), `small` with its own limit of 1,000,
and `whole` with 0 (no limit). The router is `mcp-router serve` as a child over stdio (BM25
only), and in-process over streamable HTTP; both forward through the same `forward`.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client

from router.accounting.tokens import TokenCounter
from router.server.results.limits import META_KEY
from tests.support.http_serving import config, http_front, streamable_client, until_indexed
from tests.support.serving import RawRouter, raw_router, router_parameters, write_config
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

MIB = 1 << 20
SERVERS = {
    "large": script("large"),
    "small": script("large", result_tokens=1_000),
    "whole": script("large", result_tokens=0),
}
MARKER = re.compile(
    r"\[mcp-router: result truncated: (?:about )?([\d,]+) of (?:about )?([\d,]+) tokens cut "
    r"\(limit ([\d,]+)\)"
)
COUNTER = TokenCounter()


def text_tokens(result: dict[str, Any]) -> int:
    return sum(COUNTER.count_text(b["text"]) for b in result["content"] if b["type"] == "text")


def marker(result: dict[str, Any]) -> tuple[int, int, int]:
    """(cut, of, limit) from the marker that ends a cut result."""
    match = MARKER.match(result["content"][-1]["text"])
    assert match is not None, result["content"][-1]["text"][:200]
    cut, total, limit = (int(g.replace(",", "")) for g in match.groups())
    return cut, total, limit


@asynccontextmanager
async def stdio_router(tmp_path: Path, **router: Any) -> AsyncIterator[RawRouter]:
    async with raw_router(write_config(tmp_path, SERVERS, **router)) as raw:
        with anyio.fail_after(30):
            await raw.initialize()
        yield raw


@pytest.fixture(scope="module")
async def router(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[RawRouter]:
    """One router with the default limits over stdio, for the tests that only read through
    it (`large` keeps no state): each request's answer is its own line."""
    async with stdio_router(tmp_path_factory.mktemp("limits")) as raw:
        yield raw


async def test_a_5_mib_text_result_is_cut_to_the_limit_over_stdio(router: RawRouter) -> None:
    text = {"name": "large__text", "arguments": {"size": 5 * MIB}}
    with anyio.fail_after(60):
        direct = await router.result("tools/call", text)
        line = router.lines[-1]
        routed = await router.result("tools/call", {"name": "call_tool", "arguments": text})

    for result in (direct, routed):
        cut, total, limit = marker(result)
        assert limit == 25_000
        assert total > 1_000_000  # the whole 5 MiB, counted
        assert 24_900 <= text_tokens(result) <= 25_000  # kept text and marker, all told
        assert cut == total - text_tokens({"content": result["content"][:-1]})
        assert result["_meta"][META_KEY]["sent"] == text_tokens(result)
        assert result["isError"] is False
    assert len(line) < 200_000  # the answer the host read, down from 5 MiB


async def test_a_large_image_is_replaced_by_a_note_over_stdio(router: RawRouter) -> None:
    with anyio.fail_after(60):
        result = await router.call("large__image", {"size": 3_000_000})

    note, _ = result["content"]
    assert note == {
        "type": "text",
        "text": "[mcp-router: image (image/png, 3,000,000 bytes) left out: "
        "the result is over its limit of 25,000 tokens]",
    }
    assert result["_meta"][META_KEY]["blocksLeftOut"] == 1


async def test_a_servers_own_limit_wins_and_zero_passes_whole(tmp_path: Path) -> None:
    async with stdio_router(tmp_path, limits={"result_tokens": 50_000}) as router:
        with anyio.fail_after(60):
            small = await router.call("small__text", {"size": 200_000})
            whole = await router.call("whole__text", {"size": 5 * MIB})
            large = await router.call("large__text", {"size": 200_000})

    assert marker(small)[2] == 1_000
    assert text_tokens(small) <= 1_000
    assert marker(large)[2] == 50_000  # the router's own setting, not the default
    assert [len(b["text"]) for b in whole["content"]] == [5 * MIB]
    assert "_meta" not in whole or META_KEY not in whole["_meta"]


async def test_structured_content_is_kept_whole_or_dropped_and_hosts_accept_both(
    tmp_path: Path,
) -> None:
    """Through the SDK client, which checks structured content against the tool's output
    schema (`large__rows` is pinned, so it is listed with its schema)."""
    path = write_config(tmp_path, SERVERS, pin=["large/rows"])
    async with Client(router_parameters(path), mode="legacy") as client:
        with anyio.fail_after(60):
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            few = await client.call_tool("large__rows", {"count": 10})
            some = await client.call_tool("large__rows", {"count": 600})
            many = await client.call_tool("large__rows", {"count": 3_000})

    assert listed["large__rows"].output_schema is not None
    assert few.meta is None or META_KEY not in few.meta  # within the limit: as sent
    assert few.structured_content is not None and few.structured_content["count"] == 10

    # Structured content fits alone: kept whole (and valid), the text dump of it is cut.
    assert some.structured_content is not None and len(some.structured_content["rows"]) == 600
    assert not some.is_error
    assert some.meta is not None and some.meta[META_KEY]["structuredContentDropped"] is False
    structured = COUNTER.count_text(json.dumps(some.structured_content, separators=(",", ":")))
    kept = sum(COUNTER.count_text(b.text) for b in some.content if isinstance(b, types.TextContent))
    assert structured + kept == some.meta[META_KEY]["sent"] <= 25_000

    # Over the limit alone: dropped, said, and flagged so the client does not reject it.
    assert many.structured_content is None and many.is_error
    last = many.content[-1]
    assert isinstance(last, types.TextContent)
    assert "left out: the structured content" in last.text


async def test_a_large_result_is_cut_over_streamable_http() -> None:
    async with http_front(config(SERVERS)) as front:
        with anyio.fail_after(60):
            await until_indexed(front.state)
            async with streamable_client(front.mcp) as client:
                result = await client.call_tool("small__text", {"size": 100_000})

    last = result.content[-1]
    assert isinstance(last, types.TextContent)
    assert MARKER.match(last.text) is not None
    assert result.meta is not None and result.meta[META_KEY]["limit"] == 1_000
    kept = [b.text for b in result.content if isinstance(b, types.TextContent)]
    assert sum(COUNTER.count_text(t) for t in kept) <= 1_000


RESOURCE_MARKER = re.compile(
    r"\[mcp-router: resource truncated: about ([\d,]+) of about ([\d,]+) tokens cut "
    r"\(limit ([\d,]+)\)"
)


async def test_a_5_mib_resource_read_is_cut_to_the_limit_over_stdio(router: RawRouter) -> None:
    uri = f"large://text/{5 * MIB}"
    with anyio.fail_after(60):
        read = await router.result("resources/read", {"uri": uri})
        line = router.lines[-1]
        small = await router.result("resources/read", {"uri": "large://text/100"})

    text, marker = read["contents"]
    assert text["uri"] == uri and marker == {
        "uri": uri,
        "mimeType": "text/plain",
        "text": marker["text"],
    }
    found = RESOURCE_MARKER.match(marker["text"])
    assert found is not None, marker["text"]
    assert int(found.group(2).replace(",", "")) > 1_000_000  # about the whole 5 MiB
    sent = COUNTER.count_text(text["text"]) + COUNTER.count_text(marker["text"])
    assert 24_900 <= sent <= 25_000
    assert read["_meta"][META_KEY] | {"sent": sent} == read["_meta"][META_KEY]
    assert read["_meta"][META_KEY]["estimated"] is True
    assert len(line) < 200_000
    assert [len(c["text"]) for c in small["contents"]] == [100]  # within: as the upstream sent it


async def test_a_huge_prompt_is_cut_to_the_servers_own_limit_over_stdio(router: RawRouter) -> None:
    with anyio.fail_after(60):
        got = await router.result(
            "prompts/get", {"name": "small__long", "arguments": {"size": str(2 * MIB)}}
        )
        whole = await router.result(
            "prompts/get", {"name": "whole__long", "arguments": {"size": str(MIB)}}
        )

    message, marker = got["messages"]
    assert message["role"] == marker["role"] == "user"
    assert marker["content"]["text"].startswith("[mcp-router: prompt truncated: about ")
    sent = sum(COUNTER.count_text(m["content"]["text"]) for m in got["messages"])
    assert sent == got["_meta"][META_KEY]["sent"] <= 1_000
    assert [len(m["content"]["text"]) for m in whole["messages"]] == [MIB]  # limit 0: whole
