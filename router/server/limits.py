"""Result limits: a tool result over its token budget is cut before it reaches the host.

The budget is `router.limits.result_tokens` (a server entry's own `result_tokens` wins; 0
turns it off), counted with cl100k (`router.accounting.tokens`). A result costs the sum of
its parts, since hosts show the model both the content and the structured content:

- text (text blocks and embedded text resources): its tokens;
- binary data (images, audio, embedded blobs) is not tokenised: one token per
  `BINARY_CHARS_PER_TOKEN` characters of its base64 text;
- a resource link: the tokens of its JSON;
- `structuredContent`: the tokens of its compact JSON.

A result within its budget passes unchanged (the very object the upstream sent, so a host's
output-schema check sees what the tool declared). A result over it is cut, whole parts
first, then text:

1. `structuredContent` and each binary block or link are kept whole or not at all: a cut
   JSON value would not match the tool's output schema, and half an image is no image. They
   are kept, structured content first, then in content order, while they fit. A binary block
   that does not fit is replaced where it stood by a note, a link is left out, and structured
   content that does not fit is dropped; a result that loses its structured content is
   marked `isError`, which hosts read as "no output-schema check" (the SDK client would
   otherwise reject it for missing structured content).
2. Text blocks share what is left, in order: the first that does not fit is cut at a token
   boundary and the ones after it are left out.
3. A marker block (`MARKER_PREFIX`) ends the content, and `_meta["mcp-router/truncated"]`
   holds the figures. With marker and notes, the result sent is within the budget (a budget
   smaller than the marker itself gets the marker alone).

Counting 5 MB of text takes a noticeable fraction of a second: `limit_result` runs it in a
worker thread, and skips it whenever a cheap bound (tokens never outnumber UTF-8 bytes)
shows that the result fits.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as types

from router.accounting.tokens import TokenCounter

__all__ = [
    "BINARY_CHARS_PER_TOKEN",
    "MARKER_PREFIX",
    "META_KEY",
    "Truncation",
    "cut_result",
    "fits_cheaply",
    "limit_result",
]

logger = logging.getLogger(__name__)

MARKER_PREFIX = "[mcp-router: result truncated:"
"""How the marker block that ends a cut result begins."""
META_KEY = "mcp-router/truncated"
"""The key of the cut's figures in the result's `_meta`."""
BINARY_CHARS_PER_TOKEN = 4
"""What base64 data is taken to cost: one token per 4 characters (3 bytes)."""
_CHEAP_JSON_PARTS = 1_000
"""Structured content with more parts than this is sized in the worker thread instead."""

_COUNTER = TokenCounter()  # the encoding loads on the first count, in the worker thread


@dataclass(frozen=True, slots=True)
class Truncation:
    """What a cut took: the figures of the marker and of `_meta["mcp-router/truncated"]`."""

    limit: int
    tokens: int
    """The whole result as the upstream sent it."""
    cut: int
    """Of `tokens`, how many did not reach the host."""
    sent: int
    """The result as sent: what was kept, the notes and the marker."""
    structured_dropped: bool = False
    blocks_left_out: int = 0
    """Binary blocks (each replaced by a note) and resource links that did not fit."""

    def marker(self) -> str:
        left_out = []
        if self.structured_dropped:
            left_out.append("the structured content")
        if self.blocks_left_out:
            plural = "s" if self.blocks_left_out > 1 else ""
            left_out.append(f"{self.blocks_left_out:,} binary or link block{plural}")
        also = f"; left out: {', '.join(left_out)}" if left_out else ""
        return (
            f"{MARKER_PREFIX} {self.cut:,} of {self.tokens:,} tokens cut "
            f"(limit {self.limit:,}){also}; ask the tool for less, e.g. a narrower query or a page]"
        )

    def meta(self) -> dict[str, Any]:
        return {
            "limit": self.limit,
            "tokens": self.tokens,
            "cut": self.cut,
            "sent": self.sent,
            "structuredContentDropped": self.structured_dropped,
            "blocksLeftOut": self.blocks_left_out,
        }


async def limit_result(result: types.CallToolResult, limit: int) -> types.CallToolResult:
    """`cut_result` for the event loop: a result the cheap bound proves within `limit` passes
    at once; counting and cutting run in a worker thread."""
    if limit <= 0 or fits_cheaply(result, limit):
        return result
    started = time.perf_counter()
    limited, truncation = await anyio.to_thread.run_sync(cut_result, result, limit)
    if truncation is not None:
        logger.info(
            "result cut: %d of %d tokens sent (limit %d) in %.3f s",
            truncation.sent,
            truncation.tokens,
            limit,
            time.perf_counter() - started,
        )
    return limited


def cut_result(
    result: types.CallToolResult, limit: int, counter: TokenCounter | None = None
) -> tuple[types.CallToolResult, Truncation | None]:
    """The result within `limit` tokens, and what was cut (None: it passed unchanged).

    Blocking: it tokenises the whole result. `limit` 0 means no limit.
    """
    if limit <= 0 or fits_cheaply(result, limit):
        return result, None
    counter = counter or _COUNTER
    texts: dict[int, list[int]] = {}
    wholes: dict[int, int] = {}
    for index, block in enumerate(result.content):
        text = _text_of(block)
        if text is not None:
            texts[index] = counter.encode(text)
        else:
            wholes[index] = _whole_cost(block, counter)
    structured = None
    if result.structured_content is not None:
        structured = counter.count_text(_json(result.structured_content))
    total = sum(map(len, texts.values())) + sum(wholes.values()) + (structured or 0)
    if total <= limit:
        return result, None
    worst = Truncation(limit, total, total, 0, structured is not None, len(wholes))
    cutter = _Cutter(result, limit, total, texts, wholes, structured, counter)
    reserve = counter.count_text(worst.marker())
    for _ in range(4):  # the marker's own length moves a little with its figures
        limited, truncation = cutter.cut(reserve)
        if truncation.sent <= limit or not cutter.kept_text:
            break
        reserve += truncation.sent - limit
    return limited, truncation


@dataclass
class _Cutter:
    """One result's measured parts, and a cut of them for a given marker reserve."""

    result: types.CallToolResult
    limit: int
    total: int
    texts: dict[int, list[int]]
    wholes: dict[int, int]
    structured: int | None
    counter: TokenCounter
    kept_text: int = 0

    def cut(self, reserve: int) -> tuple[types.CallToolResult, Truncation]:
        room = self.limit - reserve
        keep_structured = self.structured is not None and self.structured <= room
        kept = self.structured if keep_structured and self.structured is not None else 0
        room -= kept
        placed: dict[int, types.ContentBlock] = {}
        notes = left_out = 0
        for index, cost in self.wholes.items():
            block = self.result.content[index]
            if cost <= room:
                placed[index] = block
                room, kept = room - cost, kept + cost
                continue
            left_out += 1
            note = _note(block, self.limit)
            cost = 0 if note is None else self.counter.count_text(note)
            if note is not None and cost <= room:  # past that, the marker's count says it
                placed[index] = types.TextContent(text=note)
                room, notes = room - cost, notes + cost
        self.kept_text = 0
        for index, tokens in self.texts.items():
            block = self.result.content[index]
            if len(tokens) <= room:
                placed[index] = block
                room -= len(tokens)
                self.kept_text += len(tokens)
            elif room > 0:
                head, size = self._head(tokens, room)
                placed[index] = _with_text(block, head)
                room = 0
                self.kept_text += size
        kept += self.kept_text
        dropped = self.structured is not None and not keep_structured
        truncation = Truncation(self.limit, self.total, self.total - kept, 0, dropped, left_out)
        marker = truncation.marker()
        sent = kept + notes + self.counter.count_text(marker)
        truncation = Truncation(self.limit, self.total, self.total - kept, sent, dropped, left_out)
        content = [block for _, block in sorted(placed.items())]
        update: dict[str, Any] = {
            "content": [*content, types.TextContent(text=truncation.marker())],
            "meta": {**(self.result.meta or {}), META_KEY: truncation.meta()},
        }
        if dropped:
            update["structured_content"] = None
            update["is_error"] = True
        return self.result.model_copy(update=update), truncation

    def _head(self, tokens: list[int], size: int) -> tuple[str, int]:
        """The text of the first `size` tokens, and its own count: decoded text re-encodes
        to its own tokens, occasionally a few more, which are shaved off."""
        while size > 0:
            text = self.counter.decode(tokens[:size])
            count = self.counter.count_text(text)
            if count <= size:
                return text, count
            size -= count - size
        return "", 0


