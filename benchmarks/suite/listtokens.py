"""Exact token counts of tool lists without re-encoding each list.

cl100k splits text into pieces with a regex before any merge, and no merge crosses a
piece. In a serialised tool list the only piece that spans two entries is the run of
punctuation where they meet (`}}},{"`), so a list's count is the sum of its entries'
counts (cached per tool) plus, at each join, the count of the joined run minus the
counts of its two halves. That equals `TokenCounter.count_tools` token for token (the
`exact_check` of every bench run verifies it), at the cost of a few dictionary lookups.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import pairwise

from router.accounting.formats import ToolFormat, serialise, to_format, tool_list_payload
from router.accounting.tokens import TokenCounter
from router.core.catalog import ToolRecord


def _punctuation(char: str) -> bool:
    """Neither letter, digit nor space: what the encoder's punctuation pieces are made of."""
    return not (char.isspace() or char.isalpha() or char.isnumeric())


def trailing_run(text: str) -> str:
    """The last piece when it is punctuation (with the one space it may start with)."""
    end = len(text)
    while end > 0 and _punctuation(text[end - 1]):
        end -= 1
    if end > 0 and text[end - 1] == " ":
        end -= 1
    return text[end:]


def leading_run(text: str) -> str:
    start = 0
    while start < len(text) and _punctuation(text[start]):
        start += 1
    return text[:start]


class ListTokens:
    """Counts tool lists in any format exactly, each tool entry encoded once."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._texts: dict[str, int] = {}
        self._entries: dict[tuple[ToolRecord, str], tuple[int, str, str]] = {}

    def _count(self, text: str) -> int:
        count = self._texts.get(text)
        if count is None:
            count = self._texts[text] = self.counter.count_text(text)
        return count

    def _entry(self, tool: ToolRecord, fmt: str) -> tuple[int, str, str]:
        key = (tool, fmt)
        entry = self._entries.get(key)
        if entry is None:
            text = serialise(to_format(tool, fmt))
            entry = self._entries[key] = (
                self._count(text),
                trailing_run(text),
                leading_run(text),
            )
        return entry

    def _join(self, left: str, separator: str, right: str) -> int:
        return self._count(left + separator + right) - self._count(left) - self._count(right)

    def count(self, tools: Sequence[ToolRecord], fmt: ToolFormat | str) -> int:
        """Tokens of `{"tools": [...]}` (MCP) or `[...]` (OpenAI, Anthropic) holding `tools`."""
        fmt = ToolFormat(fmt).value
        empty = serialise(tool_list_payload([], fmt))
        if not tools:
            return self._count(empty)
        opening, closing = empty[:-1], empty[-1:]  # '{"tools":[' + ']}' or '[' + ']'
        if fmt == ToolFormat.MCP.value:
            opening, closing = empty[:-2], empty[-2:]
        entries = [self._entry(tool, fmt) for tool in tools]
        total = self._count(opening) + self._count(closing) + sum(e[0] for e in entries)
        total += self._join(trailing_run(opening), "", entries[0][2])
        for (_, tail, _), (_, _, head) in pairwise(entries):
            total += self._join(tail, ",", head)
        total += self._join(entries[-1][1], "", closing)
        return total
