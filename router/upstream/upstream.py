"""One upstream server, owned by one task for its whole life.

`Upstream.run` is that task: it opens the SDK `Client`, lists everything, serves until the
connection ends, and reconnects with backoff; the client is entered and exited in that
task only (a client shared across tasks fails with "exit cancel scope in a different
task"). Other tasks call through `call_tool` & co., which fail fast while it is down.

What their failures become is `router.upstream.failures`; re-listing when the upstream says
a list changed is `router.upstream.listing.relisting`, run by this task beside the connection.
"""

from __future__ import annotations

import logging
import math
from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from typing import TYPE_CHECKING, TypeVar

import anyio
import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router import __version__
from router.config import EffectiveTimeouts, RemoteServer, StdioServer
from router.core.catalog import ToolSpec
from router.core.changes import Changes
from router.core.errors import SignInNeeded, ToolNotFound, UpstreamUnavailable
from router.upstream.backoff import BackoffPolicy
from router.upstream.connection.capabilities import carry_host_capabilities
from router.upstream.connection.eras import HostEra, mirrored_mode
from router.upstream.connection.host_requests import HostCallbacks, HostRequests, tell_roots_changed
from router.upstream.connection.inbound import log_callback, message_handler
from router.upstream.connection.liveness import watch as watch_liveness
from router.upstream.connection.negotiation import (
    ProtocolMemory,
    adopt_discover,
    negotiated_mode,
    upstream_key,
)
from router.upstream.connection.transport import open_transport, transport_name
from router.upstream.demand import Demand
from router.upstream.failures import (
    ProgressClock,
    connect_timeout,
    describe,
    is_protocol_failure,
    push_back,
    send_mapped,
    sign_in_needed,
)
from router.upstream.health import Health
from router.upstream.listing.cache import CachedListing, ListingCache
from router.upstream.listing.fetch import Listing, drop_last_message, list_everything
from router.upstream.listing.filtering import ToolFilter
from router.upstream.listing.known import KnownListing
from router.upstream.listing.relisting import Relisting
from router.upstream.listing.resource_watch import OnUpdate, ResourceWatches
from router.upstream.state import UpstreamState, UpstreamStatus
from router.upstream.stderr import StderrTail

if TYPE_CHECKING:  # a remote upstream's sign-in: loaded with the first (`remote_auth`)
    from router.upstream.auth.upstreams import ConnectionAuth
logger = logging.getLogger(__name__)

CLIENT_INFO = types.Implementation(name="mcp-router", version=__version__)
SIGN_IN_SETTLE = 2.0
"""Seconds a call whose connection closed waits to learn whether a sign-in closed it."""

ToolsChanged = Callable[[str, tuple[ToolSpec, ...]], Awaitable[None]]
"""`(server, tools)`, awaited in the upstream's task after every (re)listing."""
StatusChanged = Callable[[UpstreamStatus], None]

_T = TypeVar("_T")


