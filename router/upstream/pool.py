"""All configured upstreams, started together and served side by side.

With a listing cache (`router.upstream.listing.cache`) an upstream may be lazy (`router.start`):
not started until a request needs it, its tools indexed from its cached listing meanwhile. A
config changed while serving is applied through `reconfigure`: each added, removed or
changed upstream starts, stops or restarts alone. A request for a server the pool does not
serve (removed by a reload, restarting, or never configured) is `UpstreamUnavailable`,
naming it and why: the index may still hold a removed server's tools for a moment.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Mapping
from types import TracebackType
from typing import TYPE_CHECKING, Self

import anyio
import anyio.abc
import anyio.to_thread
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from router.config import RemoteServer, RouterConfig, StdioServer
from router.config.diff import ConfigDiff
from router.config.personal import is_personal
from router.core.catalog import ToolSpec
from router.core.errors import UpstreamUnavailable
from router.store.records import Records
from router.upstream.auth import remote_auth
from router.upstream.backoff import BackoffPolicy
from router.upstream.connection.eras import HostEra
from router.upstream.connection.host_requests import HostRequests, InputAnswers
from router.upstream.connection.negotiation import ProtocolMemory
from router.upstream.connection.rounds import call_tool_round, get_prompt_round, read_resource_round
from router.upstream.connection.twins import HandshakeTwins
from router.upstream.listing.cache import CachedListing, ListingCache
from router.upstream.listing.filtering import ToolFilter
from router.upstream.per_user import PerUser
from router.upstream.state import UpstreamState, UpstreamStatus
from router.upstream.upstream import StatusChanged, ToolsChanged, Upstream

if TYPE_CHECKING:  # per-user upstreams' modules: loaded on first need (`PerUser`)
    from router.upstream.personal.accounts import PersonalAccounts
    from router.upstream.personal.pending import PendingSignIns

PROTOCOL_MEMORY_FILE = "upstream-protocols.json"
STOP_WAIT = 10.0
"""Seconds a removed or restarted upstream's child is given to exit before its successor starts."""
MAX_GONE = 256
"""Servers removed while serving whose name a request still gets a reason for."""
NOT_SERVED = "not in the config being served"


