"""Resource subscriptions at one upstream, kept across its reconnects.

The router watches a resource at its upstream while a host is subscribed to it
(`router.server.sessions.subscriptions`). Every connection sets up every watch again: on the
handshake revisions with `resources/subscribe` (and `resources/unsubscribe` once nobody
watches), after which the upstream sends `notifications/resources/updated`; on 2026-07-28 with
one `subscriptions/listen` stream for every watched URI, opened again when the set changes.
An upstream that does not declare `resources.subscribe` is not asked, and its watchers hear
nothing, as from a resource that never changes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp import Client
from mcp.client.subscriptions import ListenNotSupportedError, SubscriptionLost
from mcp.shared.exceptions import MCPError
from mcp.shared.subscriptions import ResourceUpdated
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

logger = logging.getLogger(__name__)

OnUpdate = Callable[[str], Awaitable[None]]
"""Called with the upstream's URI of a watched resource that changed."""

REQUEST_TIMEOUT = 10.0
"""Seconds for the upstream to answer `resources/subscribe` or `resources/unsubscribe`."""
DELIVERY_TIMEOUT = 5.0
"""Seconds one watcher may take over one update before the next watcher's turn."""
_BACKLOG = 64


class ResourceWatches:
    """The resources watched at one upstream, and who hears of their changes."""

    def __init__(self, upstream: str) -> None:
        self._upstream = upstream
        self._watchers: dict[str, list[OnUpdate]] = {}
        self._changed = anyio.Event()
        self._updates: MemoryObjectSendStream[str] | None = None
        """Where this connection's `notifications/resources/updated` go (handshake only)."""

    @contextmanager
    def watching(self, uri: str, on_update: OnUpdate) -> Iterator[None]:
        """While inside, `on_update(uri)` runs whenever the upstream says `uri` changed."""
        self._watchers.setdefault(uri, []).append(on_update)
        self._announce()
        try:
            yield
        finally:
            callbacks = self._watchers.get(uri, [])
            if on_update in callbacks:
                callbacks.remove(on_update)
            if not callbacks:
                self._watchers.pop(uri, None)
            self._announce()

    def active(self) -> bool:
        """Whether anyone watches a resource here (a lazy upstream is not stopped then)."""
        return bool(self._watchers)

    def updated(self, uri: str) -> None:
        """The upstream sent `notifications/resources/updated` (handshake revisions). Runs on
        the SDK's receive path, so it only queues the news."""
        if self._updates is None:  # not watching; or 2026-07-28, where listen streams deliver
            return
        try:
            self._updates.send_nowait(uri)
        except anyio.WouldBlock:
            logger.warning("upstream %s: resource updates pile up; dropped %s", self._upstream, uri)

    async def serve(self, client: Client) -> None:
        """Keep every watch at `client` until cancelled (when its connection ends)."""
        capabilities = client.server_capabilities
        if not (capabilities and capabilities.resources and capabilities.resources.subscribe):
            return
        if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
            await self._listen(client)
            return
        send, receive = anyio.create_memory_object_stream[str](_BACKLOG)
        self._updates = send
        try:
            with send, receive:
                async with anyio.create_task_group() as group:
                    group.start_soon(self._deliver, receive)
                    await self._subscribe(client)
        finally:
            self._updates = None

    def _announce(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    async def _subscribe(self, client: Client) -> None:
        subscribed: set[str] = set()
        while True:
            changed = self._changed  # armed before reading the set: no change goes unseen
            wanted = set(self._watchers)
            for uri in sorted(wanted - subscribed):
                request = types.SubscribeRequest(params=types.SubscribeRequestParams(uri=uri))
                if await self._ask(client, request):
                    subscribed.add(uri)
            for uri in sorted(subscribed - wanted):
                subscribed.discard(uri)
                params = types.UnsubscribeRequestParams(uri=uri)
                await self._ask(client, types.UnsubscribeRequest(params=params))
            await changed.wait()

    async def _ask(
        self, client: Client, request: types.SubscribeRequest | types.UnsubscribeRequest
    ) -> bool:
        try:
            with anyio.fail_after(REQUEST_TIMEOUT):
                await client.session.send_request(request, types.EmptyResult)
        except (MCPError, TimeoutError) as exc:
            uri = request.params.uri
            logger.warning("upstream %s: %s %s: %s", self._upstream, request.method, uri, exc)
            return False
        return True

    async def _listen(self, client: Client) -> None:
        while True:
            changed = self._changed
            wanted = sorted(self._watchers)
            if not wanted:
                await changed.wait()
                continue
            try:
                await self._listen_until(client, wanted, changed)
            except (MCPError, SubscriptionLost, ListenNotSupportedError, TimeoutError) as exc:
                logger.warning("upstream %s: resource subscriptions: %s", self._upstream, exc)
            with anyio.move_on_after(1.0):  # a stream the upstream keeps closing: not a spin
                await changed.wait()

    async def _listen_until(self, client: Client, uris: list[str], changed: anyio.Event) -> None:
        """One listen stream for `uris`, until it ends or the watched set changes."""

        async def stop_on_change(scope: anyio.CancelScope) -> None:
            await changed.wait()
            scope.cancel()

        async with (
            client.listen(resource_subscriptions=uris) as subscription,
            anyio.create_task_group() as group,
        ):
            group.start_soon(stop_on_change, group.cancel_scope)
            async for event in subscription:
                if isinstance(event, ResourceUpdated):
                    await self._fire(event.uri)
            group.cancel_scope.cancel()

    async def _deliver(self, updates: MemoryObjectReceiveStream[str]) -> None:
        async for uri in updates:
            await self._fire(uri)

    async def _fire(self, uri: str) -> None:
        for on_update in list(self._watchers.get(uri, ())):
            try:
                with anyio.move_on_after(DELIVERY_TIMEOUT):
                    await on_update(uri)
            except Exception:  # one watcher's failure must not silence the others
                logger.warning("resource update of %s not delivered", uri, exc_info=True)
