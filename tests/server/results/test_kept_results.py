"""Cut results kept for reading on (`router.server.results.kept`): the handle in the marker, the
parts `read_result` returns to the end, who may read them, and the bounds in time and
memory. End to end through a real router: tests/server/results/test_serve_read_on.py."""

from __future__ import annotations

import gc
import json
import re
import weakref
from typing import Any

import mcp_types as types
import pytest

from router.accounting.tokens import TokenCounter
from router.config import parse_config
from router.core.errors import InvalidParams
from router.server.results.kept import PART_META_KEY, KeptResults, Owner
from router.server.results.limits import META_KEY, cut_result, limit_result, readable_text
from tests.server.results.test_limits import text_result, words

COUNTER = TokenCounter()
CALL = re.compile(r'call_tool (\{"name": "read_result".*?\}\})')


class Connection:
    """Stands in for the SDK's `Connection` (held weakly by an `Owner`)."""


class Clock:
    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


def call_of(result: types.CallToolResult) -> dict[str, Any] | None:
    """The `call_tool` arguments a marker names, None when it names none."""
    last = result.content[-1]
    assert isinstance(last, types.TextContent)
    found = CALL.search(last.text)
    return json.loads(found.group(1)) if found else None


def body_of(result: types.CallToolResult) -> str:
    """The text a cut result or a part carries, its marker left out."""
    texts = [b.text for b in result.content[:-1] if isinstance(b, types.TextContent)]
    return "\n\n".join(texts)


async def read_to_the_end(
    kept: KeptResults, owner: Owner, first: types.CallToolResult, limit: int
) -> tuple[str, int]:
    """The first answer's text and every part after it, and how many parts were read."""
    text, parts = body_of(first), 0
    call = call_of(first)
    while call is not None:
        arguments = call["arguments"]
        part = await kept.read(owner, arguments["handle"], arguments["offset"])
        meta = part.meta
        assert meta is not None and meta[PART_META_KEY]["sent"] <= limit
        assert meta[PART_META_KEY]["offset"] == arguments["offset"] == len(text)
        texts = [b.text for b in part.content if isinstance(b, types.TextContent)]
        assert sum(map(COUNTER.count_text, texts)) <= limit
        text += body_of(part) if part.content[:-1] else ""
        parts += 1
        call = call_of(part)
    return text, parts


async def test_a_cut_result_is_read_on_to_its_end_part_by_part() -> None:
    kept = KeptResults(counter=COUNTER)
    owner = Owner("alice")
    keeping = kept.keeping(owner)
    body = words(60_000)
    first = await limit_result(text_result(body), 2_000, keeping)

    meta = first.meta
    assert meta is not None and meta[META_KEY]["handle"].startswith("rr-")
    assert meta[META_KEY]["offset"] == len(body_of(first))
    text, parts = await read_to_the_end(kept, owner, first, 2_000)
    assert text == body
    assert parts >= 5


async def test_several_text_blocks_read_on_as_one_text_with_blank_lines_between() -> None:
    kept = KeptResults(counter=COUNTER)
    owner = Owner(None)
    blocks = [words(3_000), "数据库结果🙂 " * 500, words(4_000)]
    result = text_result(*blocks)
    first = await limit_result(result, 600, kept.keeping(owner))

    assert readable_text(result, False) == "\n\n".join(blocks)
    kept_text = readable_text(result, False)
    read = body_of(first)
    call = call_of(first)
    while call is not None:
        arguments = call["arguments"]
        assert arguments["offset"] == len(read) or kept_text[: arguments["offset"]] == read
        part = await kept.read(owner, arguments["handle"], arguments["offset"])
        read = kept_text[: arguments["offset"]] + "".join(
            b.text for b in part.content[:-1] if isinstance(b, types.TextContent)
        )
        call = call_of(part)
    assert read == kept_text
    assert "\ufffd" not in read


async def test_the_last_part_says_it_is_the_end() -> None:
    kept = KeptResults(counter=COUNTER)
    owner = Owner(None)
    first = await limit_result(text_result(words(6_000)), 1_000, kept.keeping(owner))
    call = call_of(first)
    assert call is not None
    last = await kept.read(owner, call["arguments"]["handle"], 6_000)
    assert last.content == [
        types.TextContent(
            text="[mcp-router: the end of a cut result, characters 6,000 to 6,000 of 6,000]"
        )
    ]
    assert last.meta is not None and last.meta[PART_META_KEY]["end"] == 6_000