def fits_cheaply(result: types.CallToolResult, limit: int) -> bool:
    """Whether `result` is within `limit` tokens by a bound that tokenises nothing: a token
    is at least one UTF-8 byte. False means "count to know"; the work is bounded by `limit`."""
    room = limit
    for block in result.content:
        text = _text_of(block)
        if text is not None:
            if len(text) > room:
                return False
            room -= len(text.encode())
        elif isinstance(block, types.ResourceLink):
            room -= len(_link_json(block).encode())
        else:
            room -= _binary_cost(block)
        if room < 0:
            return False
    if result.structured_content is not None:
        room = _json_room(result.structured_content, room)
    return room >= 0


def _text_of(block: types.ContentBlock) -> str | None:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource) and isinstance(
        block.resource, types.TextResourceContents
    ):
        return block.resource.text
    return None


def _with_text(block: types.ContentBlock, text: str) -> types.ContentBlock:
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource.model_copy(update={"text": text})
        return block.model_copy(update={"resource": resource})
    return block.model_copy(update={"text": text})


def _base64_of(block: types.ContentBlock) -> str:
    if isinstance(block, types.ImageContent | types.AudioContent):
        return block.data
    if isinstance(block, types.EmbeddedResource) and isinstance(
        block.resource, types.BlobResourceContents
    ):
        return block.resource.blob
    return ""


