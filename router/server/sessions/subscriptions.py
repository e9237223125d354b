"""Host subscriptions to upstream resources (`resources/subscribe`, handshake revisions).

A host subscribes by the URI the router lists; the router watches the resource at the
upstream that owns it (once, however many hosts subscribe: `Upstream.watching`) and sends
every subscribed host connection `notifications/resources/updated` with the router's URI when
the upstream says it changed. The watch ends when the last host unsubscribes or is gone.
"""

from __future__ import annotations

import weakref
from contextlib import ExitStack
from dataclasses import dataclass, field

from mcp.server.connection import Connection

from router.upstream import Upstream

UPDATED = "notifications/resources/updated"


@dataclass(eq=False)
class _Watch:
    uri: str
    """The URI the router lists the resource by (what hosts subscribed to)."""
    hosts: weakref.WeakSet[Connection] = field(default_factory=weakref.WeakSet)
    stop: ExitStack = field(default_factory=ExitStack)


class HostSubscriptions:
    """Which host connections are subscribed to which upstream resource."""

    def __init__(self) -> None:
        self._watches: dict[tuple[str, str], _Watch] = {}

    def subscribe(self, host: Connection, uri: str, upstream: Upstream, upstream_uri: str) -> None:
        """`host` hears of changes to the resource `upstream` lists as `upstream_uri`."""
        key = (upstream.name, upstream_uri)
        watch = self._watches.get(key)
        if watch is None:
            watch = self._watches[key] = _Watch(uri)

            async def updated(_: str) -> None:
                await self._tell(key)

            watch.stop.enter_context(upstream.watching(upstream_uri, updated))
        watch.hosts.add(host)

    def unsubscribe(self, host: Connection, upstream: Upstream, upstream_uri: str) -> None:
        """`host` no longer hears of that resource; the last one ends the watch."""
        key = (upstream.name, upstream_uri)
        watch = self._watches.get(key)
        if watch is not None:
            watch.hosts.discard(host)
            self._end_if_unwatched(key)

    async def _tell(self, key: tuple[str, str]) -> None:
        watch = self._watches.get(key)
        if watch is None:
            return
        for host in list(watch.hosts):
            await host.notify(UPDATED, {"uri": watch.uri})  # best effort: it never raises
        self._end_if_unwatched(key)  # hosts that went away leave nobody to tell

    def _end_if_unwatched(self, key: tuple[str, str]) -> None:
        watch = self._watches.get(key)
        if watch is not None and not watch.hosts:
            del self._watches[key]
            watch.stop.close()