async def test_another_principal_or_session_reads_nothing_with_the_handle() -> None:
    kept = KeptResults(counter=COUNTER)
    session, other_session = Connection(), Connection()
    owner = Owner("alice", weakref.ref(session))
    first = await limit_result(text_result(words(20_000)), 1_000, kept.keeping(owner))
    call = call_of(first)
    assert call is not None
    handle = call["arguments"]["handle"]

    await kept.read(Owner("alice", weakref.ref(session)), handle, 0)  # its own session reads
    for reader in (
        Owner("bob", weakref.ref(session)),
        Owner("alice", weakref.ref(other_session)),
        Owner("alice"),  # a 2026-07-28 request: no session at all
        Owner(None),
    ):
        with pytest.raises(InvalidParams) as refused:
            await kept.read(reader, handle, 0)
        assert refused.value.data == {"handle": handle, "reason": "unknown"}
        assert "only in the session and for the caller that got it" in str(refused.value)
    del session
    gc.collect()
    with pytest.raises(InvalidParams):  # the session ended: its handles read nothing
        await kept.read(owner, handle, 0)


async def test_a_sessionless_handle_reads_for_its_principal_from_any_request() -> None:
    kept = KeptResults(counter=COUNTER)
    first = await limit_result(text_result(words(20_000)), 1_000, kept.keeping(Owner("alice")))
    call = call_of(first)
    assert call is not None
    session = Connection()
    await kept.read(Owner("alice", weakref.ref(session)), call["arguments"]["handle"], 10)
    with pytest.raises(InvalidParams):
        await kept.read(Owner("bob"), call["arguments"]["handle"], 10)


async def test_an_expired_handle_fails_saying_so() -> None:
    clock = Clock()
    kept = KeptResults(seconds=900, clock=clock, counter=COUNTER)
    owner = Owner(None)
    first = await limit_result(text_result(words(20_000)), 1_000, kept.keeping(owner))
    call = call_of(first)
    assert call is not None
    assert "(kept 15 min)" in first.content[-1].text  # type: ignore[union-attr]
    clock.now += 899
    await kept.read(owner, call["arguments"]["handle"], 0)
    clock.now += 2
    with pytest.raises(InvalidParams) as expired:
        await kept.read(owner, call["arguments"]["handle"], 0)
    assert expired.value.data == {"handle": call["arguments"]["handle"], "reason": "expired"}
    assert "expired: a cut result is kept 15 min after its call" in str(expired.value)
    assert kept.held_bytes == 0


async def test_kept_texts_share_a_byte_cap_and_the_oldest_go_first() -> None:
    kept = KeptResults(max_bytes=250_000, counter=COUNTER)
    owner = Owner(None)
    handles = []
    for size in (100_000, 100_001, 100_002):
        first = await limit_result(text_result(words(size)), 1_000, kept.keeping(owner))
        call = call_of(first)
        assert call is not None
        handles.append(call["arguments"]["handle"])

    assert kept.held_bytes <= 250_000
    with pytest.raises(InvalidParams) as dropped:
        await kept.read(owner, handles[0], 0)
    assert dropped.value.data == {"handle": handles[0], "reason": "dropped"}
    assert "dropped to make room" in str(dropped.value)
    await kept.read(owner, handles[2], 0)


def test_a_text_larger_than_the_cap_or_a_tiny_limit_gets_no_handle() -> None:
    kept = KeptResults(max_bytes=50_000, counter=COUNTER)
    keeping = kept.keeping(Owner(None))
    assert keeping is not None
    assert keeping.offer(60_000, 25_000) is None
    assert keeping.offer(40_000, 100) is None  # a limit under READ_ON_MIN_LIMIT
    assert keeping.offer(40_000, 25_000) is not None
    assert KeptResults(seconds=0).keeping(Owner(None)) is None


async def test_a_marker_without_a_handle_says_to_ask_for_less() -> None:
    kept = KeptResults(max_bytes=10_000, counter=COUNTER)
    limited = await limit_result(text_result(words(200_000)), 1_000, kept.keeping(Owner(None)))
    assert call_of(limited) is None
    assert limited.meta is not None and "handle" not in limited.meta[META_KEY]
    marker = limited.content[-1]
    assert isinstance(marker, types.TextContent)
    assert marker.text.endswith("ask the tool for less, e.g. a narrower query or a page]")


