"""Result limits: a tool result, a resource read or a prompt over its token budget is cut
before it reaches the host.

The budget is `router.limits.result_tokens` (a server entry's own `result_tokens` wins; 0
turns it off), counted with cl100k (`router.accounting.tokens`). A result costs the sum of
its parts, since hosts show the model both the content and the structured content:

- text (text blocks, embedded text resources, a read's text contents): its tokens;
- binary data (images, audio, blobs) is not tokenised: one token per
  `BINARY_CHARS_PER_TOKEN` characters of its base64 text;
- a resource link: the tokens of its JSON;
- `structuredContent`: the tokens of its compact JSON.

A result within its budget passes unchanged (the very object the upstream sent, so a host's
output-schema check sees what the tool declared). A result over it is cut, whole parts
first, then text (`router.server.results.cutting`):

1. `structuredContent` and each binary block or link are kept whole or not at all: a cut
   JSON value would not match the tool's output schema, and half an image is no image. They
   are kept, structured content first, then in content order, while they fit. A binary block
   that does not fit is replaced where it stood by a note, a link is left out, and structured
   content that does not fit is dropped; a result that loses its structured content is
   marked `isError`, which hosts read as "no output-schema check" (the SDK client would
   otherwise reject it for missing structured content).
2. Text blocks share what is left, in order: the first that does not fit is cut at a token
   boundary and the ones after it are left out.
3. A marker (`MARKER_PREFIX` for a tool result, `[mcp-router: resource truncated:` and
   `[mcp-router: prompt truncated:` for the others) ends the content, and
   `_meta["mcp-router/truncated"]` holds the figures. With marker and notes, the result sent
   is within the budget (a budget smaller than the marker itself gets the marker alone).

A resource read's contents are cut the same way (a blob is a binary block; the marker and
the notes are text contents), and so are a prompt's messages, one content block each (the
marker is a message of the last message's role).

Tokenising stops once the limit is known to be passed: a long text is encoded only as far
as the limit reaches (`router.server.results.cutting`), so the work grows with the limit, not
with the result (`python -m benchmarks.bounded_work` times a 5 MB cut against tokenising it
whole, `benchmarks/results/bounded-work.json`). The text sent is counted exactly; the whole
result's count, and so the tokens cut, are then an estimate extrapolated from the encoded
prefix: the marker says "about" and `_meta` says `"estimated": true`. `limit_result` (and its
siblings) run the cut in a worker thread, and skip it whenever a cheap bound (tokens never
outnumber UTF-8 bytes) shows that the result fits.

A cut tool result's text is kept for reading on (`router.server.results.kept`), when a `Keeping` is
handed in: the marker then names a handle and the `read_result` call that returns the next
part, and `_meta` gives the `handle` and the `offset` (in characters) where the part sent
ends. What is kept is the result's text blocks joined by a blank line (with no text block,
the JSON of structured content that was dropped); binary blocks left out are not kept.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from collections.abc import Sequence
from typing import Any

import anyio.to_thread
import mcp_types as types

from router.accounting.tokens import TokenCounter
from router.server.results.cutting import (
    BINARY_CHARS_PER_TOKEN,
    Measured,
    Placement,
    json_text,
    measure,
    parts_fit_cheaply,
    place,
    text_of,
)
from router.server.results.kept import Keeping, Offer
from router.server.results.truncation import MARKER_PREFIX, META_KEY, Truncation

__all__ = [
    "BINARY_CHARS_PER_TOKEN",
    "MARKER_PREFIX",
    "META_KEY",
    "READ_SEPARATOR",
    "Truncation",
    "cut_prompt",
    "cut_resource",
    "cut_result",
    "fits_cheaply",
    "limit_prompt",
    "limit_resource",
    "limit_result",
    "readable_text",
]

logger = logging.getLogger(__name__)

READ_SEPARATOR = "\n\n"
"""Between the text blocks of a kept result."""

_COUNTER = TokenCounter()  # the encoding loads on the first count, in the worker thread


async def limit_result(
    result: types.CallToolResult, limit: int, keeping: Keeping | None = None
) -> types.CallToolResult:
    """`cut_result` for the event loop: a result the cheap bound proves within `limit` passes
    at once; counting and cutting run in a worker thread. With `keeping`, a cut result's
    text is kept for `read_result` and the marker names its handle."""
    if limit <= 0 or fits_cheaply(result, limit):
        return result
    started = time.perf_counter()
    limited, truncation = await anyio.to_thread.run_sync(_cut_and_keep, result, limit, keeping)
    _logged(truncation, started)
    return limited


async def limit_resource(
    result: types.ReadResourceResult, uri: str, limit: int
) -> types.ReadResourceResult:
    """`cut_resource` for the event loop, as `limit_result`."""
    if limit <= 0 or parts_fit_cheaply(_resource_blocks(result), None, limit):
        return result
    started = time.perf_counter()
    limited, truncation = await anyio.to_thread.run_sync(cut_resource, result, uri, limit)
    _logged(truncation, started)
    return limited


async def limit_prompt(result: types.GetPromptResult, limit: int) -> types.GetPromptResult:
    """`cut_prompt` for the event loop, as `limit_result`."""
    if limit <= 0 or parts_fit_cheaply([m.content for m in result.messages], None, limit):
        return result
    started = time.perf_counter()
    limited, truncation = await anyio.to_thread.run_sync(cut_prompt, result, limit)
    _logged(truncation, started)
    return limited


def fits_cheaply(result: types.CallToolResult, limit: int) -> bool:
    """Whether `result` is within `limit` tokens by a bound that tokenises nothing: a token
    is at least one UTF-8 byte. False means "count to know"; the work is bounded by `limit`."""
    return parts_fit_cheaply(result.content, result.structured_content, limit)


def cut_result(
    result: types.CallToolResult,
    limit: int,
    counter: TokenCounter | None = None,
    *,
    offer: Offer | None = None,
) -> tuple[types.CallToolResult, Truncation | None]:
    """The result within `limit` tokens, and what was cut (None: it passed unchanged).

    Blocking: it tokenises the result, as far as the limit needs. `limit` 0 means no limit.
    With an `offer`, a marker that leaves text unsent names its handle.
    """
    if limit <= 0 or fits_cheaply(result, limit):
        return result, None
    counter = counter or _COUNTER
    measured = measure(result.content, result.structured_content, limit, counter)
    if measured.fits(limit):
        return result, None
    structured = result.structured_content
    placement, truncation = _cut(measured, limit, counter, "result", offer, structured)
    update: dict[str, Any] = {
        "content": [*_in_order(placement), types.TextContent(text=truncation.marker())],
        "meta": {**(result.meta or {}), META_KEY: truncation.meta()},
    }
    if truncation.structured_dropped:
        update["structured_content"] = None
        update["is_error"] = True
    return result.model_copy(update=update), truncation


def cut_resource(
    result: types.ReadResourceResult, uri: str, limit: int, counter: TokenCounter | None = None
) -> tuple[types.ReadResourceResult, Truncation | None]:
    """A resource read's contents within `limit` tokens (blocking, as `cut_result`); the
    marker and notes are `text/plain` contents, the marker under the URI read."""
    blocks = _resource_blocks(result)
    counter = counter or _COUNTER
    if limit <= 0 or parts_fit_cheaply(blocks, None, limit):
        return result, None
    measured = measure(blocks, None, limit, counter)
    if measured.fits(limit):
        return result, None
    placement, truncation = _cut(measured, limit, counter, "resource", None, None)
    contents: list[types.TextResourceContents | types.BlobResourceContents] = []
    for index, block in sorted(placement.placed.items()):
        if isinstance(block, types.EmbeddedResource):
            contents.append(block.resource)
        else:
            assert isinstance(block, types.TextContent)  # a note where a blob stood
            contents.append(_plain(str(result.contents[index].uri), block.text))
    contents.append(_plain(uri, truncation.marker()))
    update = {"contents": contents, "meta": {**(result.meta or {}), META_KEY: truncation.meta()}}
    return result.model_copy(update=update), truncation


def cut_prompt(
    result: types.GetPromptResult, limit: int, counter: TokenCounter | None = None
) -> tuple[types.GetPromptResult, Truncation | None]:
    """A prompt's messages within `limit` tokens (blocking, as `cut_result`): a message
    whose content is left out goes; the marker is a message of the last message's role."""
    blocks = [message.content for message in result.messages]
    counter = counter or _COUNTER
    if limit <= 0 or parts_fit_cheaply(blocks, None, limit):
        return result, None
    measured = measure(blocks, None, limit, counter)
    if measured.fits(limit):
        return result, None
    placement, truncation = _cut(measured, limit, counter, "prompt", None, None)
    messages = [
        types.PromptMessage(role=result.messages[index].role, content=block)
        for index, block in sorted(placement.placed.items())
    ]
    role = result.messages[-1].role if result.messages else "user"
    marker = types.PromptMessage(role=role, content=types.TextContent(text=truncation.marker()))
    update = {
        "messages": [*messages, marker],
        "meta": {**(result.meta or {}), META_KEY: truncation.meta()},
    }
    return result.model_copy(update=update), truncation


