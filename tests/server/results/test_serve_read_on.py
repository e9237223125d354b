"""Reading on in a cut result through a real router and a real upstream: the marker's
`call_tool` call, sent as it is, returns the next part until the end, and the parts put
together are the upstream's text; another session or principal, and an expired handle, get
a clear `-32602`. The upstream is tests/upstreams/large.py; the router is `mcp-router
serve` over stdio, and the in-process HTTP front (with identities for the principals)."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from router.accounting.tokens import TokenCounter
from router.server.http.auth.security import SecurityPolicy
from router.server.results.kept import PART_META_KEY
from router.server.results.limits import META_KEY
from tests.support.http_serving import (
    SCRIPTS,
    Front,
    config,
    http_front,
    streamable_client,
    until_indexed,
)
from tests.support.identity_provider import running_provider
from tests.support.serving import raw_router, write_config
from tests.upstreams.large import words

pytestmark = pytest.mark.processes

SERVERS: dict[str, dict[str, Any]] = {
    "small": {
        "command": sys.executable,
        "args": [str(SCRIPTS / "large.py")],
        "result_tokens": 1_000,
    }
}
CALL = re.compile(r'call_tool (\{"name": "read_result".*?\}\})')
COUNTER = TokenCounter()
AUDIENCE = "https://router.test/mcp"


def call_of(text: str) -> dict[str, Any] | None:
    found = CALL.search(text)
    return json.loads(found.group(1)) if found else None


def parts(result: types.CallToolResult) -> tuple[str, str]:
    """A result's text (its marker left out) and its marker."""
    texts = [b.text for b in result.content if isinstance(b, types.TextContent)]
    return "".join(texts[:-1]), texts[-1]


async def test_a_cut_result_is_read_on_to_the_end_over_stdio(tmp_path: Path) -> None:
    size = 30_000
    async with raw_router(write_config(tmp_path, SERVERS)) as router:
        with anyio.fail_after(60):
            await router.initialize()
            first = await router.call("small__text", {"size": size})
            text = first["content"][0]["text"]
            call = call_of(first["content"][-1]["text"])
            assert call is not None
            assert first["_meta"][META_KEY]["offset"] == len(text)
            reads = 0
            while call is not None:
                # the marker's call as it is, and every second time read_result by its name
                if reads % 2:
                    answer = await router.call("read_result", call["arguments"])
                else:
                    answer = await router.call("call_tool", call)
                assert sum(COUNTER.count_text(b["text"]) for b in answer["content"]) <= 1_000
                assert answer["_meta"][PART_META_KEY]["offset"] == len(text)
                text += "".join(b["text"] for b in answer["content"][:-1])
                call = call_of(answer["content"][-1]["text"])
                reads += 1
            listed = await router.result("tools/list")

    assert text == words(size)
    assert reads >= 5
    assert "[mcp-router: the end of a cut result" in answer["content"][-1]["text"]
    # read_result is reached through call_tool: the listing is what it always was
    assert [t["name"] for t in listed["tools"]] == ["search_tools", "call_tool"]


@pytest.fixture(scope="module")
async def front(tmp_path_factory: pytest.TempPathFactory) -> AsyncIterator[Front]:
    cache = str(tmp_path_factory.mktemp("cache"))  # nothing cached: the upstream starts
    async with http_front(config(SERVERS, cache_dir=cache)) as running:
        with anyio.fail_after(30):
            await until_indexed(running.state)
        yield running


async def read_on(client: Any, first: types.CallToolResult) -> str:
    text, marker = parts(first)
    call = call_of(marker)
    while call is not None:
        part = await client.call_tool("call_tool", call)
        more, marker = parts(part)
        text += more
        call = call_of(marker)
    return text


async def test_a_session_reads_its_cut_result_on_and_another_session_cannot(
    front: Front,
) -> None:
    with anyio.fail_after(60):
        async with streamable_client(front.mcp, mode="legacy") as owner:
            first = await owner.call_tool("small__text", {"size": 20_000})
            _, marker = parts(first)
            call = call_of(marker)
            assert call is not None
            async with streamable_client(front.mcp, mode="legacy") as other:
                with pytest.raises(MCPError) as refused:
                    await other.call_tool("call_tool", call)
            async with streamable_client(front.mcp) as sessionless:  # 2026-07-28
                with pytest.raises(MCPError) as refused_too:
                    await sessionless.call_tool("call_tool", call)
            text = await read_on(owner, first)

    assert text == words(20_000)
    for error in (refused.value, refused_too.value):
        assert error.code == types.INVALID_PARAMS
        assert error.data == {"handle": call["arguments"]["handle"], "reason": "unknown"}
        assert "a handle reads only in the session and for the caller that got it" in str(error)


