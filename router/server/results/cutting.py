"""A result's parts measured and placed within a token limit, for `router.server.results.limits`.

Measuring stops as soon as the limit is known to be passed. A token is at least one UTF-8
byte and a text's tokens are those of its pieces (tiktoken splits it into words first), so
encoding a prefix of a text answers "does it fit in `cap` tokens?" once that prefix holds
more than `cap` tokens: only the prefix is tokenised (first `PREFIX_CHARS_PER_TOKEN` times
`cap` characters, doubled while it holds too few), and the text's whole count is then an
estimate, extrapolated from the prefix by characters (`Measure.complete` false). Text blocks
after the budget is spent are not tokenised at all: their counts are estimated at the
measured blocks' rate. The kept text itself is always counted exactly: it is the prefix's
first tokens, decoded and counted again.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from router.accounting.tokens import TokenCounter

__all__ = [
    "BINARY_CHARS_PER_TOKEN",
    "Measure",
    "Measured",
    "Placement",
    "head_of",
    "json_text",
    "measure",
    "measure_text",
    "parts_fit_cheaply",
    "place",
    "text_of",
    "with_text",
]

BINARY_CHARS_PER_TOKEN = 4
"""What base64 data is taken to cost: one token per 4 characters (3 bytes)."""
PREFIX_CHARS_PER_TOKEN = 6
"""The first prefix encoded holds this many characters per token of the cap: enough for
prose, code and JSON (3 to 5 characters a token) in one pass; doubled when it is not."""
_DEFAULT_CHARS_PER_TOKEN = 4.0
"""The rate of text nothing was measured of (the estimate of text never tokenised)."""
_CHEAP_JSON_PARTS = 1_000
"""Structured content with more parts than this is sized in the worker thread instead."""


@dataclass(frozen=True, slots=True)
class Measure:
    """What is known of one text's tokens."""

    tokens: list[int]
    """The ids of a prefix of the text, all of it when `complete`."""
    complete: bool
    count: int
    """The text's tokens: exact when `complete`, else an estimate above the cap."""
    chars: int
    """The characters `tokens` encode."""


def measure_text(text: str, cap: int, counter: TokenCounter, start: int = 0) -> Measure:
    """The tokens of `text[start:]`, encoded only as far as needed to know whether it holds
    more than `cap` tokens (blocking; the work is bounded by `cap`, not by the text)."""
    rest = len(text) - start
    size = min(rest, PREFIX_CHARS_PER_TOKEN * (max(cap, 0) + 1))
    while True:
        tokens = counter.encode(text[start : start + size])
        if size >= rest:
            return Measure(tokens, True, len(tokens), size)
        if len(tokens) > cap:
            estimate = max(len(tokens), round(len(tokens) * rest / size))
            return Measure(tokens, False, estimate, size)
        size = min(rest, size * 2)


def head_of(tokens: list[int], size: int, counter: TokenCounter) -> tuple[str, int]:
    """The text of the first `size` of `tokens`, and its own count: decoded text re-encodes
    to its own tokens, occasionally a few more, which are shaved off."""
    while size > 0:
        text = counter.decode(tokens[:size])
        count = counter.count_text(text)
        if count <= size:
            return text, count
        size -= count - size
    return "", 0


@dataclass(frozen=True, slots=True)
class Measured:
    """One result's parts, measured as far as its limit needs."""

    blocks: Sequence[types.ContentBlock]
    texts: dict[int, Measure]
    """Text blocks (text, embedded text) by position."""
    wholes: dict[int, int]
    """Binary blocks and links by position: what each costs."""
    structured: Measure | None
    """The compact JSON of the structured content."""

    @property
    def total(self) -> int:
        structured = self.structured.count if self.structured is not None else 0
        return sum(m.count for m in self.texts.values()) + sum(self.wholes.values()) + structured

    @property
    def estimated(self) -> bool:
        """Some count is an estimate: then the result is surely over its limit."""
        parts = [*self.texts.values(), *([self.structured] if self.structured else [])]
        return not all(m.complete for m in parts)

    def fits(self, limit: int) -> bool:
        return not self.estimated and self.total <= limit


