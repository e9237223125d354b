"""Cut results kept for reading on: `read_result(handle, offset)`.

When `router.server.results.limits` cuts a tool result, its text (the text blocks joined by a blank
line) is kept here under a random handle (128 bits, `secrets`) that the marker names, with
the offset where the part sent ended. `read_result` returns the text from an offset on, cut
to the same token limit as the result was, with a marker giving the next offset while more
remains.

Retention (`router.limits`): in memory, in this process, each text `keep_seconds` (900, 15
minutes) after its call; all texts together at most `keep_mib` (64 MiB, measured as Python
holds them) and `KEEP_COUNT` texts. With identities, one principal holds at most its share,
`PRINCIPAL_SHARE` of both (16 MiB and 1,024 texts by default): a principal over its share
loses its own oldest first, and when the whole store is full the principal holding the most
loses its oldest, so one principal filling the store never pushes out another's results
while it holds more than that one. A text larger than a share is not kept (its marker names
no handle). Without identities every caller is one principal, and its share is the whole
store. Results cut at a limit under `READ_ON_MIN_LIMIT` tokens are not kept (a part would
hold little more than its marker). 0 for either setting turns keeping off.

A handle is bound to the principal of the call that made it (`Principal.key`; none without
identities) and, for a handshake-revision client, to its connection: another principal or
another session reads nothing with it, and learns nothing (an unknown handle and another's
look alike). A 2026-07-28 client has no session, so there the principal and the handle
alone are the key. Another replica does not know the handle.
"""

from __future__ import annotations

import json
import secrets
import sys
import threading
import time
import weakref
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio.to_thread
import mcp_types as types

from router.accounting.tokens import TokenCounter
from router.config import RouterConfig
from router.core.errors import InvalidParams
from router.core.meta_tools import READ_RESULT
from router.server.results.cutting import head_of, measure_text

__all__ = [
    "KEEP_COUNT",
    "KEEP_MIB",
    "KEEP_SECONDS",
    "PART_META_KEY",
    "PRINCIPAL_SHARE",
    "READ_ON_MIN_LIMIT",
    "Keeping",
    "KeptResults",
    "Offer",
    "Owner",
    "duration",
]

KEEP_SECONDS = 900.0
KEEP_MIB = 64.0
KEEP_COUNT = 4_096
"""Texts kept at most, all principals together (the table's rows, whatever their size)."""
PRINCIPAL_SHARE = 0.25
"""With identities, the part of the bytes and of the count one principal may hold. A quarter
leaves three quarters to the others when one fills its share, and still lets a principal
keep 16 MiB by default: 160 parts at the default 25,000-token limit, more than a model reads
on in the 15 minutes a text is kept."""
READ_ON_MIN_LIMIT = 256
"""Results cut at a smaller limit are not kept."""
PART_META_KEY = "mcp-router/part"
"""The key of a part's figures in a `read_result` answer's `_meta`."""
_MIB = 1 << 20
_GONE_REMEMBERED = 1_024
"""Handles that expired or were dropped, remembered to say so (the oldest forgotten)."""
_MARKER_SLACK = 4
"""Tokens the part's marker may grow by beyond the one reserved for (its figures)."""


def duration(seconds: float) -> str:
    """`900` -> "15 min", `30` -> "30 s"."""
    if seconds >= 60:
        return f"{seconds / 60:g} min"
    return f"{seconds:g} s"


@dataclass(frozen=True, slots=True)
class Offer:
    """A handle offered for one cut result, and how long its text will be kept."""

    handle: str
    seconds: float


@dataclass(frozen=True, slots=True)
class Owner:
    """Who may read a kept result: a principal, and for a session-holding client its
    connection (held weakly: a closed session's handles read nothing)."""

    principal: str | None
    connection: weakref.ReferenceType[Any] | None = None

    def admits(self, reader: Owner) -> bool:
        if reader.principal != self.principal:
            return False
        if self.connection is None:
            return True
        mine = self.connection()
        return mine is not None and reader.connection is not None and reader.connection() is mine


@dataclass(frozen=True, slots=True)
class _Kept:
    owner: Owner
    text: str
    limit: int
    expires: float
    size: int


