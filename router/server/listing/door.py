"""The servers behind the router as the model is told of them: the `initialize` (and
`server/discover`) instructions and `search_tools`' description carry the directory of the
upstreams the request may see (`router.server.listing.directory`), made from the pool's
listings as they are when asked, so a server a reload added, or one that listed since, is in
the next session's instructions and the next `tools/list`."""

from __future__ import annotations

from collections.abc import Callable, Mapping

import anyio.to_thread

from router.accounting.tokens import TokenCounter
from router.core.apps import app_only
from router.server.access.authorization import Unauthorized, current_access
from router.server.listing.directory import ServerAbout, about_server, directory
from router.upstream import Upstream

INSTRUCTIONS = (
    "This server routes to many tool servers. Use search_tools with a description of the task "
    "to find the right tools (their full schemas come back), then call one with call_tool."
)
"""The first paragraph of the instructions; the directory of servers follows it."""
KEPT = 16
"""Directories kept, by what they were made of (one per set of servers a principal sees)."""


def server_about(name: str, upstream: Upstream) -> ServerAbout:
    """`upstream` as the directory names it, from its config entry and its last listing (a
    tool for an app alone is no tool the model is told of)."""
    tools = [tool for tool in upstream.tools if not app_only(tool.ui)]
    listed = bool(tools) or upstream.status.listed_at is not None
    own = upstream.tools[0].server_description if upstream.tools else None
    return ServerAbout(
        name,
        about_server(upstream.server.description, own),
        tuple(sorted(t.name for t in tools)) if listed else None,
    )


def seen_by_request() -> Callable[[str], bool] | None:
    """Whether the current request's principal sees a server; None outside a request (a
    background task keying the listing), where every server counts."""
    try:
        access = current_access()
    except Unauthorized:
        return None
    return access.sees_server


class Door:
    """The directory text, made again only when what it is made of changed."""

    def __init__(self, counter: TokenCounter | None = None) -> None:
        self._counter = counter or TokenCounter()
        self._made: dict[tuple[tuple[ServerAbout, ...], int], str] = {}

    async def warm(self, upstreams: Mapping[str, Upstream], budget: int) -> None:
        """Make the directory in a worker thread (it is kept), so the event loop is not
        stalled when making it loads the token encoding: only a directory longer in bytes
        than its budget is counted, so a small one never loads it. What the upstreams say of
        themselves is read here, on the event loop (their health reads its clock)."""
        await anyio.to_thread.run_sync(self._text, self._servers(upstreams), budget)

    def directory(self, upstreams: Mapping[str, Upstream], budget: int) -> str:
        """The directory of the upstreams the current request sees, within `budget` tokens."""
        return self._text(self._servers(upstreams), budget)

    @staticmethod
    def _servers(upstreams: Mapping[str, Upstream]) -> tuple[ServerAbout, ...]:
        seen = seen_by_request()
        return tuple(
            server_about(name, upstream)
            for name, upstream in sorted(upstreams.items())
            if seen is None or seen(name)
        )

    def _text(self, servers: tuple[ServerAbout, ...], budget: int) -> str:
        key = (servers, budget)
        text = self._made.get(key)
        if text is None:
            text = directory(servers, budget, self._counter.count_text)
            if len(self._made) >= KEPT:
                self._made.clear()
            self._made[key] = text
        return text

    def instructions(self, upstreams: Mapping[str, Upstream], budget: int) -> str:
        """The instructions: how to use the router, then the directory."""
        servers = self.directory(upstreams, budget)
        return f"{INSTRUCTIONS}\n\n{servers}" if servers else INSTRUCTIONS