class UpstreamPool:
    """Every enabled upstream of a config, each in its own owner task.

    Use as `async with UpstreamPool(config, on_tools_changed=...) as pool:`; entering
    starts all upstreams concurrently and returns at once (a slow upstream's tools arrive
    later through the callback), exiting stops them all. Enter and exit in one task.
    """

    def __init__(
        self,
        config: RouterConfig,
        *,
        on_tools_changed: ToolsChanged | None = None,
        on_status_changed: StatusChanged | None = None,
        memory: ProtocolMemory | None = None,
        backoff: BackoffPolicy | None = None,
        host: HostRequests | None = None,
        era: HostEra | None = None,
        listings: ListingCache | None = None,
        credentials: Records | None = None,
        sign_ins: PendingSignIns | None = None,
        eager: bool = False,
    ) -> None:
        """`host` relays what upstreams ask of the host (sampling, elicitation, roots);
        without it the router advertises none of those capabilities to its upstreams.
        `listings` keeps each upstream's listing; without it every upstream is eager, as it
        is with `eager` (`inspect`, which checks them all). `credentials` holds remote
        upstreams' OAuth tokens (the shared store's records; None: the cache folder's);
        `sign_ins` takes per-user sign-ins back from the front (`router.upstream.personal`)."""
        if memory is None:
            cache_dir = config.router.cache_dir
            memory = ProtocolMemory(cache_dir / PROTOCOL_MEMORY_FILE if cache_dir else None)
        self._config = config
        self._memory = memory
        self._backoff = backoff
        self._host = host
        self._era = era
        self._on_tools_changed = on_tools_changed
        self._on_status_changed = on_status_changed
        self._listings = listings
        self._credentials = credentials
        self._eager = eager
        self._per_user = PerUser(credentials, sign_ins)
        self._upstreams: dict[str, Upstream] = {}
        self._scopes: dict[str, anyio.CancelScope] = {}
        self._stopping: dict[str, Upstream] = {}
        self._gone: OrderedDict[str, str] = OrderedDict()
        """Why a server no longer served is not, by name (at most `MAX_GONE`)."""
        self._task_group: anyio.abc.TaskGroup | None = None
        if era is not None:
            era.on_learned(lambda: self._mirror(era))

        def twin_of(primary: Upstream) -> Upstream:
            name = primary.name
            return Upstream(
                name,
                primary.server.model_copy(update={"protocol": "legacy"}),
                timeouts=primary.timeouts,
                tool_filter=ToolFilter.for_server(self._config, name),
                backoff=backoff,
                host=host,
                auth=primary.auth,
            )

        self._twins = HandshakeTwins(twin_of, enabled=era is None)

    @property
    def sign_ins(self) -> PendingSignIns:
        """Per-user sign-ins waiting for the front's callback (`router.upstream.personal`)."""
        return self._per_user.sign_ins

    async def __aenter__(self) -> Self:
        if self._task_group is not None:
            raise RuntimeError("UpstreamPool is already running")
        self._upstreams = await self._made(self._config, list(self._config.enabled_servers()))
        task_group = anyio.create_task_group()
        await task_group.__aenter__()
        self._task_group = task_group
        for upstream in self._upstreams.values():
            self._start(upstream)
        self._twins.attach(task_group)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc_val: BaseException | None,
        exc_tb: TracebackType | None,
    ) -> bool | None:
        task_group, self._task_group = self._task_group, None
        self._twins.attach(None)
        assert task_group is not None
        task_group.cancel_scope.cancel()
        return await task_group.__aexit__(exc_type, exc_val, exc_tb)

    async def _made(self, config: RouterConfig, names: list[str]) -> dict[str, Upstream]:
        """The upstreams `names` of `config`, not started; the listings of those that may be
        lazy are read from the cache folder first, in a worker thread."""
        servers = config.enabled_servers()
        start = {
            name: "eager" if self._eager or self._listings is None else config.start_for(name)
            for name in names
        }
        listings = self._listings

        def read() -> dict[str, CachedListing | None]:
            assert listings is not None
            for n in names:
                if is_personal(servers[n]):
                    listings.forget(n)  # a principal's own, kept in clear by older versions
            return {
                n: listings.load(n, servers[n])
                for n in names
                if start[n] != "eager" and not is_personal(servers[n])
            }

        cached = await anyio.to_thread.run_sync(read) if listings is not None else {}
        made = {}
        for name in names:
            server, listing = servers[name], cached.get(name)
            lazy = start[name] == "lazy" or (
                start[name] == "auto" and isinstance(server, StdioServer)
            )
            made[name] = self._upstream(config, name, server, lazy, listing)
        return made

    def _upstream(
        self,
        config: RouterConfig,
        name: str,
        server: StdioServer | RemoteServer,
        lazy: bool,
        cached: CachedListing | None,
    ) -> Upstream:
        if is_personal(server):
            options = {
                "timeouts": config.timeouts_for(name),
                "tool_filter": ToolFilter.for_server(config, name),
                **{"memory": self._memory, "backoff": self._backoff, "host": self._host},
                **{"era": self._era, "listings": self._listings},
            }
            hooks = (self._on_tools_changed, self._on_status_changed)
            return self._per_user.build(config, name, server, options, hooks)
        return Upstream(
            name,
            server,
            timeouts=config.timeouts_for(name),
            tool_filter=ToolFilter.for_server(config, name),
            on_tools_changed=self._on_tools_changed,
            on_status_changed=self._on_status_changed,
            memory=self._memory,
            backoff=self._backoff,
            host=self._host,
            auth=remote_auth(config, name, server, self._credentials),
            era=self._era,
            lazy=lazy,
            cached=cached,
            listings=self._listings,
        )

    def _start(self, upstream: Upstream) -> None:
        assert self._task_group is not None
        scope = self._scopes[upstream.name] = anyio.CancelScope()
        self._task_group.start_soon(self._run, upstream, scope, name=f"upstream {upstream.name}")

    @staticmethod
    async def _run(upstream: Upstream, scope: anyio.CancelScope) -> None:
        with scope:
            await upstream.run()

    async def reconfigure(self, config: RouterConfig, diff: ConfigDiff) -> None:
        """Apply a changed config while running: removed and restarted upstreams stop (each
        waited for, at most `STOP_WAIT` s), then added and restarted ones start (lazily from
        their cached listing where they may); retimed ones take their new timeouts. From
        the moment one stops until its successor runs, a request to it is
        `UpstreamUnavailable` saying so."""
        for name in diff.removed:
            self._forget(name, "removed from the config while serving")
        for name in diff.restarted:
            self._forget(name, "restarting: its config entry changed")
        for name in (*diff.removed, *diff.restarted):
            await self._stop(name)
        made = await self._made(config, [*diff.restarted, *diff.added])
        self._config = config
        for name in diff.retimed:
            self._upstreams[name].retime(config.timeouts_for(name))
        for name, upstream in made.items():
            self._upstreams[name] = upstream
            self._gone.pop(name, None)
            self._start(upstream)

    def _forget(self, name: str, why: str) -> None:
        """Stop serving `name` now (its child stops in `_stop`): requests from here on are
        told `why`."""
        self._gone[name] = why
        self._gone.move_to_end(name)
        while len(self._gone) > MAX_GONE:
            self._gone.popitem(last=False)
        self._stopping[name] = self._upstreams.pop(name)

    async def _stop(self, name: str) -> None:
        upstream = self._stopping.pop(name)
        self._scopes.pop(name).cancel()
        self._twins.drop(name)
        with anyio.move_on_after(STOP_WAIT):
            await upstream.wait_for(UpstreamState.STOPPED)

    def _mirror(self, era: HostEra) -> None:
        """The host's first request came after some upstreams connected: reconnect those whose
        live connection does not match it (`HostEra.stale`: its era, its extensions)."""
        for upstream in list(self._upstreams.values()):
            if era.stale(upstream):
                upstream.restart()

    @property
    def upstreams(self) -> Mapping[str, Upstream]:
        return self._upstreams

    def upstream(self, server: str) -> Upstream:
        """The named upstream.

        Raises:
            UpstreamUnavailable: None is served under that name: removed by a reload,
                restarting, or never configured (the message says which).
        """
        upstream = self._upstreams.get(server)
        if upstream is None:
            raise UpstreamUnavailable(server, self._gone.get(server, NOT_SERVED))
        return upstream

    def accounts(self) -> PersonalAccounts:
        """Principals' standing with the per-user upstreams (`router.upstream.personal`)."""
        return self._per_user.accounts(self._config)

    def statuses(self) -> dict[str, UpstreamStatus]:
        return {name: upstream.status for name, upstream in self._upstreams.items()}

    def tools(self) -> dict[str, tuple[ToolSpec, ...]]:
        """Each upstream's last listed tools (kept while it is down)."""
        return {name: upstream.tools for name, upstream in self._upstreams.items()}

    async def wait_settled(self) -> dict[str, UpstreamStatus]:
        """Wait until every upstream's first attempt has ended (bound it with `fail_after`)."""
        for upstream in list(self._upstreams.values()):
            await upstream.wait_settled()
        return self.statuses()

    async def call_tool(
        self,
        server: str,
        tool: str,
        arguments: dict[str, object] | None = None,
        *,
        progress_callback: ProgressFnT | None = None,
        meta: types.RequestParamsMeta | None = None,
        handshake_host: bool = False,
    ) -> types.CallToolResult:
        """Forward `tools/call` to `server` and return its result unchanged; a host on a
        handshake revision is served over one (`router.upstream.connection.twins`).

        Raises:
            MCPError: The upstream's JSON-RPC error, with its code.
            ToolNotFound: The tool is filtered out.
            UpstreamUnavailable: The server is not served (`upstream`), or as for
                `Upstream.call_tool`.
            UpstreamTimeout / UpstreamProtocolError: see `Upstream.call_tool`.
        """
        upstream = await self._connection(server, handshake_host)
        return await upstream.call_tool(
            tool, arguments, progress_callback=progress_callback, meta=meta
        )

    async def call_tool_round(
        self,
        server: str,
        tool: str,
        arguments: dict[str, object] | None = None,
        *,
        answers: InputAnswers,
        progress_callback: ProgressFnT | None = None,
    ) -> types.CallToolResult | types.InputRequiredResult:
        """`call_tool` for a 2026-07-28 host: see `router.upstream.connection.rounds`."""
        upstream = self.upstream(server)
        return await call_tool_round(upstream, tool, arguments, answers, progress_callback)

    async def _connection(self, server: str, handshake_host: bool) -> Upstream:
        """The connection a host's request to `server` goes out on (its twin, perhaps); one
        removed while the twin was awaited is `UpstreamUnavailable`, and one restarted
        meanwhile is its successor."""
        primary = self.upstream(server)
        chosen = await self._twins.for_host(primary, handshake_host)
        current = self.upstream(server)
        return chosen if current is primary else current

    async def roots_changed(self) -> None:
        """Pass the host's `notifications/roots/list_changed` on to every upstream."""
        async with anyio.create_task_group() as group:
            for upstream in list(self._upstreams.values()):
                group.start_soon(upstream.roots_changed)

    async def read_resource(
        self,
        server: str,
        uri: str,
        *,
        handshake_host: bool = False,
        answers: InputAnswers | None = None,
    ) -> types.ReadResourceResult | types.InputRequiredResult:
        """`resources/read`; with `answers` (a 2026-07-28 host) the upstream's question may
        come back as its `InputRequiredResult` (`router.upstream.connection.rounds`)."""
        upstream = await self._connection(server, handshake_host)
        if answers is not None:
            return await read_resource_round(upstream, uri, answers)
        return await upstream.read_resource(uri)

    async def get_prompt(
        self,
        server: str,
        name: str,
        arguments: dict[str, str] | None = None,
        *,
        handshake_host: bool = False,
        answers: InputAnswers | None = None,
    ) -> types.GetPromptResult | types.InputRequiredResult:
        """`prompts/get`; `answers` as for `read_resource`."""
        upstream = await self._connection(server, handshake_host)
        if answers is not None:
            return await get_prompt_round(upstream, name, arguments, answers)
        return await upstream.get_prompt(name, arguments)

    @property
    def twins(self) -> Mapping[str, Upstream]:
        """The handshake-era twins running now (`router.upstream.connection.twins`)."""
        return self._twins.running
