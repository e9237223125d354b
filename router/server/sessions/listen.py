"""`subscriptions/listen` for 2026-07-28 hosts (SEP-2575): how they hear that the router's
tools, prompts or resources changed, and that a resource they watch was updated.

On 2026-07-28 change notifications travel only on a listen stream, and `server/discover`
declares `listChanged` (and `resources.subscribe`) exactly when the method is served. So the
router serves it with the SDK's `ListenHandler` over one bus per router state, and publishes
what really changes: its tool listing as a 2026-07-28 host gets it (every tool in pass-through
mode, else the pins and the meta-tools), the aggregated prompts, the aggregated resources and
templates, checked after every index swap and upstream change. A stream that asks for
resource updates gets them for as long as it is open: each URI it names is watched at its
upstream meanwhile (`Upstream.watching`, as `resources/subscribe` does for handshake hosts).

Streams are a shared table: `MAX_STREAMS` in all, and with identities at most
`STREAMS_PER_PRINCIPAL` for one principal, so one principal cannot take every slot. A listen
past its principal's share is refused with -32600 (Invalid Request) before it is
acknowledged, naming the share; past the global bound the SDK's handler refuses it (-32603).

Each watch is resolved among the upstreams the caller may see only (a `ui://` URI by the rule
every resource path follows, `router.server.listing.routes.served_routes`), and metered and
audited as a `resources/subscribe` is (`Watch`, given by `router.server.lifecycle.app`): a
stream over its caller's quota is refused. A stream honours only the URIs it watches.

A stream may also name tasks (`taskIds`, the tasks extension): the router serves its streams
`around` `router.server.tasks.listening` (given by `router.server.lifecycle.app`, as the tasks
read the router state that holds these streams).
"""

from __future__ import annotations

import contextlib
import functools
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.subscriptions import (
    InMemorySubscriptionBus,
    ListenHandler,
    PromptsListChanged,
    ResourcesListChanged,
    ResourceUpdated,
    ToolsListChanged,
)
from mcp.shared.exceptions import MCPError

from router.core.errors import InvalidParams
from router.server.access.visibility import current_principal
from router.server.listing.passthrough import every_tool, listing_key
from router.server.listing.routes import Routes, listing_names, owner_of_uri, served_routes

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

    from router.core.changes import Changes
    from router.server.listing.index import LiveIndex
    from router.upstream import Upstream, UpstreamPool
    from router.upstream.listing.resource_watch import OnUpdate

MAX_STREAMS = 256
"""Listen streams open at once, across every host of this router."""
STREAMS_PER_PRINCIPAL = 16
"""Listen streams one principal may hold open at once (a host needs one per connection)."""
MAX_WATCHED = 100
"""Resource URIs one stream may watch."""
_Keys = tuple[str, tuple[str, ...], tuple[str, ...]]
Watch = Callable[[str, str, str, Callable[[], None]], Awaitable[None]]
"""How a stream's watch starts: given the URI as listed, its owner, the owner's own URI and
`start` (which watches it), it meters and audits the watch as a resources/subscribe and calls
`start` (`router.server.calls.passage`), or raises and the stream is refused."""
Around = Callable[
    [ListenHandler, ServerRequestContext[Any, Any], types.SubscriptionsListenRequestParams],
    Awaitable[types.SubscriptionsListenResult],
]
"""What serves a stream around the SDK's handler (its tasks' frames beside its own)."""