def _binary_cost(block: types.ContentBlock) -> int:
    return -(-len(_base64_of(block)) // BINARY_CHARS_PER_TOKEN)


def _whole_cost(block: types.ContentBlock, counter: TokenCounter) -> int:
    if isinstance(block, types.ResourceLink):
        return counter.count_text(_link_json(block))
    return _binary_cost(block)


def _note(block: types.ContentBlock, limit: int) -> str | None:
    """What stands in for a binary block left out; None for a link (the note would be as
    long as the link)."""
    if isinstance(block, types.ResourceLink):
        return None
    data = _base64_of(block)
    padding = len(data) - len(data.rstrip("="))
    size = len(data) * 3 // 4 - padding
    if isinstance(block, types.EmbeddedResource):
        mime = block.resource.mime_type or "unknown type"
        what = f"resource {block.resource.uri} ({mime}, {size:,} bytes)"
    else:
        assert isinstance(block, types.ImageContent | types.AudioContent)
        what = f"{block.type} ({block.mime_type}, {size:,} bytes)"
    return f"[mcp-router: {what} left out: the result is over its limit of {limit:,} tokens]"


def _link_json(block: types.ResourceLink) -> str:
    return block.model_dump_json(by_alias=True, exclude_none=True)


def _json(value: Any) -> str:
    """Structured content as it is sized: compact JSON, non-ASCII characters as they are."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _json_room(value: Any, room: int) -> int:
    """`room` less the UTF-8 bytes of `_json(value)`; -1 as soon as that is below zero, or
    when the value has too many parts to size here (the caller then counts it exactly)."""
    stack = [value]
    parts = 0
    while stack:
        item = stack.pop()
        parts += 1
        if parts > _CHEAP_JSON_PARTS:
            return -1
        if isinstance(item, str):
            if len(item) > room:
                return -1
            room -= len(json.dumps(item, ensure_ascii=False).encode())
        elif isinstance(item, dict):
            room -= 2 * len(item) + 1 if item else 2  # braces, colons and commas
            for key, child in item.items():
                stack += [key if isinstance(key, str) else str(key), child]
        elif isinstance(item, list | tuple):
            room -= len(item) + 1 if item else 2  # brackets and commas
            stack += item
        else:
            try:
                room -= len(json.dumps(item))
            except (TypeError, ValueError):
                return -1
        if room < 0:
            return -1
    return room