@dataclass(slots=True)
class _Holding:
    """One principal's kept texts, oldest first, and their bytes."""

    handles: OrderedDict[str, None]
    size: int = 0


class KeptResults:
    """The kept texts of cut results, bounded in time and in memory; thread-safe (texts are
    kept from the worker thread that cut them)."""

    def __init__(
        self,
        seconds: float = KEEP_SECONDS,
        max_bytes: int = int(KEEP_MIB * _MIB),
        clock: Callable[[], float] = time.monotonic,
        counter: TokenCounter | None = None,
        *,
        max_count: int = KEEP_COUNT,
        share: float = 1.0,
    ) -> None:
        self.seconds = seconds
        self.max_bytes = max_bytes
        self.max_count = max_count
        self.share_bytes = int(max_bytes * share)
        """What one principal may hold: its share of the bytes and of the count."""
        self.share_count = max(1, int(max_count * share))
        self.clock = clock
        self._counter = counter or TokenCounter()
        self._kept: OrderedDict[str, _Kept] = OrderedDict()
        self._holdings: dict[str | None, _Holding] = {}
        self._gone: OrderedDict[str, tuple[Owner, str]] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    @classmethod
    def from_config(cls, config: RouterConfig) -> KeptResults:
        """With identities (`router.http.oauth`) each principal gets `PRINCIPAL_SHARE`."""
        limits = config.router.limits
        share = PRINCIPAL_SHARE if config.router.http.oauth is not None else 1.0
        return cls(limits.keep_seconds, int(limits.keep_mib * _MIB), share=share)

    @property
    def enabled(self) -> bool:
        return self.seconds > 0 and self.max_bytes > 0 and self.max_count > 0

    @property
    def held_bytes(self) -> int:
        with self._lock:
            self._purge(self.clock())
            return self._bytes

    def keeping(self, owner: Owner) -> Keeping | None:
        """What one call keeps its cut result with, bound to its caller; None when off."""
        return Keeping(self, owner) if self.enabled else None

    def put(self, handle: str, owner: Owner, text: str, limit: int) -> bool:
        """Keep `text` under `handle`; False when it is larger than a principal's share.
        Room is made from the owner's own oldest while it is over its share, then from the
        oldest of whoever holds the most while the store is full."""
        size = sys.getsizeof(text)
        if size > self.share_bytes:
            return False
        with self._lock:
            now = self.clock()
            self._purge(now)
            mine = self._holdings.get(owner.principal)
            while mine is not None and mine.handles and self._over_share(mine, size):
                self._forget(next(iter(mine.handles)), "share")
            while self._kept and (
                self._bytes + size > self.max_bytes or len(self._kept) >= self.max_count
            ):
                self._forget(self._fullest_oldest(), "dropped")
            self._kept[handle] = _Kept(owner, text, limit, now + self.seconds, size)
            self._bytes += size
            mine = self._holdings.setdefault(owner.principal, _Holding(OrderedDict()))
            mine.handles[handle] = None
            mine.size += size
        return True

    def held_by(self, principal: str | None) -> tuple[int, int]:
        """The bytes and the count of texts `principal` holds now."""
        with self._lock:
            self._purge(self.clock())
            mine = self._holdings.get(principal)
            return (mine.size, len(mine.handles)) if mine is not None else (0, 0)

    def _over_share(self, holding: _Holding, size: int) -> bool:
        return holding.size + size > self.share_bytes or len(holding.handles) >= self.share_count

    def _fullest_oldest(self) -> str:
        """The oldest handle of the principal holding the largest part of either bound."""

        def fullness(holding: _Holding) -> float:
            return max(holding.size / self.max_bytes, len(holding.handles) / self.max_count)

        return next(iter(max(self._holdings.values(), key=fullness).handles))

    async def read(self, reader: Owner, handle: str, offset: int) -> types.CallToolResult:
        """The part of the kept text from `offset` on, within its limit (`InvalidParams`
        for a handle this reader cannot read, or an offset past the end)."""
        kept = self._get(reader, handle)
        if offset > len(kept.text):
            raise InvalidParams(
                f"{READ_RESULT}: offset {offset} is past the end of the kept result "
                f"({len(kept.text):,} characters)",
                {"handle": handle, "length": len(kept.text)},
            )
        return await anyio.to_thread.run_sync(self._part, kept, handle, offset)

    def _get(self, reader: Owner, handle: str) -> _Kept:
        if not self.enabled:
            raise InvalidParams(
                f"{READ_RESULT}: cut results are not kept here (router.limits.keep_seconds "
                "or keep_mib is 0)",
                {"handle": handle, "reason": "off"},
            )
        with self._lock:
            self._purge(self.clock())
            kept = self._kept.get(handle)
            gone = self._gone.get(handle)
        if kept is not None and kept.owner.admits(reader):
            return kept
        if kept is None and gone is not None and gone[0].admits(reader):
            reason = gone[1]
            raise InvalidParams(
                f"{READ_RESULT}: the kept result {handle!r} is gone: {self._why(reason)}; "
                "call the tool again",
                {"handle": handle, "reason": "expired" if reason == "expired" else "dropped"},
            )
        raise InvalidParams(
            f"{READ_RESULT}: no kept result {handle!r} here: a handle reads only in the session "
            f"and for the caller that got it, on the router that cut the result, for "
            f"{duration(self.seconds)} after its call",
            {"handle": handle, "reason": "unknown"},
        )

    def _why(self, reason: str) -> str:
        if reason == "expired":
            return f"it expired: a cut result is kept {duration(self.seconds)} after its call"
        if reason == "share":
            return (
                "it was dropped to make room for this caller's newer ones (each caller keeps "
                f"at most {self.share_bytes / _MIB:.3g} MiB and {self.share_count:,} results)"
            )
        return (
            "it was dropped to make room for newer ones (kept results share "
            f"{self.max_bytes / _MIB:g} MiB and {self.max_count:,} results)"
        )

    def _part(self, kept: _Kept, handle: str, offset: int) -> types.CallToolResult:
        counter, text, length = self._counter, kept.text, len(kept.text)
        room = kept.limit - counter.count_text(_marker(handle, length, length - 1, length))
        room -= _MARKER_SLACK
        found = measure_text(text, room, counter, start=offset)
        if found.complete and found.count <= room:
            part, size = text[offset:], found.count
        else:
            part, size = head_of(found.tokens, room, counter)
        end = offset + len(part)
        marker = _marker(handle, offset, end, length)
        figures = {
            "handle": handle,
            "offset": offset,
            "end": end,
            "length": length,
            "limit": kept.limit,
            "sent": size + counter.count_text(marker),
        }
        content = [types.TextContent(text=part)] if part else []
        return types.CallToolResult(
            content=[*content, types.TextContent(text=marker)], _meta={PART_META_KEY: figures}
        )

    def _purge(self, now: float) -> None:
        while self._kept:
            handle, kept = next(iter(self._kept.items()))
            if kept.expires > now:
                return
            self._forget(handle, "expired")

    def _forget(self, handle: str, reason: str) -> None:
        kept = self._kept.pop(handle)
        self._bytes -= kept.size
        holding = self._holdings[kept.owner.principal]
        del holding.handles[handle]
        holding.size -= kept.size
        if not holding.handles:
            del self._holdings[kept.owner.principal]
        self._gone[handle] = (kept.owner, reason)
        while len(self._gone) > _GONE_REMEMBERED:
            self._gone.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Keeping:
    """One call's way to keep its cut result, bound to its caller."""

    results: KeptResults
    owner: Owner

    def offer(self, size: int, limit: int) -> Offer | None:
        """A fresh handle for a result whose readable text holds `size` bytes, cut at
        `limit`; None when it would not be kept."""
        if limit < READ_ON_MIN_LIMIT or size > self.results.share_bytes:
            return None
        return Offer(f"rr-{secrets.token_urlsafe(16)}", self.results.seconds)

    def keep(self, handle: str, text: str, limit: int) -> bool:
        return self.results.put(handle, self.owner, text, limit)


def _marker(handle: str, start: int, end: int, length: int) -> str:
    span = f"characters {start:,} to {end:,} of {length:,}"
    if end >= length:
        return f"[mcp-router: the end of a cut result, {span}]"
    call = json.dumps({"name": READ_RESULT, "arguments": {"handle": handle, "offset": end}})
    return f"[mcp-router: part of a cut result, {span}; read on with call_tool {call}]"
