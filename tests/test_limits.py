"""The result limit (`router.limits`) on results built in the test: what passes, what is cut,
where and by how much, and the figures the marker and `_meta` give."""

from __future__ import annotations

import base64
import json
import random
import re
from typing import Any

import mcp_types as types
import pytest

from router.accounting.tokens import TokenCounter
from router.config import parse_config
from router.server.limits import META_KEY, cut_result, fits_cheaply, limit_result

MARKER = re.compile(
    r"^\[mcp-router: result truncated: ([\d,]+) of ([\d,]+) tokens cut \(limit ([\d,]+)\)"
    r"(?:; left out: ([^;]+))?; ask the tool for less, e\.g\. a narrower query or a page\]$"
)
COUNTER = TokenCounter()
_WORDS = [f"w{n:x}" for n in range(4096)] + ["the", "of", "and", "result", "\n"]


def words(size: int) -> str:
    """`size` bytes of ASCII words, the same for the same size."""
    chooser = random.Random(size)
    return " ".join(chooser.choices(_WORDS, k=size // 4 + 1))[:size]


def tokens(text: str) -> int:
    return COUNTER.count_text(text)


def sent_tokens(result: types.CallToolResult) -> int:
    """What the result costs as the limit counts it (see the module docstring)."""
    total = 0
    for block in result.content:
        if isinstance(block, types.TextContent):
            total += tokens(block.text)
        elif isinstance(block, types.EmbeddedResource):
            resource = block.resource
            if isinstance(resource, types.TextResourceContents):
                total += tokens(resource.text)
            else:
                total += -(-len(resource.blob) // 4)
        elif isinstance(block, types.ImageContent | types.AudioContent):
            total += -(-len(block.data) // 4)
    if result.structured_content is not None:
        total += tokens(json.dumps(result.structured_content, separators=(",", ":")))
    return total


def marker_of(result: types.CallToolResult) -> re.Match[str]:
    last = result.content[-1]
    assert isinstance(last, types.TextContent)
    match = MARKER.match(last.text)
    assert match is not None, last.text
    return match


def figure(text: str) -> int:
    return int(text.replace(",", ""))


def texts(result: types.CallToolResult) -> list[str]:
    return [b.text for b in result.content if isinstance(b, types.TextContent)]


def text_result(*bodies: str, **fields: Any) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=b) for b in bodies], **fields)


def image(size: int, mime: str = "image/png") -> types.ImageContent:
    return types.ImageContent(data=base64.b64encode(bytes(size)).decode(), mime_type=mime)


# -- what passes unchanged ---------------------------------------------------------------------


def test_a_result_within_the_limit_passes_as_the_same_object() -> None:
    result = text_result("a short answer", structured_content={"answer": "a short answer"})
    assert cut_result(result, 25_000) == (result, None)
    assert cut_result(result, 25_000)[0] is result


def test_a_result_over_the_byte_bound_but_within_the_limit_passes_unchanged() -> None:
    body = words(8_000)  # 8,000 bytes: the cheap bound cannot tell, the count can
    assert tokens(body) <= 5_000
    result = text_result(body)
    assert not fits_cheaply(result, 5_000)
    assert cut_result(result, 5_000)[0] is result


def test_limit_zero_turns_the_limit_off() -> None:
    result = types.CallToolResult(content=[types.TextContent(text=words(200_000)), image(400_000)])
    assert cut_result(result, 0) == (result, None)


async def test_a_result_the_cheap_bound_proves_within_is_never_tokenised(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def refuse(text: str) -> list[int]:
        raise AssertionError("tokenised")

    monkeypatch.setattr("router.server.limits._COUNTER.encode", refuse)
    result = text_result("fits", structured_content={"rows": ["a"] * 50})
    assert await limit_result(result, 25_000) is result


def test_the_cheap_bound_sizes_structured_content_to_the_byte() -> None:
    value = {"name": "zoë", "rows": [1, 2.5, True, None, {"k": 'line\n"quoted"'}], "": []}
    size = len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode())
    result = types.CallToolResult(content=[], structured_content=value)
    assert fits_cheaply(result, size)
    assert not fits_cheaply(result, size - 1)


# -- text --------------------------------------------------------------------------------------


def test_a_long_text_is_cut_at_a_token_boundary_to_within_the_limit() -> None:
    body = words(400_000)
    limited, truncation = cut_result(text_result(body), 1_000)

    assert truncation is not None
    head, _marker = texts(limited)
    assert body.startswith(head)
    assert sent_tokens(limited) <= 1_000
    assert sent_tokens(limited) >= 1_000 - 3  # the kept text fills the limit, less a token or two
    assert truncation.sent == sent_tokens(limited)
    cut, total, limit, left_out = marker_of(limited).groups()
    assert (figure(total), figure(limit), left_out) == (tokens(body), 1_000, None)
    assert figure(cut) == tokens(body) - tokens(head)
    assert limited.meta == {
        META_KEY: {
            "limit": 1_000,
            "tokens": tokens(body),
            "cut": figure(cut),
            "sent": truncation.sent,
            "structuredContentDropped": False,
            "blocksLeftOut": 0,
        }
    }


def test_text_of_multibyte_characters_is_cut_between_characters() -> None:
    body = "数据库结果🙂 " * 20_000
    limited, _ = cut_result(text_result(body), 500)
    head = texts(limited)[0]
    assert "\ufffd" not in head
    assert body.startswith(head)
    assert 490 <= sent_tokens(limited) <= 500


def test_text_blocks_share_the_limit_in_order() -> None:
    first, second, third = words(1_300), words(1_301), words(1_302)
    assert all(500 < tokens(t) < 900 for t in (first, second, third))
    limited, _ = cut_result(text_result(first, second, third), 1_000)

    kept = texts(limited)
    assert len(kept) == 3  # the first whole, the second cut, the third left out, the marker
    assert kept[0] == first
    assert second.startswith(kept[1]) and kept[1] != second
    assert sent_tokens(limited) <= 1_000


def test_an_embedded_text_resource_is_cut_like_text() -> None:
    body = words(50_000)
    resource = types.TextResourceContents(uri="file:///log.txt", text=body, mime_type="text/plain")
    result = types.CallToolResult(content=[types.EmbeddedResource(resource=resource)])
    limited, _ = cut_result(result, 800)

    block = limited.content[0]
    assert isinstance(block, types.EmbeddedResource)
    assert isinstance(block.resource, types.TextResourceContents)
    assert block.resource.uri == "file:///log.txt"
    assert body.startswith(block.resource.text)
    assert sent_tokens(limited) <= 800


def test_a_limit_smaller_than_the_marker_sends_the_marker_alone() -> None:
    limited, truncation = cut_result(text_result(words(10_000)), 5)
    assert truncation is not None
    assert len(limited.content) == 1
    assert figure(marker_of(limited).group(1)) == truncation.tokens


def test_the_upstreams_meta_is_kept_beside_the_figures() -> None:
    result = text_result(words(20_000), _meta={"upstream/key": 1})
    limited, _ = cut_result(result, 100)
    assert limited.meta is not None
    assert limited.meta["upstream/key"] == 1
    assert limited.meta[META_KEY]["limit"] == 100


# -- binary ------------------------------------------------------------------------------------


def test_an_oversized_image_is_replaced_by_a_note_and_a_small_one_kept() -> None:
    small, big = image(3_000), image(3_000_000, "image/jpeg")
    result = types.CallToolResult(content=[types.TextContent(text="caption"), big, small])
    limited, truncation = cut_result(result, 25_000)

    assert truncation is not None and truncation.blocks_left_out == 1
    caption, note, kept, _marker = limited.content
    assert caption == result.content[0] and kept is small
    assert isinstance(note, types.TextContent)
    assert note.text == (
        "[mcp-router: image (image/jpeg, 3,000,000 bytes) left out: "
        "the result is over its limit of 25,000 tokens]"
    )
    assert marker_of(limited).group(4) == "1 binary or link block"
    assert sent_tokens(limited) <= 25_000


def test_audio_and_embedded_blobs_are_replaced_by_notes() -> None:
    audio = types.AudioContent(data=base64.b64encode(bytes(90_000)).decode(), mime_type="audio/wav")
    blob = types.EmbeddedResource(
        resource=types.BlobResourceContents(
            uri="file:///dump.bin",
            blob=base64.b64encode(bytes(90_001)).decode(),
            mime_type="application/octet-stream",
        )
    )
    limited, truncation = cut_result(types.CallToolResult(content=[audio, blob]), 10_000)

    assert truncation is not None and truncation.blocks_left_out == 2
    assert texts(limited)[:2] == [
        "[mcp-router: audio (audio/wav, 90,000 bytes) left out: "
        "the result is over its limit of 10,000 tokens]",
        "[mcp-router: resource file:///dump.bin (application/octet-stream, 90,001 bytes) "
        "left out: the result is over its limit of 10,000 tokens]",
    ]


# -- structured content ------------------------------------------------------------------------


def rows(count: int) -> dict[str, Any]:
    return {"rows": [f"row {n}: {words(40)}" for n in range(count)]}


def dumped(value: dict[str, Any]) -> types.CallToolResult:
    """What an SDK server sends for a tool with an output schema: the value, and its JSON."""
    return text_result(json.dumps(value, indent=2), structured_content=value)


def test_structured_content_that_fits_is_kept_whole_and_the_text_cut() -> None:
    value = rows(100)
    result = dumped(value)
    structured = tokens(json.dumps(value, separators=(",", ":")))
    assert structured < 4_000 < structured + tokens(texts(result)[0])
    limited, truncation = cut_result(result, 4_000)

    assert truncation is not None and not truncation.structured_dropped
    assert limited.structured_content == value
    assert not limited.is_error  # the host's output-schema check still passes
    assert sent_tokens(limited) <= 4_000
    assert marker_of(limited).group(4) is None


def test_structured_content_over_the_limit_alone_is_dropped_and_said() -> None:
    value = rows(2_000)
    limited, truncation = cut_result(dumped(value), 10_000)

    assert truncation is not None and truncation.structured_dropped
    assert limited.structured_content is None
    # Not what the tool's output schema promises any more: flagged, so that a host does not
    # reject the whole answer for missing structured content.
    assert limited.is_error
    assert marker_of(limited).group(4) == "the structured content"
    assert limited.meta is not None and limited.meta[META_KEY]["structuredContentDropped"]
    assert sent_tokens(limited) <= 10_000
    dumped_text = json.dumps(value, indent=2)
    assert dumped_text.startswith(texts(limited)[0])


def test_an_error_result_is_cut_too() -> None:
    limited, truncation = cut_result(text_result(words(100_000), is_error=True), 1_000)
    assert truncation is not None and limited.is_error
    assert sent_tokens(limited) <= 1_000


# -- the setting -------------------------------------------------------------------------------


def test_a_server_entry_overrides_the_routers_limit() -> None:
    config = parse_config(
        {
            "mcpServers": {
                "own": {"command": "x", "result_tokens": 1_000},
                "off": {"command": "x", "result_tokens": 0},
                "plain": {"command": "x"},
            },
            "router": {"limits": {"result_tokens": 5_000}},
        }
    )
    limits = {name: config.result_tokens_for(name) for name in ("own", "off", "plain")}
    assert limits == {"own": 1_000, "off": 0, "plain": 5_000}
    default = parse_config({"mcpServers": {"plain": {"command": "x"}}})
    assert default.result_tokens_for("plain") == 25_000