def readable_text(result: types.CallToolResult, structured_dropped: bool) -> str:
    """What `read_result` reads of a cut result: its text blocks joined by a blank line; with
    none, the compact JSON of its structured content when that was dropped."""
    return READ_SEPARATOR.join(
        _readable_parts(result.content, result.structured_content, structured_dropped)
    )


def _cut_and_keep(
    result: types.CallToolResult, limit: int, keeping: Keeping | None
) -> tuple[types.CallToolResult, Truncation | None]:
    offer = text = None
    if keeping is not None:
        text = readable_text(result, structured_dropped=True)
        offer = keeping.offer(sys.getsizeof(text), limit)
    limited, truncation = cut_result(result, limit, offer=offer)
    if keeping is not None and truncation is not None and truncation.handle is not None:
        if not truncation.structured_dropped:  # the text differs only without text blocks
            text = readable_text(result, truncation.structured_dropped)
        assert text is not None
        keeping.keep(truncation.handle, text, limit)
    return limited, truncation


def _cut(
    measured: Measured,
    limit: int,
    counter: TokenCounter,
    what: str,
    offer: Offer | None,
    structured: Any,
) -> tuple[Placement, Truncation]:
    """The placement within `limit` with its marker: the marker's own length moves a little
    with its figures, so the room left for it is corrected a few times."""
    total = measured.total
    base = Truncation(limit, total, total, 0, estimated=measured.estimated, what=what)
    worst = dataclasses.replace(
        base,
        structured_dropped=measured.structured is not None,
        blocks_left_out=len(measured.wholes),
    )
    if offer is not None:
        worst = dataclasses.replace(
            worst, handle=offer.handle, offset=10**12, kept_seconds=offer.seconds
        )
    reserve = counter.count_text(worst.marker())
    for _ in range(4):
        placement = place(measured, limit - reserve, limit, counter)
        dropped = measured.structured is not None and not placement.structured_kept
        draft = dataclasses.replace(
            base,
            cut=total - placement.kept,
            structured_dropped=dropped,
            blocks_left_out=placement.left_out,
        )
        if offer is not None:
            draft = _with_offer(draft, offer, measured, placement, structured)
        sent = placement.kept + placement.notes + counter.count_text(draft.marker())
        truncation = dataclasses.replace(draft, sent=sent)
        if sent <= limit or not placement.kept_text:
            break
        reserve += sent - limit
    return placement, truncation