def measure(
    blocks: Sequence[types.ContentBlock], structured: Any, limit: int, counter: TokenCounter
) -> Measured:
    """Measure each part against `limit` (blocking, bounded by the limit): text blocks in
    order while some of the limit is left for them, the rest estimated."""
    texts: dict[int, Measure] = {}
    wholes: dict[int, int] = {}
    unmeasured: list[tuple[int, int]] = []
    budget = limit
    tokens = chars = 0
    for index, block in enumerate(blocks):
        text = text_of(block)
        if text is None:
            wholes[index] = _whole_cost(block, counter)
        elif budget <= 0:
            unmeasured.append((index, len(text)))
        else:
            found = texts[index] = measure_text(text, budget, counter)
            budget = budget - found.count if found.complete else 0
            tokens, chars = tokens + len(found.tokens), chars + found.chars
    rate = tokens / chars if chars else 1 / _DEFAULT_CHARS_PER_TOKEN
    for index, length in unmeasured:
        texts[index] = Measure([], False, round(length * rate), 0)
    texts = dict(sorted(texts.items()))
    measured_structured = None
    if structured is not None:
        measured_structured = measure_text(_json(structured), limit, counter)
    return Measured(blocks, texts, wholes, measured_structured)


@dataclass
class Placement:
    """What a cut keeps of a result, within a room of tokens."""

    placed: dict[int, types.ContentBlock] = field(default_factory=dict)
    """The blocks sent (whole, cut, or a note in place of a binary block), by position."""
    kept: int = 0
    """Tokens of the result's own parts sent (structured content, blocks, kept text)."""
    kept_text: int = 0
    notes: int = 0
    """Tokens of the notes standing in for binary blocks left out."""
    left_out: int = 0
    """Binary blocks and links that did not fit."""
    structured_kept: bool = False
    sent_chars: dict[int, int] = field(default_factory=dict)
    """Per text block: how many of its characters were sent."""


def place(measured: Measured, room: int, limit: int, counter: TokenCounter) -> Placement:
    """Whole parts first (structured content, then binary blocks and links, each whole or
    not at all), then text blocks in order, the first that does not fit cut at a token
    boundary and the ones after it left out. Blocking (it decodes and counts the cut)."""
    placement = Placement()
    structured = measured.structured
    if structured is not None and structured.complete and structured.count <= room:
        placement.structured_kept = True
        placement.kept = structured.count
        room -= structured.count
    for index, cost in measured.wholes.items():
        block = measured.blocks[index]
        if cost <= room:
            placement.placed[index] = block
            room, placement.kept = room - cost, placement.kept + cost
            continue
        placement.left_out += 1
        note = _note(block, limit)
        cost = 0 if note is None else counter.count_text(note)
        if note is not None and cost <= room:  # past that, the marker's count says it
            placement.placed[index] = types.TextContent(text=note)
            room, placement.notes = room - cost, placement.notes + cost
    for index, found in measured.texts.items():
        block = measured.blocks[index]
        if found.complete and found.count <= room:
            placement.placed[index] = block
            room -= found.count
            placement.kept_text += found.count
            placement.sent_chars[index] = len(text_of(block) or "")
        elif room > 0 and found.tokens:
            head, size = head_of(found.tokens, room, counter)
            placement.placed[index] = with_text(block, head)
            room = 0
            placement.kept_text += size
            placement.sent_chars[index] = len(head)
        else:
            placement.sent_chars[index] = 0
    placement.kept += placement.kept_text
    return placement


def parts_fit_cheaply(blocks: Sequence[types.ContentBlock], structured: Any, limit: int) -> bool:
    """Whether the parts are within `limit` tokens by a bound that tokenises nothing: a
    token is at least one UTF-8 byte. False means "count to know"; the work is bounded by
    `limit`."""
    room = limit
    for block in blocks:
        text = text_of(block)
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
    if structured is not None:
        room = _json_room(structured, room)
    return room >= 0


def text_of(block: types.ContentBlock) -> str | None:
    if isinstance(block, types.TextContent):
        return block.text
    if isinstance(block, types.EmbeddedResource) and isinstance(
        block.resource, types.TextResourceContents
    ):
        return block.resource.text
    return None


def with_text(block: types.ContentBlock, text: str) -> types.ContentBlock:
    if isinstance(block, types.EmbeddedResource):
        resource = block.resource.model_copy(update={"text": text})
        return block.model_copy(update={"resource": resource})
    return block.model_copy(update={"text": text})


def json_text(value: Any) -> str:
    """Structured content as it is sized: compact JSON, non-ASCII characters as they are."""
    return _json(value)


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
