"""Which upstream tools the router exposes: `include` / `exclude` globs, global and per server.

A pattern with a `/` matches `server/tool`; one without matches the tool name alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from fnmatch import fnmatchcase

from router.config import RouterConfig


def matches(pattern: str, server: str, tool: str) -> bool:
    """Whether a glob names this tool (`get_*`, `time/*`, `*/delete_*`)."""
    subject = f"{server}/{tool}" if "/" in pattern else tool
    return fnmatchcase(subject, pattern)


@dataclass(frozen=True, slots=True)
class ToolFilter:
    """Allow a tool when it matches some `include` (if any are given) and no `exclude`."""

    include: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()

    @classmethod
    def for_server(cls, config: RouterConfig, server: str) -> ToolFilter:
        entry = config.servers[server]
        return cls(
            include=(*config.router.include, *entry.include),
            exclude=(*config.router.exclude, *entry.exclude),
        )

    def allows(self, server: str, tool: str) -> bool:
        if self.include and not any(matches(p, server, tool) for p in self.include):
            return False
        return not any(matches(p, server, tool) for p in self.exclude)
