"""Servers a request names: "create an issue on GitHub", "in my Notion workspace".

A server is named when every distinctive word of its name (three letters or more, not a
filler such as "mcp" or "server") appears in the request as a word. Names are the ones the
router knows the server by (its config key, or the catalog's server field).
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from router.core.catalog import split_identifier

_WORD = re.compile(r"[a-z0-9]+")
_FILLER = frozenset(
    [
        "mcp",
        "server",
        "servers",
        "api",
        "the",
        "tool",
        "tools",
        "service",
        "client",
        "for",
        "and",
        "of",
        "model",
        "context",
        "protocol",
        "official",
        "integration",
        "by",
        "with",
    ]
)


def name_words(server: str) -> tuple[str, ...]:
    """The distinctive words of a server's name, in order."""
    words = _WORD.findall(split_identifier(server).lower())
    return tuple(dict.fromkeys(w for w in words if len(w) >= 3 and w not in _FILLER))


class ServerNames:
    """Finds the servers a request names, among those of one catalog."""

    def __init__(self, servers: Iterable[str]) -> None:
        # indexed by a word each name must contain (its first), and by its joined form, so
        # a query looks at the few servers it could name, not at every server
        self._by_first: dict[str, list[tuple[str, tuple[str, ...]]]] = {}
        self._by_joined: dict[str, list[str]] = {}
        for server in dict.fromkeys(servers):
            words = name_words(server)
            if words:
                self._by_first.setdefault(words[0], []).append((server, words))
                self._by_joined.setdefault("".join(words), []).append(server)

    def named(self, query: str) -> set[str]:
        said = {*_WORD.findall(query.lower()), *_WORD.findall(split_identifier(query).lower())}
        found: set[str] = set()
        for word in said:
            for server, words in self._by_first.get(word, ()):
                if said.issuperset(words):
                    found.add(server)
            found.update(self._by_joined.get(word, ()))  # "GitHub" said as "github"
        return found