async def test_an_expired_handle_fails_saying_so(front: Front) -> None:
    kept = front.state.kept
    with anyio.fail_after(60):
        async with streamable_client(front.mcp, mode="legacy") as client:
            first = await client.call_tool("small__text", {"size": 20_000})
            call = call_of(parts(first)[1])
            assert call is not None
            clock = kept.clock
            kept.clock = lambda: clock() + kept.seconds + 1
            try:
                with pytest.raises(MCPError) as expired:
                    await client.call_tool("call_tool", call)
            finally:
                kept.clock = clock

    assert expired.value.code == types.INVALID_PARAMS
    assert expired.value.data == {"handle": call["arguments"]["handle"], "reason": "expired"}
    assert "expired: a cut result is kept 15 min after its call; call the tool again" in str(
        expired.value
    )


async def test_another_principal_cannot_read_a_handle_its_owner_reads_from_any_request(
    tmp_path: Path,
) -> None:
    async with running_provider() as provider:
        cfg = config(
            SERVERS,
            cache_dir=str(tmp_path),
            http={"oauth": provider.oauth(AUDIENCE)},
        )
        alice = {"Authorization": f"Bearer {provider.token('alice', AUDIENCE)}"}
        bob = {"Authorization": f"Bearer {provider.token('bob', AUDIENCE)}"}
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as running:
            with anyio.fail_after(60):
                await until_indexed(running.state)
                async with streamable_client(running.mcp, alice) as client:  # 2026-07-28
                    first = await client.call_tool("small__text", {"size": 20_000})
                call = call_of(parts(first)[1])
                assert call is not None
                async with streamable_client(running.mcp, bob) as client:
                    with pytest.raises(MCPError) as refused:
                        await client.call_tool("call_tool", call)
                async with streamable_client(running.mcp, alice) as client:
                    text = await read_on(client, first)

    assert text == words(20_000)
    assert refused.value.code == types.INVALID_PARAMS
    assert refused.value.data == {"handle": call["arguments"]["handle"], "reason": "unknown"}


async def test_one_principal_keeping_many_big_results_leaves_anothers_handle_readable(
    tmp_path: Path,
) -> None:
    """Mallory fills the kept results (1 MiB here) with cut results of 100 KB each; bob's
    one handle, made first, still reads: mallory loses its own oldest instead."""
    async with running_provider() as provider:
        cfg = config(
            SERVERS,
            cache_dir=str(tmp_path),
            limits={"keep_mib": 1},
            http={"oauth": provider.oauth(AUDIENCE)},
        )
        bob = {"Authorization": f"Bearer {provider.token('bob', AUDIENCE)}"}
        mallory = {"Authorization": f"Bearer {provider.token('mallory', AUDIENCE)}"}
        policy = SecurityPolicy.for_bind(cfg.router.http, "127.0.0.1", None)
        async with http_front(cfg, policy) as running:
            with anyio.fail_after(120):
                await until_indexed(running.state)
                async with streamable_client(running.mcp, bob) as client:
                    bobs = await client.call_tool("small__text", {"size": 20_000})
                calls = []
                async with streamable_client(running.mcp, mallory) as client:
                    for _ in range(12):
                        first = await client.call_tool("small__text", {"size": 100_000})
                        calls.append(call_of(parts(first)[1]))
                    with pytest.raises(MCPError) as dropped:
                        await client.call_tool("call_tool", calls[0])
                    newest = await client.call_tool("call_tool", calls[-1])
                async with streamable_client(running.mcp, bob) as client:
                    text = await read_on(client, bobs)

    assert text == words(20_000)
    assert not newest.is_error
    assert dropped.value.code == types.INVALID_PARAMS
    assert dropped.value.data is not None and dropped.value.data["reason"] == "dropped"
    assert "this caller's newer ones" in str(dropped.value)
