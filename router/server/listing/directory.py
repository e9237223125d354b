"""What is behind the door: the servers behind the router, one line each, within a token
budget, for the `initialize` instructions and `search_tools`' description (docs/serving.md).

A model that sees only `search_tools` cannot know that a chat, a code host or a database is
reachable; told the servers' names and what each is for, it searches when a request needs
one and aims its query. The text is made from the config and the servers' listings alone:
sorted by name, no timestamps, so the same config and listings give the same bytes at every
start and a host's prompt cache survives.

Each server's line says, first found: the config entry's `description`, what the server says
about itself (its title, description and instructions, from its last listing, live or from
the cache folder), else its tools' first names (sorted). A server that has not listed yet
(a remote one still connecting at the first start, with no cached listing) has its config
`description` or its name alone. Every server's words are cut to one length, the longest at
which the whole fits the budget (`router.servers_summary_tokens`); when even the names alone
do not fit, the first names that fit are given and the rest counted.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

HEADER = "Servers behind this router (search_tools finds their tools):"
LINE_CHARS = 160
"""The longest a server's words get in its line."""
FEWEST_CHARS = 16
"""Shorter words than this say nothing: the line is the name (and tool count) alone."""
_HEADINGS = re.compile(r"(?m)^\s*#+\s")
_MARKS = re.compile(r"[*`]")
"""Markdown's headings, emphasis and code marks: instructions are often written in it."""
NAMED_TOOLS = 4
"""Tools named for a server that says nothing about itself."""


@dataclass(frozen=True, slots=True)
class ServerAbout:
    """One server as the directory names it."""

    name: str
    about: str | None = None
    """The config's description, else the server's own words; None: neither."""
    tools: tuple[str, ...] | None = None
    """Its tools' names as listed (filtered), sorted; None: not listed yet."""


def about_server(config_description: str | None, own: str | None) -> str | None:
    """What a server's line says it is for: the config's words first, then its own."""
    for text in (config_description, own):
        words = " ".join(_MARKS.sub("", _HEADINGS.sub(" ", text or "")).split())
        if words:
            return words
    return None


def _cut(text: str, chars: int) -> str:
    """`text` at most `chars` long, ended at a word where one ends near enough."""
    if len(text) <= chars:
        return text
    head = text[: chars - 1]
    space = head.rfind(" ")
    if space > chars // 2:
        head = head[:space]
    return head.rstrip(" ,;:.") + "…"


def _line(server: ServerAbout, chars: int) -> str:
    count = ""
    if server.tools is not None:
        count = f" ({len(server.tools)} tool{'s' if len(server.tools) != 1 else ''})"
    words = server.about
    if words is None and server.tools:
        named = ", ".join(server.tools[:NAMED_TOOLS])
        words = f"tools {named}{', …' if len(server.tools) > NAMED_TOOLS else ''}"
    if not words or chars <= 0:
        return f"- {server.name}{count}"
    return f"- {server.name}{count}: {_cut(words, chars)}"


def directory(servers: Sequence[ServerAbout], budget: int, count: Callable[[str], int]) -> str:
    """The servers' lines under a header, within `budget` tokens as `count` counts them;
    "" for no servers or a budget of 0. `count` is a BPE tokenizer's: never more tokens than
    the text has UTF-8 bytes."""
    ordered = sorted(servers, key=lambda s: s.name)
    if not ordered or budget <= 0:
        return ""

    def fits(text: str) -> bool:
        # A token is at least one byte: a text no longer in bytes than the budget fits
        # uncounted, so a small directory never loads the encoding (a start-up cost).
        return len(text.encode()) <= budget or count(text) <= budget

    def text(chars: int) -> str:
        return "\n".join([HEADER, *(_line(s, chars) for s in ordered)])

    if fits(text(LINE_CHARS)):
        return text(LINE_CHARS)
    # The longest words that fit, found by halving (a shorter cut never costs more tokens).
    low, high = 0, LINE_CHARS
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (middle, high) if fits(text(middle)) else (low, middle)
    if low >= FEWEST_CHARS:
        return text(low)
    if fits(text(0)):
        return text(0)
    # Not even the names fit: the first ones that do, and the rest counted.
    lines = [HEADER]
    for shown, server in enumerate(ordered):
        rest = len(ordered) - shown
        tail = f"- … and {rest} more"
        line = _line(server, 0)
        if not fits("\n".join([*lines, line, tail])):
            return "\n".join([*lines, tail]) if fits("\n".join([*lines, tail])) else ""
        lines.append(line)
    return "\n".join(lines)
