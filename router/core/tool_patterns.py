"""Tool patterns: the `server/tool` and qualified-name globs that config uses to pick tools.

`router.pin` uses them today; one matcher keeps every list that names tools
(pins, and any future allow/deny list) reading the same way.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence

from router.core.catalog import Catalog, ToolRecord
from router.core.naming import SEPARATOR


def matches(record: ToolRecord, pattern: str) -> bool:
    """Whether `pattern` names `record`: by qualified name or as `server/tool`, globs allowed.
    A renamed tool (`router.shaping`) answers to its upstream's name too, so a rule written
    for the upstream's tool (a deny, a confirm) still holds under a rename."""
    if fnmatch.fnmatchcase(record.qualified_name, pattern):
        return True
    names = {record.name, record.called_as}
    return any(fnmatch.fnmatchcase(f"{record.server}/{name}", pattern) for name in names)


def covers_server(pattern: str, server: str) -> bool:
    """Whether `pattern` names every tool `server` could list: it ends in `*`, and what comes
    before that star matches the start of `server/` or of `server__` (`shop/*`, `shop/**`,
    `shop__*`, `sh*`, `*/*`, `*`). Decided from the pattern alone, so a server with no tool
    yet, or one that adds a tool later, is covered alike (a `deny` that covers a server
    denies its resources and prompts too, `ToolPolicy.permits_server`)."""
    head = pattern.rstrip("*")
    if head == pattern:
        return False
    return any(
        fnmatch.fnmatchcase(start[:cut], head)
        for start in (f"{server}/", f"{server}{SEPARATOR}")
        for cut in range(len(start) + 1)
    )


def names_server(pattern: str, server: str) -> bool:
    """Whether `pattern` may name some tool of `server` when written as `server/tool` or
    `server__tool`: some start of the pattern (cut between its parts) matches `server/` or
    `server__` (`shop/get_*`, `shop__send_email`, `*/read`, `*`). A bare tool glob (`get_*`)
    names no server, even though it matches an unprefixed server's tools."""
    # A cut inside a `[...]` set leaves an unclosed `[`, a literal, which matches no start.
    return any(
        fnmatch.fnmatchcase(start, pattern[:cut])
        for start in (f"{server}/", f"{server}{SEPARATOR}")
        for cut in range(1, len(pattern) + 1)
    )


def matching(records: Iterable[ToolRecord], patterns: Sequence[str]) -> tuple[ToolRecord, ...]:
    """Records named by any pattern, once each, in pattern order then catalog order."""
    found: dict[str, ToolRecord] = {}
    for pattern in patterns:
        for record in records:
            if matches(record, pattern):
                found.setdefault(record.qualified_name, record)
    return tuple(found.values())


def resolve_pins(catalog: Catalog, patterns: Sequence[str]) -> tuple[ToolRecord, ...]:
    """The pinned tools of `catalog`: those named by `router.pin`."""
    return matching(catalog.records, patterns)
