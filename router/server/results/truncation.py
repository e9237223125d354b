"""What a cut took: the figures of a cut result's marker and of its
`_meta["mcp-router/truncated"]` (`router.server.results.limits`)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from router.core.meta_tools import READ_RESULT
from router.server.results.kept import duration

__all__ = ["MARKER_PREFIX", "META_KEY", "Truncation"]

MARKER_PREFIX = "[mcp-router: result truncated:"
"""How the marker block that ends a cut tool result begins."""
META_KEY = "mcp-router/truncated"
"""The key of the cut's figures in the result's `_meta`."""
_ADVICE = {
    "result": "ask the tool for less, e.g. a narrower query or a page",
    "resource": "read a smaller part of it, if its server offers one",
    "prompt": "get it with narrower arguments, if it takes any",
}


@dataclass(frozen=True, slots=True)
class Truncation:
    """What a cut took: the figures of the marker and of `_meta["mcp-router/truncated"]`."""

    limit: int
    tokens: int
    """The whole result as the upstream sent it (an estimate when `estimated`)."""
    cut: int
    """Of `tokens`, how many did not reach the host."""
    sent: int
    """The result as sent: what was kept, the notes and the marker (always exact)."""
    structured_dropped: bool = False
    blocks_left_out: int = 0
    """Binary blocks (each replaced by a note) and resource links that did not fit."""
    estimated: bool = False
    """Some text was tokenised only as far as the limit reached: `tokens` and `cut` are
    extrapolated from it."""
    what: str = "result"
    """`result`, `resource` or `prompt`: what the marker says was cut."""
    handle: str | None = None
    """The kept text's handle for `read_result`, when it is kept and some of it was cut."""
    offset: int | None = None
    """Where the text sent ends in the kept text (characters): the next part's offset."""
    kept_seconds: float = 0.0

    def marker(self) -> str:
        left_out = []
        if self.structured_dropped:
            left_out.append("the structured content")
        if self.blocks_left_out:
            plural = "s" if self.blocks_left_out > 1 else ""
            left_out.append(f"{self.blocks_left_out:,} binary or link block{plural}")
        also = f"; left out: {', '.join(left_out)}" if left_out else ""
        about = "about " if self.estimated else ""
        advice = _ADVICE[self.what]
        if self.handle is not None:
            call = json.dumps(
                {"name": READ_RESULT, "arguments": {"handle": self.handle, "offset": self.offset}}
            )
            kept = duration(self.kept_seconds)
            advice = f"read the rest (kept {kept}) with call_tool {call}, or {advice}"
        return (
            f"[mcp-router: {self.what} truncated: {about}{self.cut:,} of {about}{self.tokens:,} "
            f"tokens cut (limit {self.limit:,}){also}; {advice}]"
        )

    def meta(self) -> dict[str, Any]:
        figures: dict[str, Any] = {
            "limit": self.limit,
            "tokens": self.tokens,
            "cut": self.cut,
            "sent": self.sent,
            "estimated": self.estimated,
            "structuredContentDropped": self.structured_dropped,
            "blocksLeftOut": self.blocks_left_out,
        }
        if self.handle is not None:
            figures |= {"handle": self.handle, "offset": self.offset}
        return figures
