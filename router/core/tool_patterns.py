"""Tool patterns: the `server/tool` and qualified-name globs that config uses to pick tools.

`router.pin` uses them today; one matcher keeps every list that names tools
(pins, and any future allow/deny list) reading the same way.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence

from router.core.catalog import Catalog, ToolRecord


def matches(record: ToolRecord, pattern: str) -> bool:
    """Whether `pattern` names `record`: by qualified name or as `server/tool`, globs allowed.
    A renamed tool (`router.shaping`) answers to its upstream's name too, so a rule written
    for the upstream's tool (a deny, a confirm) still holds under a rename."""
    if fnmatch.fnmatchcase(record.qualified_name, pattern):
        return True
    names = {record.name, record.called_as}
    return any(fnmatch.fnmatchcase(f"{record.server}/{name}", pattern) for name in names)


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
