"""Exact-name rescue: a query that names a tool always gets that tool.

A qualified name (`github__create_issue`) names one tool. A bare tool name (`create_issue`)
that several servers offer names none of them for sure, and a hostile server could take
another's name to be rescued in its place: it is rescued only from the servers the query
names, and otherwise left to ranking."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Collection, Sequence

from router.core.catalog import ToolRecord

_TOKEN = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.\-:/]*[A-Za-z0-9]|[A-Za-z0-9]")
_DISTINCTIVE = re.compile(r"[_\-.]|[a-z][A-Z]|\d")


def _is_distinctive(name: str) -> bool:
    """A name a user would only type to mean this tool (`get_issue`, `readFile`),
    unlike a plain word (`search`) that any query may contain."""
    return len(name) >= 4 and bool(_DISTINCTIVE.search(name))


class NameMatcher:
    """Finds the tools a query names, by qualified name or by a distinctive tool name."""

    def __init__(self, records: Sequence[ToolRecord]) -> None:
        self._qualified: dict[str, int] = {}
        self._names: dict[str, list[int]] = defaultdict(list)
        self._any_name: dict[str, list[int]] = defaultdict(list)
        self._servers = [record.server for record in records]
        for position, record in enumerate(records):
            self._qualified[record.qualified_name.lower()] = position
            self._any_name[record.name.lower()].append(position)
            if _is_distinctive(record.name):
                self._names[record.name.lower()].append(position)

    def match(self, query: str, servers: Collection[str] = ()) -> list[int]:
        """Positions of named tools, in the order the query names them; `servers` are the
        servers the query names, which a bare name shared by several servers needs."""
        whole = query.strip().lower()
        found: dict[int, None] = {}
        if whole in self._qualified:
            found[self._qualified[whole]] = None
        for position in self._unique(self._any_name.get(whole, []), servers):
            found[position] = None
        for token in _TOKEN.findall(query):
            lowered = token.lower()
            if lowered in self._qualified:
                found[self._qualified[lowered]] = None
            for position in self._unique(self._names.get(lowered, []), servers):
                found[position] = None
        return list(found)

    def _unique(self, positions: list[int], servers: Collection[str]) -> list[int]:
        if len(positions) <= 1:
            return positions
        return [p for p in positions if self._servers[p] in servers]
