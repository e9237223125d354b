"""A per-user upstream: one connection per principal that uses it, each with its own token.

`PersonalUpstream` stands in the pool where an `Upstream` would, under the server's name,
and every request through it (calls, reads, prompts, completions, their 2026-07-28 rounds)
goes out on the connection of the principal acting now (`router.upstream.personal.acting`),
never another's; with nobody acting the request is refused. Each principal's connection is
an ordinary `Upstream` with its own owner task, started on that principal's first request
and closed after `router.personal.idle_seconds` without one, or when more than
`max_connections` are open (the least recently used goes).

Signing in (or entering a key) happens in the caller's own request: the link a connection
shows (`FrontSignIn`, `PendingKeys`) goes to its host (URL-mode elicitation), and the request
waits, bounded, until the connection is up. A host that cannot show URLs gets an error naming
the link, valid while the attempt waits; a declined one closes the attempt.

What a connection lists is its principal's alone: its resources, templates and prompts are
served to that principal only (`listing`), and it is kept sealed under that principal's key
(`router.upstream.personal.building`), read back when that principal's connection opens
again; never as the shared cached listing. The index holds every tool a connection open in
this process listed, and always the tool `sign_in` (`SIGN_IN_TOOL`, which signs the caller
in); each principal lists, searches and calls only those its own connection lists
(`own_tools`, read by `router.upstream.personal.own_tools`), and `sign_in`.
"""

from __future__ import annotations

import contextvars
import logging
import secrets
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import replace
from typing import TypeVar

import anyio
import anyio.abc
import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT

from router.config import RemoteServer, StdioServer
from router.config.personal import PersonalSettings, user_value_names
from router.core.catalog import EMPTY_OBJECT_SCHEMA, ToolSpec
from router.core.errors import SignInNeeded, ToolNotFound, UpstreamUnavailable
from router.upstream.auth.signin import SIGN_IN_TIMEOUT
from router.upstream.failures import ProgressClock
from router.upstream.listing.fetch import Listing
from router.upstream.listing.known import KnownListing
from router.upstream.personal.acting import Acting, current_acting
from router.upstream.personal.child import (
    SIGN_IN_ONLY,
    SIGN_IN_TOOL,
    Child,
    ChildHooks,
    Kept,
    MakeChild,
    SignedIn,
)
from router.upstream.state import UpstreamState, UpstreamStatus
from router.upstream.upstream import ToolsChanged, Upstream

logger = logging.getLogger(__name__)

_T = TypeVar("_T")