class ListenStreams:
    """The router's listen streams and what it publishes on them."""

    def __init__(
        self, index: LiveIndex, pool: UpstreamPool, mode: str, around: Around | None = None
    ) -> None:
        """`mode` is `router.mode`: pass-through (`all`) lists every tool."""
        self._around = around
        self.bus = InMemorySubscriptionBus()
        self._handler = ListenHandler(self.bus, max_subscriptions=MAX_STREAMS)
        self._index = index
        self._pool = pool
        self._mode = mode
        self._by_principal: Counter[str] = Counter()

    async def serve(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.SubscriptionsListenRequestParams,
        upstreams: Mapping[str, Upstream],
        watch: Watch,
    ) -> types.SubscriptionsListenResult:
        """One listen stream, its resource URIs watched while it runs at the owners among
        `upstreams` (those the caller may see), each watch started through `watch`."""
        principal = current_principal()
        with self._share(principal.key if principal is not None else None):
            return await self._serve(ctx, params, upstreams, watch)

    @contextlib.contextmanager
    def _share(self, key: str | None) -> Iterator[None]:
        """One of the principal's `STREAMS_PER_PRINCIPAL` held for the stream's life (None:
        no identities, one principal for every caller, bound by `MAX_STREAMS` alone)."""
        if key is None:
            yield
            return
        if self._by_principal[key] >= STREAMS_PER_PRINCIPAL:
            raise MCPError(
                types.INVALID_REQUEST,
                f"mcp-router: this principal holds {STREAMS_PER_PRINCIPAL} listen streams "
                "open already, its share of this router; close one first",
                {"streams_per_principal": STREAMS_PER_PRINCIPAL},
            )
        self._by_principal[key] += 1
        try:
            yield
        finally:
            self._by_principal[key] -= 1
            if not self._by_principal[key]:
                del self._by_principal[key]

    async def _serve(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.SubscriptionsListenRequestParams,
        upstreams: Mapping[str, Upstream],
        watch: Watch,
    ) -> types.SubscriptionsListenResult:
        routes = served_routes(self._index.snapshot.ui_uris, self._pool.upstreams, upstreams)
        with contextlib.ExitStack() as watches:
            requested = params.notifications.resource_subscriptions
            if requested:  # the stream honours the URIs it watches, no other
                seen = await self._watch_all(watches, routes, upstreams, requested, watch)
                notifications = params.notifications.model_copy(
                    update={"resource_subscriptions": seen}
                )
                params = params.model_copy(update={"notifications": notifications})
            if self._around is None:
                return await self._handler(ctx, params)
            return await self._around(self._handler, ctx, params)

    async def _watch_all(
        self,
        watches: contextlib.ExitStack[bool | None],
        routes: Routes,
        upstreams: Mapping[str, Upstream],
        requested: Sequence[str],
        watch: Watch,
    ) -> list[str]:
        """Watch each of the first `MAX_WATCHED` URIs `requested` that the caller sees, each
        through `watch`, for as long as `watches` is open; the URIs watched."""
        seen: list[str] = []
        for uri in requested[:MAX_WATCHED]:
            try:
                owner, upstream_uri = owner_of_uri(routes, uri)
            except InvalidParams:
                continue  # nothing the caller sees lists it: nothing will update it
            start = functools.partial(self._watch, watches, upstreams[owner], upstream_uri, uri)
            await watch(uri, owner, upstream_uri, start)
            seen.append(uri)
        return seen

    def _watch(
        self, watches: contextlib.ExitStack[bool | None], upstream: Upstream, at: str, uri: str
    ) -> None:
        watches.enter_context(upstream.watching(at, self._updated(uri)))

    def _updated(self, uri: str) -> OnUpdate:
        async def updated(_upstream_uri: str) -> None:
            await self.bus.publish(ResourceUpdated(uri=uri))

        return updated

    async def run(self, changes: Changes) -> None:
        """Publish every change of the listings (`changes` fires on every index swap and
        upstream change), for the router's life."""
        shown = self._keys()
        while True:
            await changes.wait()
            keys = self._keys()
            if keys[0] != shown[0]:
                await self.bus.publish(ToolsListChanged())
            if keys[1] != shown[1]:
                await self.bus.publish(PromptsListChanged())
            if keys[2] != shown[2]:
                await self.bus.publish(ResourcesListChanged())
            shown = keys

    def _keys(self) -> _Keys:
        snapshot = self._index.snapshot
        if self._mode == "all":
            tools = listing_key(every_tool(snapshot, self._pool))
        else:
            tools = "\n".join(record.qualified_name for record in snapshot.pinned)
        prompts, resources = listing_names(self._pool.upstreams, snapshot.ui_uris)
        return tools, prompts, resources
