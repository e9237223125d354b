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
from router.server.results.limits import (
    META_KEY,
    cut_prompt,
    cut_resource,
    cut_result,
    fits_cheaply,
    limit_prompt,
    limit_resource,
    limit_result,
)

MARKER = re.compile(
    r"^\[mcp-router: result truncated: (?:about )?([\d,]+) of (?:about )?([\d,]+) tokens cut "
    r"\(limit ([\d,]+)\)(?:; left out: ([^;]+))?; "
    r"ask the tool for less, e\.g\. a narrower query or a page\]$"
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

    monkeypatch.setattr("router.server.results.limits._COUNTER.encode", refuse)
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
    # Only a prefix was tokenised: the whole count is extrapolated from it, and said to be.
    assert marker_of(limited).group(0).startswith("[mcp-router: result truncated: about ")
    assert abs(figure(total) - tokens(body)) < 0.03 * tokens(body)
    assert (figure(limit), left_out) == (1_000, None)
    assert figure(cut) == figure(total) - tokens(head)
    assert limited.meta == {
        META_KEY: {
            "limit": 1_000,
            "tokens": figure(total),
            "cut": figure(cut),
            "sent": truncation.sent,
            "estimated": True,
            "structuredContentDropped": False,
            "blocksLeftOut": 0,
        }
    }


def test_a_text_just_over_the_limit_is_counted_exactly() -> None:
    body = words(6_000)
    assert 1_000 < tokens(body) < 5_000
    limited, truncation = cut_result(text_result(body), 1_000)

    assert truncation is not None and not truncation.estimated
    assert truncation.tokens == tokens(body)
    assert "about" not in marker_of(limited).group(0)


def test_a_long_text_is_tokenised_only_as_far_as_the_limit_reaches(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """5 MB of text at a limit of 1,000 tokens: what is encoded is a prefix bounded by the
    limit (the default encodes about 6 characters per token of it), never the whole text;
    the text after the cut is not tokenised at all."""
    encoded: list[int] = []
    encode = COUNTER.encode

    def recording(text: str) -> list[int]:
        encoded.append(len(text))
        return encode(text)

    monkeypatch.setattr(COUNTER, "encode", recording)
    first, second = words(5_000_000), words(2_000_000)
    limited, truncation = cut_result(text_result(first, second), 1_000, COUNTER)

    assert truncation is not None and truncation.estimated
    assert max(encoded) <= 12 * 1_001  # a prefix doubled at most once, not 5 MB
    assert sum(encoded) < 50_000
    assert first.startswith(texts(limited)[0]) and len(texts(limited)) == 2  # the second left out
    assert truncation.sent <= 1_000


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


# -- resources and prompts ---------------------------------------------------------------------

RESOURCE_MARKER = re.compile(
    r"^\[mcp-router: resource truncated: (?:about )?([\d,]+) of (?:about )?([\d,]+) tokens cut "
    r"\(limit ([\d,]+)\)(?:; left out: [^;]+)?; read a smaller part of it, if its server "
    r"offers one\]$"
)


def test_a_resource_reads_text_is_cut_and_a_blob_kept_while_it_fits() -> None:
    small = base64.b64encode(bytes(300)).decode()
    read = types.ReadResourceResult(
        contents=[
            types.BlobResourceContents(uri="file:///a.png", blob=small, mime_type="image/png"),
            types.TextResourceContents(uri="file:///log", text=words(200_000)),
            types.TextResourceContents(uri="file:///log", text=words(1_000)),
        ]
    )
    limited, truncation = cut_resource(read, "file:///log", 2_000)

    assert truncation is not None and truncation.what == "resource"
    blob, text, marker = limited.contents
    assert blob is read.contents[0]  # whole
    assert isinstance(text, types.TextResourceContents) and text.uri == read.contents[1].uri
    assert read.contents[1].text.startswith(text.text)  # type: ignore[union-attr]
    assert isinstance(marker, types.TextResourceContents)
    assert str(marker.uri) == "file:///log" and marker.mime_type == "text/plain"
    assert RESOURCE_MARKER.match(marker.text) is not None, marker.text
    sent = tokens(text.text) + tokens(marker.text) + -(-len(small) // 4)
    assert sent == truncation.sent <= 2_000
    assert limited.meta is not None and limited.meta[META_KEY]["limit"] == 2_000


def test_a_resource_blob_over_the_limit_becomes_a_note() -> None:
    big = base64.b64encode(bytes(90_000)).decode()
    read = types.ReadResourceResult(
        contents=[types.BlobResourceContents(uri="file:///big.bin", blob=big)]
    )
    limited, truncation = cut_resource(read, "file:///big.bin", 1_000)

    assert truncation is not None and truncation.blocks_left_out == 1
    note, _marker = limited.contents
    assert isinstance(note, types.TextResourceContents) and str(note.uri) == "file:///big.bin"
    assert note.text.startswith("[mcp-router: resource file:///big.bin (unknown type, 90,000")


def test_a_resource_within_the_limit_passes_as_the_same_object() -> None:
    read = types.ReadResourceResult(contents=[types.TextResourceContents(uri="a://b", text="x")])
    assert cut_resource(read, "a://b", 100) == (read, None)


def test_a_prompts_messages_are_cut_in_order_and_the_marker_is_a_message() -> None:
    prompt = types.GetPromptResult(
        description="a long one",
        messages=[
            types.PromptMessage(role="user", content=types.TextContent(text=words(2_000))),
            types.PromptMessage(role="assistant", content=types.TextContent(text=words(90_000))),
            types.PromptMessage(role="user", content=types.TextContent(text=words(3_000))),
        ],
    )
    limited, truncation = cut_prompt(prompt, 1_500)

    assert truncation is not None and truncation.what == "prompt"
    assert limited.description == "a long one"
    first, second, marker = limited.messages
    assert first == prompt.messages[0]
    assert second.role == "assistant"
    assert isinstance(second.content, types.TextContent)
    assert words(90_000).startswith(second.content.text)
    assert marker.role == "user" and isinstance(marker.content, types.TextContent)
    assert marker.content.text.startswith("[mcp-router: prompt truncated: ")
    sent = sum(
        tokens(m.content.text) for m in limited.messages if isinstance(m.content, types.TextContent)
    )
    assert sent == truncation.sent <= 1_500


async def test_resources_and_prompts_within_the_cheap_bound_pass_without_a_thread() -> None:
    read = types.ReadResourceResult(contents=[types.TextResourceContents(uri="a://b", text="x")])
    prompt = types.GetPromptResult(
        messages=[types.PromptMessage(role="user", content=types.TextContent(text="hi"))]
    )
    assert await limit_resource(read, "a://b", 100) is read
    assert await limit_prompt(prompt, 100) is prompt
    assert await limit_prompt(prompt, 0) is prompt