def _with_offer(
    truncation: Truncation,
    offer: Offer,
    measured: Measured,
    placement: Placement,
    structured: Any,
) -> Truncation:
    """The figures with the handle, when some of the readable text was not sent."""
    parts = _readable_parts(measured.blocks, structured, truncation.structured_dropped)
    sent = [placement.sent_chars.get(index, 0) for index in measured.texts] or [0]
    offset = 0
    for number, (part, chars) in enumerate(zip(parts, sent, strict=False)):
        offset += chars
        if chars < len(part):
            break
        if number < len(parts) - 1:
            offset += len(READ_SEPARATOR)
    length = sum(map(len, parts)) + len(READ_SEPARATOR) * max(len(parts) - 1, 0)
    if offset >= length:
        return truncation
    return dataclasses.replace(
        truncation, handle=offer.handle, offset=offset, kept_seconds=offer.seconds
    )


def _readable_parts(
    blocks: Sequence[types.ContentBlock], structured: Any, structured_dropped: bool
) -> list[str]:
    parts = [text for text in map(text_of, blocks) if text is not None]
    if not parts and structured_dropped and structured is not None:
        parts = [json_text(structured)]
    return parts


def _in_order(placement: Placement) -> list[types.ContentBlock]:
    return [block for _, block in sorted(placement.placed.items())]


def _resource_blocks(result: types.ReadResourceResult) -> list[types.ContentBlock]:
    return [
        types.EmbeddedResource.model_construct(type="resource", resource=contents)
        for contents in result.contents
    ]


def _plain(uri: str, text: str) -> types.TextResourceContents:
    return types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)


def _logged(truncation: Truncation | None, started: float) -> None:
    if truncation is not None:
        logger.info(
            "%s cut: %d of %s%d tokens sent (limit %d) in %.3f s",
            truncation.what,
            truncation.sent,
            "about " if truncation.estimated else "",
            truncation.tokens,
            truncation.limit,
            time.perf_counter() - started,
        )