async def test_dropped_structured_content_without_text_is_read_as_its_json() -> None:
    kept = KeptResults(counter=COUNTER)
    owner = Owner(None)
    value = {"rows": [f"row {n}: {words(40)}" for n in range(300)]}
    result = types.CallToolResult(content=[], structured_content=value)
    first = await limit_result(result, 2_000, kept.keeping(owner))

    assert first.structured_content is None and first.is_error
    assert first.meta is not None and first.meta[META_KEY]["offset"] == 0
    text, _ = await read_to_the_end(kept, owner, first, 2_000)
    assert json.loads(text) == value
    assert readable_text(result, False) == ""  # kept whole, nothing to read on


def test_a_result_cut_without_an_offer_names_no_handle() -> None:
    limited, truncation = cut_result(text_result(words(20_000)), 1_000, COUNTER)
    assert truncation is not None and truncation.handle is None
    assert call_of(limited) is None


async def test_an_offset_past_the_end_is_refused() -> None:
    kept = KeptResults(counter=COUNTER)
    owner = Owner(None)
    first = await limit_result(text_result(words(20_000)), 1_000, kept.keeping(owner))
    call = call_of(first)
    assert call is not None
    with pytest.raises(InvalidParams, match="past the end of the kept result"):
        await kept.read(owner, call["arguments"]["handle"], 20_001)


async def keep(kept: KeptResults, owner: Owner, size: int) -> str:
    """Cut a `size`-character result for `owner`; the handle its marker names."""
    first = await limit_result(text_result(words(size)), 1_000, kept.keeping(owner))
    call = call_of(first)
    assert call is not None
    handle: str = call["arguments"]["handle"]
    return handle


async def test_a_principal_over_its_share_loses_its_own_oldest_and_no_one_elses() -> None:
    kept = KeptResults(max_bytes=400_000, counter=COUNTER, share=0.25)
    bob, mallory = Owner("bob"), Owner("mallory")
    bobs = await keep(kept, bob, 20_000)
    mallorys = [await keep(kept, mallory, 40_000) for _ in range(12)]

    assert kept.held_by("mallory")[0] <= kept.share_bytes == 100_000
    await kept.read(bob, bobs, 0)
    await kept.read(mallory, mallorys[-1], 0)
    with pytest.raises(InvalidParams) as dropped:
        await kept.read(mallory, mallorys[0], 0)
    assert dropped.value.data == {"handle": mallorys[0], "reason": "dropped"}
    assert "this caller's newer ones (each caller keeps at most 0.0954 MiB" in str(dropped.value)
    # a text larger than a share is not offered a handle at all
    keeping = kept.keeping(mallory)
    assert keeping is not None and keeping.offer(150_000, 1_000) is None


async def test_a_full_store_drops_the_fullest_principals_oldest_first() -> None:
    """Four principals each within their share fill the count: the next text pushes out
    the oldest of the one holding the most, not the oldest text of all (bob's)."""
    kept = KeptResults(counter=COUNTER, max_count=8, share=0.5)
    bob, carol, mallory = Owner("bob"), Owner("carol"), Owner("mallory")
    bobs = await keep(kept, bob, 5_000)
    carols = [await keep(kept, carol, 5_000) for _ in range(3)]
    mallorys = [await keep(kept, mallory, 5_000) for _ in range(4)]
    assert kept.held_by("mallory")[1] == 4 and kept.held_by(None) == (0, 0)
    newest = await keep(kept, carol, 5_000)  # the store is full: mallory holds the most

    await kept.read(bob, bobs, 0)
    for handle in (*carols, newest):
        await kept.read(carol, handle, 0)
    with pytest.raises(InvalidParams) as dropped:
        await kept.read(mallory, mallorys[0], 0)
    assert dropped.value.data == {"handle": mallorys[0], "reason": "dropped"}
    assert "kept results share 64 MiB and 8 results" in str(dropped.value)
    assert kept.held_by("mallory")[1] == 3


def test_identities_give_each_principal_a_quarter() -> None:
    oauth = {"issuer": "https://idp.test", "audience": "https://router.test/mcp"}
    alone = KeptResults.from_config(parse_config({"mcpServers": {}}))
    shared = KeptResults.from_config(
        parse_config({"mcpServers": {}, "router": {"http": {"oauth": oauth}}})
    )
    assert (alone.share_bytes, alone.share_count) == (64 << 20, 4_096)
    assert (shared.share_bytes, shared.share_count) == (16 << 20, 1_024)