class PersonalUpstream(Upstream):
    """A per-user upstream (`oauth.perUser`, `grant: token-exchange`, or per-user values,
    `${user:NAME}`)."""

    def __init__(
        self,
        name: str,
        server: StdioServer | RemoteServer,
        make_child: MakeChild,
        settings: PersonalSettings,
        hint: str,
        *,
        signed_in: SignedIn | None = None,
        kept: Kept | None = None,
        on_tools: ToolsChanged | None = None,
        **upstream: object,
    ) -> None:
        """`upstream`: what an `Upstream` takes, less a cached listing (it has none)."""
        super().__init__(name, server, lazy=True, **upstream)  # type: ignore[arg-type]
        self._make_child = make_child
        self._signed_in = signed_in
        self._kept = kept
        self._settings = settings
        self._hint = hint
        self._on_tools = on_tools
        self._children: OrderedDict[str, Child] = OrderedDict()
        self._group: anyio.abc.TaskGroup | None = None
        self._running = anyio.Event()
        self._context: contextvars.Context | None = None
        """`run`'s own: each connection's task starts in a copy of it, never in the context
        of the request that opened it (that call, its principal, its host's capabilities)."""
        self._union: tuple[ToolSpec, ...] | None = None

    # -- what the server layer reads -------------------------------------------------

    @property
    def tools(self) -> tuple[ToolSpec, ...]:
        union = self._union or ()
        has_own = any(tool.name == SIGN_IN_TOOL for tool in union)
        return union if has_own else (self._stand_in, *union)

    def own_tools(self) -> frozenset[str]:
        """The tools the acting principal is shown: those its own connection lists (or
        kept, until it lists), and `sign_in`; only `sign_in` without a connection."""
        acting = current_acting()
        child = self._children.get(acting.key) if acting is not None else None
        return child.own if child is not None else SIGN_IN_ONLY

    @property
    def _stand_in(self) -> ToolSpec:
        how = (
            "with your own key"
            if user_value_names(self.server)
            else "in a browser page the host opens"
        )
        return ToolSpec(
            self.name,
            SIGN_IN_TOOL,
            f"Sign in to {self.name} as yourself, {how}; "
            f"{self.name}'s own tools are listed once you have.",
            EMPTY_OBJECT_SCHEMA,
            server_description=self.server.description,
        )

    @property
    def listing(self) -> Listing:
        """The acting principal's own listing (or the one its connection kept, until it
        lists); an empty one for anyone else."""
        acting = current_acting()
        child = self._children.get(acting.key) if acting is not None else None
        if child is None or child.upstream is None:
            return Listing()
        if child.tools is not None:
            return child.upstream.listing
        return child.kept.listing if child.kept is not None else Listing()

    @property
    def status(self) -> UpstreamStatus:
        base = super().status
        ups = [c.upstream for c in self._children.values() if c.upstream is not None]
        healthy = any(u.state is UpstreamState.HEALTHY for u in ups)
        state = base.state
        if state is not UpstreamState.STOPPED:
            state = UpstreamState.HEALTHY if healthy else UpstreamState.IDLE
        return replace(
            base, state=state, tool_count=len(self.tools), principals=len(self._children)
        )

    def restart(self) -> None:
        for child in list(self._children.values()):
            if child.upstream is not None:
                child.upstream.restart()

    def forget(self, key: str) -> bool:
        """Close the connection of the principal whose key is `key` (its sign-in revoked);
        whether one was open."""
        child = self._children.get(key)
        if child is not None:
            self._close(child)
        return child is not None

    # -- requests ------------------------------------------------------------------------

    async def call_tool(
        self,
        tool: str,
        arguments: dict[str, object] | None = None,
        *,
        progress_callback: ProgressFnT | None = None,
        meta: types.RequestParamsMeta | None = None,
    ) -> types.CallToolResult:
        if not self.allows(tool):
            raise ToolNotFound(f"{self.name}/{tool}")
        async with self._usable() as child:
            assert child.upstream is not None
            own = child.upstream.tools  # listed before the connection counts as up
            if tool == SIGN_IN_TOOL and not any(t.name == tool for t in own):
                return _signed_in(self.name, len(own))
            if not any(t.name == tool for t in own):
                raise ToolNotFound(f"{self.name}/{tool}")
            return await child.upstream.call_tool(
                tool, arguments, progress_callback=progress_callback, meta=meta
            )

    async def request(
        self,
        what: str,
        send: Callable[[Client], Awaitable[_T]],
        clock: ProgressClock | None = None,
    ) -> _T:
        async with self._usable() as child:
            assert child.upstream is not None
            return await child.upstream.request(what, send, clock)

    @asynccontextmanager
    async def _usable(self) -> AsyncIterator[Child]:
        """The acting principal's connection, up (signed in first if need be)."""
        acting = current_acting()
        if acting is None:
            raise UpstreamUnavailable(
                self.name,
                "a per-user upstream: its requests need a principal signed in at the front",
            )
        child = await self._unrevoked(await self._child_for(acting))
        child.busy += 1
        try:
            await self._until_up(child)
            yield child
        finally:
            child.busy -= 1
            child.last_used = anyio.current_time()

    async def _child_for(self, acting: Acting) -> Child:
        child = self._children.get(acting.key)
        if child is not None:
            child.acting = acting  # its newest token (what token exchange spends)
            self._children.move_to_end(acting.key)
            return child
        with anyio.fail_after(10.0):
            await self._running.wait()
        while len(self._children) >= self._settings.max_connections:
            oldest = next(iter(self._children.values()))
            logger.info("upstream %s: closing the least recently used connection", self.name)
            self._close(oldest)
        child = Child(acting, last_used=anyio.current_time())
        hooks = ChildHooks(
            on_url=lambda url: self._on_url(child, url),
            on_tools=lambda _name, tools: self._child_listed(child, tools),
            on_status=lambda _status: child.changed.notify(),
            subject_token=lambda: child.acting.token,
        )
        child.upstream = self._make_child(acting, hooks)
        self._children[acting.key] = child
        group, context = self._group, self._context
        assert group is not None and context is not None
        task = f"upstream {self.name} (a principal)"
        context.copy().run(lambda: group.start_soon(self._run_child, child, name=task))
        self._changed.notify()
        if self._kept is not None:
            kept = await self._kept(acting)
            if kept is not None:
                child.kept = KnownListing(self.name, self._filter, self.server.description)
                child.kept.install(kept, from_cache=True)
                if child.tools is None:
                    child.own = SIGN_IN_ONLY | {tool.name for tool in child.kept.tools}
        return child

    async def _unrevoked(self, child: Child) -> Child:
        """`child`, or a fresh connection where its credentials were revoked since it
        signed in (on another replica, or with `mcp-router auth revoke`): its tokens in
        memory must not outlive the record. One record read per request."""
        upstream = child.upstream
        if self._signed_in is None or upstream is None:
            return child
        if upstream.state is not UpstreamState.HEALTHY or await self._signed_in(child.acting):
            return child
        logger.info("upstream %s: a principal's sign-in was revoked: connection closed", self.name)
        self._close(child)
        return await self._child_for(child.acting)

    async def _run_child(self, child: Child) -> None:
        assert child.upstream is not None
        with child.scope:
            await child.upstream.run()

    def _close(self, child: Child) -> None:
        child.scope.cancel()
        if self._children.get(child.acting.key) is child:
            del self._children[child.acting.key]
        child.changed.notify()
        self._touch()

    async def _until_up(self, child: Child) -> None:
        upstream = child.upstream
        assert upstream is not None
        limit = self.timeouts.connect + SIGN_IN_TIMEOUT
        try:
            with anyio.fail_after(limit):
                while upstream.state is not UpstreamState.HEALTHY:
                    if child.url is not None and child.link_only != child.url:
                        await self._ask_sign_in(child, child.url)
                        continue
                    if child.url is not None:
                        raise SignInNeeded(self.name, self._open_link(child, child.url))
                    status = upstream.status
                    if status.state is UpstreamState.UNHEALTHY and status.settled:
                        if status.sign_in_needed:
                            self._close(child)  # the next request starts a fresh sign-in
                            raise SignInNeeded(self.name, status.last_error or self._hint)
                        raise UpstreamUnavailable(self.name, f"down ({status.last_error})")
                    await child.changed.wait()
        except TimeoutError:
            raise UpstreamUnavailable(
                self.name, f"not up for this principal within {limit:.0f}s"
            ) from None

    async def _ask_sign_in(self, child: Child, url: str) -> None:
        """Ask the caller's host to open `url`; return once the person accepted (the
        connection goes on when the browser comes back)."""
        host = self._host
        answer: types.ElicitResult | types.ErrorData
        if host is None:
            answer = types.ErrorData(code=types.INVALID_REQUEST, message="no host to ask")
        else:
            request = types.ElicitRequest(
                params=types.ElicitRequestURLParams(
                    message=f"{_asking(self.server)} {self.name} so that its tools can be used.",
                    url=url,
                    elicitation_id=secrets.token_urlsafe(16),
                )
            )
            answer = await host.ask(self.name, request, types.ElicitResult, SIGN_IN_TIMEOUT)
        if isinstance(answer, types.ErrorData):
            child.link_only = url
            logger.info("upstream %s: sign-in not shown: %s", self.name, answer.message)
            raise SignInNeeded(self.name, self._open_link(child, url))
        if answer.action != "accept":
            self._close(child)
            outcome = "declined" if answer.action == "decline" else "cancelled"
            raise SignInNeeded(self.name, f"the sign-in was {outcome}")
        while child.url == url and child.upstream is not None:
            await child.changed.wait()  # the browser comes back: the attempt goes on

    def _open_link(self, child: Child, url: str) -> str:
        """The error naming the link a host could not show (and, for a key, the command)."""
        if not user_value_names(self.server):
            return f"open {url} in a browser to sign in to {self.name} as yourself, then call again"
        command = f"mcp-router secrets set {self.name} --principal {child.acting.subject}"
        said = f"open {url} in a browser to enter your key for {self.name}, then call again"
        return f"{said} (or ask an operator to run `{command}`)"

    def _on_url(self, child: Child, url: str | None) -> None:
        child.url = url
        child.changed.notify()

    async def _child_listed(self, child: Child, tools: tuple[ToolSpec, ...]) -> None:
        child.tools = tools
        child.own = SIGN_IN_ONLY | {tool.name for tool in tools}
        child.changed.notify()
        names: dict[str, ToolSpec] = {}
        for each in self._children.values():
            for tool in each.tools or ():
                names.setdefault(tool.name, tool)
        union = tuple(names.values())
        if union == self._union:
            return
        self._union = union
        self._touch()
        if self._on_tools is not None:
            await self._on_tools(self.name, self.tools)

    # -- the owner task ------------------------------------------------------------------

    async def run(self) -> None:
        """Serve the principals' connections, closing idle ones, until cancelled."""
        try:
            self._health.park()
            if self._on_tools is not None:
                await self._on_tools(self.name, self.tools)  # the cached listing, or sign_in
            async with anyio.create_task_group() as group:
                self._group = group
                self._context = contextvars.copy_context()
                self._running.set()
                await self._close_idle()
        finally:
            self._group = None
            for child in list(self._children.values()):
                self._close(child)
            self._health.stopped()

    async def _close_idle(self) -> None:
        idle = self._settings.idle_seconds
        while True:
            now = anyio.current_time()
            waits = []
            for child in list(self._children.values()):
                due = child.last_used + idle
                if child.busy == 0 and due <= now:
                    logger.info("upstream %s: a principal's connection closed when idle", self.name)
                    self._close(child)
                else:
                    waits.append(max(due - now, 1.0))
            with anyio.move_on_after(min(waits, default=idle)):
                await self._changed.wait()


def _asking(server: StdioServer | RemoteServer) -> str:
    return "Enter your own key for" if user_value_names(server) else "Sign in as yourself to"


def _signed_in(name: str, count: int) -> types.CallToolResult:
    text = f"Signed in to {name} as yourself: its {count} tools can be searched and called now."
    return types.CallToolResult(content=[types.TextContent(text=text)])