class Upstream:
    """A configured upstream: its connection, its listing and its health."""

    def __init__(
        self,
        name: str,
        server: StdioServer | RemoteServer,
        *,
        timeouts: EffectiveTimeouts | None = None,
        tool_filter: ToolFilter | None = None,
        on_tools_changed: ToolsChanged | None = None,
        on_status_changed: StatusChanged | None = None,
        memory: ProtocolMemory | None = None,
        backoff: BackoffPolicy | None = None,
        host: HostRequests | None = None,
        auth: ConnectionAuth | None = None,
        era: HostEra | None = None,
        lazy: bool = False,
        cached: CachedListing | None = None,
        listings: ListingCache | None = None,
    ) -> None:
        """`lazy`: once its listing is known (`cached`, or listed), see `Demand`."""
        self.name = name
        self.auth = auth
        self._era = era
        self.server = server
        self.timeouts = timeouts or EffectiveTimeouts()
        self._filter = tool_filter or ToolFilter()
        self._on_tools_changed = on_tools_changed
        self._on_status_changed = on_status_changed
        self._memory = memory or ProtocolMemory()
        self._backoff = backoff or BackoffPolicy()
        self._host = host
        self._host_callbacks = (
            HostCallbacks(name, host, self.timeouts.call).as_client_options() if host else {}
        )
        self._client: Client | None = None
        self._ended = anyio.Event()
        self._retry_now = anyio.Event()
        self._changed = Changes()
        self._watches = ResourceWatches(name)
        self._stderr = StderrTail()
        self._lost: str | None = None
        self._handed_on: Client | None = None  # the client whose listing went to the index
        self._demand = Demand(name, lazy=lazy, idle=self.timeouts.idle)
        self._listings = listings
        self._known = KnownListing(name, self._filter, server.description)
        if lazy and cached is not None:
            self._known.install(cached, from_cache=True)
        self._health = Health(self._touch, idle=self._known.from_cache)

    # -- what the server layer reads -------------------------------------------------

    @property
    def state(self) -> UpstreamState:
        return self._health.state

    @property
    def status(self) -> UpstreamStatus:
        health, known = self._health, self._known
        info, listing = known.server_info, known.listing
        return UpstreamStatus(
            name=self.name,
            state=health.state,
            transport=transport_name(self.server),
            protocol_version=known.protocol_version,
            server_name=info.name if info else None,
            server_version=info.version if info else None,
            tool_count=len(known.tools),
            resource_count=len(listing.resources) + len(listing.resource_templates),
            prompt_count=len(listing.prompts),
            attempts=health.attempts,
            settled=health.settled,
            connect_seconds=health.connect_seconds,
            last_error=health.last_error,
            last_stderr=health.last_stderr,
            retry_in=health.retry_in(),
            sign_in_needed=health.sign_in_needed,
            lazy=self._demand.lazy,
            listed_at=known.raw.listed_at if known.raw else None,
            from_cache=known.from_cache,
            extensions=known.extensions,
        )

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        """The last listing's tools, filtered; kept while the upstream is down."""
        return self._known.tools

    @property
    def listing(self) -> Listing:
        """The last complete listing as the SDK types it (tools filtered)."""
        return self._known.listing

    async def wait_for(self, *states: UpstreamState) -> UpstreamStatus:
        """Wait until the upstream is in one of `states` (bound it with `fail_after`)."""
        while self._health.state not in states:
            await self._changed.wait()
        return self.status

    async def wait_settled(self) -> UpstreamStatus:
        """Wait until the first connection attempt has succeeded or failed."""
        while not self._health.settled:
            await self._changed.wait()
        return self.status

    def restart(self) -> None:
        """Drop the current connection, if any, and reconnect without waiting out the backoff."""
        self._retry_now.set()
        self._ended.set()

    def retime(self, timeouts: EffectiveTimeouts) -> None:
        """New timeouts: requests from now on use them, connections from the next one."""
        self.timeouts = timeouts
        self._demand.retime(timeouts.idle)

    # -- requests from other tasks ---------------------------------------------------

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, object] | None = None,
        *,
        progress_callback: ProgressFnT | None = None,
        meta: types.RequestParamsMeta | None = None,
    ) -> types.CallToolResult:
        """Forward `tools/call`; the result, `isError` included, comes back unchanged.

        Cancelling the caller cancels the upstream request (the SDK sends
        `notifications/cancelled`); `progress_callback` receives the upstream's progress.

        Raises:
            MCPError: The upstream answered with a JSON-RPC error (its code is kept).
            ToolNotFound: The tool is excluded by the config's filters.
            UpstreamUnavailable: The upstream is down, or its connection dropped mid-call.
            UpstreamTimeout: No answer within the upstream's call timeout.
            UpstreamProtocolError: The answer is not a valid result.
        """
        if not self.allows(tool):
            raise ToolNotFound(f"{self.name}/{tool}")
        # Progress starts the call timeout again (up to `timeouts.call_max`), so the
        # request always carries a progress token: a long call that reports is not cut.
        clock = ProgressClock(self.timeouts.total_call_limit, progress_callback)
        return await self.request(
            f"tools/call {tool!r}",
            lambda client: client.call_tool(
                tool, arguments, progress_callback=clock.callback, meta=meta
            ),
            clock,
        )

    def allows(self, tool: str) -> bool:
        """Whether the config's filters let `tool` be called."""
        return self._filter.allows(self.name, tool)

    @property
    def speaks_modern(self) -> bool:
        """Whether the live connection speaks 2026-07-28 (or later)."""
        client = self._client
        return client is not None and client.protocol_version in MODERN_PROTOCOL_VERSIONS

    async def read_resource(self, uri: str) -> types.ReadResourceResult:
        """Forward `resources/read` (errors as for `call_tool`)."""
        return await self.request(
            "resources/read", lambda client: client.read_resource(uri, cache_mode="bypass")
        )

    def watching(self, uri: str, on_update: OnUpdate) -> AbstractContextManager[None]:
        """While inside, `on_update(uri)` runs whenever the upstream says the resource at
        `uri` changed, across reconnects (`router.upstream.listing.resource_watch`)."""
        return self._watches.watching(uri, on_update)

    async def get_prompt(
        self, name: str, arguments: dict[str, str] | None = None
    ) -> types.GetPromptResult:
        """Forward `prompts/get` (errors as for `call_tool`)."""
        return await self.request(
            f"prompts/get {name!r}", lambda client: client.get_prompt(name, arguments)
        )

    async def complete(
        self,
        ref: types.PromptReference | types.ResourceTemplateReference,
        argument: dict[str, str],
        context_arguments: dict[str, str] | None = None,
    ) -> types.CompleteResult:
        """Forward `completion/complete` (errors as for `call_tool`)."""
        return await self.request(
            "completion/complete",
            lambda client: client.complete(ref, argument, context_arguments),
        )

    async def request(
        self,
        what: str,
        send: Callable[[Client], Awaitable[_T]],
        clock: ProgressClock | None = None,
    ) -> _T:
        """Send on the live connection with the call timeout (pushed back by progress with
        a `clock`); map failures to `UpstreamError`s (`router.upstream.failures`). A lazy
        upstream that is not running is started first (`wake`)."""
        with self._demand.using():
            await self._started()
            client, ended = self._client, self._ended
            if client is None:
                raise UpstreamUnavailable(self.name, self._health.why_down())
            try:
                return await send_mapped(
                    self.name,
                    what,
                    lambda: send(client),
                    limit=self.timeouts.call,
                    ended=ended,
                    replaced=lambda: self._client is not client,
                    clock=clock,
                )
            except (MCPError, UpstreamUnavailable) as exc:
                if isinstance(exc, MCPError) and exc.code != types.CONNECTION_CLOSED:
                    raise
                # A sign-in needed mid-call ends the connection from inside its auth flow: say
                # so; a close the SDK saw first (a reload stopped it) is the connection lost.
                with anyio.move_on_after(SIGN_IN_SETTLE):
                    await self.wait_for(UpstreamState.UNHEALTHY, UpstreamState.STOPPED)
                if self._health.sign_in_needed and self.auth is not None:
                    raise SignInNeeded(self.name, self.auth.hint) from exc
                if isinstance(exc, MCPError) and (ended.is_set() or self._client is not client):
                    raise UpstreamUnavailable(self.name, f"{what}: connection lost") from exc
                raise

    async def wake(self) -> bool:
        """Start a lazy upstream that is not running, as a request would, and return once what
        it lists now is handed on (`on_tools_changed`), for a call to decide on (tool pinning):
        whether it had to start. `UpstreamUnavailable` if it did not start."""
        with self._demand.using():
            return await self._started()

    def keep_running(self) -> Callable[[], None]:
        """In use until the returned function is called: not stopped, then started unchecked."""
        return self._demand.hold()

    async def _started(self) -> bool:
        if self._live() or not self._known.known:
            return False
        await self._demand.start(self._health, self._changed, self._live, self.timeouts)
        return self._live()

    def _live(self) -> bool:
        return self._client is not None and self._handed_on is self._client

    async def roots_changed(self) -> None:
        """Tell the upstream that the host's roots changed, so it asks `roots/list` again
        (`host_requests.tell_roots_changed`); only when the router relays roots at all."""
        if self._host_callbacks and self._client is not None:
            await tell_roots_changed(self.name, self._client, self.timeouts.call)

    # -- the owner task --------------------------------------------------------------

    async def run(self) -> None:
        """Connect, serve and reconnect until cancelled; never raises otherwise. A lazy
        upstream whose listing is known waits for a request first, and after an idle stop."""
        failures, restarting = 0, False
        try:
            if self._known.from_cache:
                await self._publish_tools()  # its cached tools are searchable at once
            while True:
                if self._demand.lazy and self._known.known and not restarting:
                    self._health.park()
                    await self._demand.until_needed()
                self._health.connecting()
                error = await self._connect_and_serve()
                if error is None:  # stopped for want of requests
                    failures = 0
                    continue
                if self._health.was_stable(self._backoff.stable_after):
                    failures = 0
                failures += 1
                delay = 0.0 if self._retry_now.is_set() else self._backoff.delay(failures)
                why, signing = describe(error), sign_in_needed(error) is not None
                self._health.failed(why, self._stderr.text(), delay, signing)
                logger.warning(
                    "upstream %s: %s; retry %d in %.1fs", self.name, why, failures, delay
                )
                with anyio.move_on_after(delay):
                    await self._retry_now.wait()
                restarting, self._retry_now = self._retry_now.is_set(), anyio.Event()
        finally:
            self._client = None
            self._health.stopped()

    async def _connect_and_serve(self) -> Exception | None:
        """One connection from spawn to its end; returns why it ended (None: idle)."""
        key = upstream_key(self.name, self.server)
        setting, remembered = self.server.connect_mode, self._memory.recall(key)
        mode, mirrored, extensions = await mirrored_mode(self._era, setting, remembered, key)
        ended = self._ended = anyio.Event()
        self._stderr.clear()  # this connection's own lines only
        self._lost = None
        relisting = Relisting(
            self.name,
            limit=self.timeouts.connect,
            current=lambda: self._known.listing,
            adopt=self._relisted,
            publish_tools=self._publish_tools,
        )
        began, phase, auth = anyio.current_time(), "handshake", None
        deadline = anyio.CancelScope(deadline=began + self.timeouts.connect)
        if self.auth is not None:  # a person signing in pushes the deadline back
            connected = lambda: self._client is not None  # noqa: E731
            auth = await self.auth.for_connection(self._host, connected, push_back(deadline))
        client = Client(
            open_transport(self.name, self.server, ended, self._stderr, auth),
            mode=mode,
            cache=None,  # the router caches listings itself; every re-list must be fresh
            client_info=CLIENT_INFO,
            extensions=extensions or None,  # the one host's, at `initialize` (eras)
            message_handler=message_handler(self.name, self._watches, relisting),
            logging_callback=log_callback(self.name, self._host),
            # 2026-07-28 upstreams log only for requests that opt in: with a host to pass
            # them to, every level comes, and the host's own level filters (relay).
            log_level="debug" if self._host is not None else None,
            **self._host_callbacks,
        )
        try:
            with deadline:
                async with client:
                    if mode in MODERN_PROTOCOL_VERSIONS:
                        phase = "server/discover"
                        await adopt_discover(client, mode)
                    carry_host_capabilities(client)  # after the last adopt: it sets the stamp
                    phase = "listing"
                    listing = await list_everything(self.name, client)
                    await drop_last_message(client, listing)
                    deadline.deadline = math.inf
                    if setting == "auto" and not mirrored:
                        await self._memory.remember(key, negotiated_mode(client))
                    self._go_healthy(client, listing, anyio.current_time() - began)
                    try:
                        await self._publish_tools()
                        await self._serve(client, relisting, ended)
                    finally:
                        self._client = None
        except Exception as exc:
            if deadline.cancel_called:
                # SDK teardown may re-raise our deadline's cancellation as another error.
                return connect_timeout(self.name, phase, self.timeouts.connect)
            if mode != self.server.connect_mode and is_protocol_failure(exc):
                await self._memory.forget(key)  # what worked before failed: probe afresh
            if mirrored and self._era and self._era.refused(key, phase, exc):
                return await self._connect_and_serve()  # 2026-07-28 only: its era, at once
            return exc
        if deadline.cancelled_caught:
            return connect_timeout(self.name, phase, self.timeouts.connect)
        if self._demand.parked:
            return None
        reason = "restart requested" if self._retry_now.is_set() else "connection closed"
        return UpstreamUnavailable(self.name, self._lost or reason)

    def _go_healthy(self, client: Client, listing: Listing, took: float) -> None:
        self._known.listed(client, listing)
        self._client = client
        self._health.healthy(took)
        logger.info(
            "upstream %s: healthy (%s, %d tools, %.2fs)",
            self.name,
            self._known.protocol_version,
            len(self._known.tools),
            took,
        )

    def _relisted(self, client: Client, listing: Listing) -> None:
        """Adopt a re-listing (`Relisting`, in its task) and tell the status watchers."""
        self._known.listed(client, listing)
        self._touch()

    async def _publish_tools(self) -> None:
        """Keep the listing in the cache folder, then hand the tools to the index."""
        known = self._known
        if self._listings is not None and known.raw is not None and not known.from_cache:
            await self._listings.save(self.name, self.server, known.raw)
        try:
            if self._on_tools_changed is not None:
                await self._on_tools_changed(self.name, known.tools)
        except Exception:
            logger.exception("upstream %s: the tools-changed callback failed", self.name)
        self._handed_on = self._client
        self._changed.notify()  # a lazy start waits for this (`_started`)

    async def _serve(self, client: Client, relisting: Relisting, ended: anyio.Event) -> None:
        """Re-list on change notifications until the connection ends (or `restart`)."""
        async with anyio.create_task_group() as tg:
            tg.start_soon(relisting.run, client, ended)
            tg.start_soon(self._watches.serve, client)
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                tg.start_soon(relisting.listen, client)
            if isinstance(self.server, RemoteServer):
                tg.start_soon(self._watch_liveness, client, ended)
            if self._demand.lazy:
                tg.start_soon(self._stop_when_idle, ended)
            await ended.wait()
            tg.cancel_scope.cancel()

    async def _stop_when_idle(self, ended: anyio.Event) -> None:
        await self._demand.until_idle(self._watches.active)
        self._client = None  # a request from now on starts it again
        logger.info("upstream %s: stopped after %gs without requests", self.name, self._demand.idle)
        ended.set()

    async def _watch_liveness(self, client: Client, ended: anyio.Event) -> None:
        """Remote only: a stdio child's death ends its pipe, an HTTP server's does not."""
        timeouts = self.timeouts
        self._lost = await watch_liveness(client, interval=timeouts.ping, deadline=timeouts.connect)
        ended.set()

    def _touch(self) -> None:
        """Tell waiters and the status callback that something changed."""
        self._changed.notify()
        if self._on_status_changed is not None:
            try:
                self._on_status_changed(self.status)
            except Exception:
                logger.exception("upstream %s: the status callback failed", self.name)
