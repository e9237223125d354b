"""One principal's connection to a per-user upstream, as `PersonalUpstream` keeps it
(`router.upstream.personal.upstream`), and what it tells that upstream."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TypeVar

import anyio
import mcp_types as types

from router.core.catalog import ToolSpec
from router.core.changes import Changes
from router.upstream.connection.host_requests import HostRequest, HostRequests
from router.upstream.listing.cache import CachedListing
from router.upstream.listing.known import KnownListing
from router.upstream.personal.acting import Acting
from router.upstream.state import UpstreamStatus
from router.upstream.upstream import ToolsChanged, Upstream

SIGN_IN_TOOL = "sign_in"
"""The stand-in tool of a per-user upstream, which signs the caller in."""
SIGN_IN_ONLY = frozenset({SIGN_IN_TOOL})

_R = TypeVar("_R", bound=types.Result)


@dataclass(eq=False)
class Child:
    """One principal's connection."""

    acting: Acting
    changed: Changes = field(default_factory=Changes)
    upstream: Upstream | None = None
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    last_used: float = 0.0
    busy: int = 0
    url: str | None = None
    """The authorization URL a person must open now, if the connection waits for one."""
    link_only: str | None = None
    """The URL the caller's host could not show: later calls name it too."""
    tools: tuple[ToolSpec, ...] | None = None
    """Its own listing, once it has listed."""
    own: frozenset[str] = SIGN_IN_ONLY
    """The names of the tools its principal is shown (`PersonalUpstream.own_tools`)."""
    kept: KnownListing | None = None
    """The listing it kept last time (sealed), until it lists."""


@dataclass(frozen=True, slots=True)
class ChildHooks:
    """What a principal's connection tells its per-user upstream."""

    on_url: Callable[[str | None], None]
    on_tools: ToolsChanged
    on_status: Callable[[UpstreamStatus], None]
    subject_token: Callable[[], str | None]


MakeChild = Callable[[Acting, ChildHooks], Upstream]
SignedIn = Callable[[Acting], Awaitable[bool]]
"""Whether a principal's credentials are still stored (not revoked meanwhile)."""
Kept = Callable[[Acting], Awaitable[CachedListing | None]]
"""The listing a principal's connection kept last time, if any."""


@dataclass(frozen=True, slots=True)
class OwnHost:
    """The host relay as one principal's connection reaches it. Every principal's connection
    has the server's one name, so the relay cannot tell them apart by it: what this one
    asks or logs (during a call or outside any) goes to its principal's own calls only."""

    host: HostRequests
    principal: str
    """`Acting.key` of the connection's principal."""

    async def ask(
        self,
        upstream: str,
        request: HostRequest,
        result_type: type[_R],
        limit: float,
        *,
        principal: str | None = None,
    ) -> _R | types.ErrorData:
        return await self.host.ask(upstream, request, result_type, limit, principal=self.principal)

    async def log(
        self,
        upstream: str,
        params: types.LoggingMessageNotificationParams,
        *,
        principal: str | None = None,
    ) -> None:
        await self.host.log(upstream, params, principal=self.principal)
