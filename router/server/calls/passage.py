"""Every request other than a tool call that reaches an upstream (a resource read, a prompt
get, a completion, a subscription, a listen stream's watch) passes the stages a tool call
passes (`router.server.calls.pipeline`), in the same order:

1. resolve and authorize: the owner among the upstreams the caller may see
   (`visible_upstreams`, one rule for every surface: `Visibility.permits_server`); another
   server's names are unknown (-32602), as ones that never existed. A name refused so
   spends one of its principal's refusals (`router.server.calls.refusals`), as a tool
   call's unknown name does: past `refused_per_minute` every such request of that principal
   is over quota (-32600) before anything is resolved, the first of the run on the trail;
2. meter: the caller's quotas, in the buckets a tool call spends (`QuotaBook.admit`): one
   over its quota gets the tool call's text and `mcp-router/quota` data as an
   `OverQuotaError` (-32600), and the upstream is not reached;
3. forward: to the owning upstream, the place in flight held until it answers;
4. audit: the whole on the trail (`audited_request`), refused or not.

`tests/server/access/test_authorization_surfaces.py` sends every method a real request and
fails on one that reaches an upstream without passing here."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio.to_thread
import mcp_types as types
from pydantic import BaseModel

from router.core.errors import InvalidParams, OverQuotaError
from router.policy.quotas import OverQuota, limits_for
from router.server.access.authorization import current_access
from router.server.calls import audit
from router.server.calls.refusals import over_rate, refusals_of
from router.server.calls.stages.meter import over_quota_result
from router.server.lifecycle.requests import Context
from router.server.lifecycle.settings import view_of
from router.server.lifecycle.state import RouterState

_T = TypeVar("_T")
_X = TypeVar("_X")

Spend = Callable[[int], None]


async def passed(
    ctx: Context,
    kind: str,
    name: str,
    arguments: dict[str, Any],
    resolve: Callable[[], Awaitable[tuple[str, _X]]],
    forward: Callable[[str, _X], Awaitable[_T]],
    *,
    metered: bool = True,
) -> _T:
    """`forward(server, target)` once `resolve()` found the owning server (and what the
    upstream calls the thing asked for) and the caller's quotas admit it; on the trail as
    `kind`, naming `name` (a URI, a prompt's name). `metered=False`: only for a request that
    ends upstream work (an unsubscribe), which a quota must never keep alive."""
    state = ctx.lifespan_context
    owner: list[str] = []
    refusals = refusals_of(state) if metered else None  # an unsubscribe is never refused
    over = refusals.over() if refusals is not None else None
    if over is not None:
        asked = audit.Request(ctx, kind, None, name, arguments)
        quota = await over_rate(state, asked, over)
        raise OverQuotaError(quota.message(), dict(over_quota_result(quota).meta or {}))

    async def run() -> _T:
        try:
            server, target = await resolve()
        except InvalidParams:
            if refusals is not None:
                refusals.refused()
            raise
        owner.append(server)
        admitted = await admit(state, server) if metered else None
        if isinstance(admitted, OverQuota):
            raise OverQuotaError(admitted.message(), dict(over_quota_result(admitted).meta or {}))
        release, spend = admitted or (None, None)
        try:
            answer = await forward(server, target)
        finally:
            if release is not None:
                release()
        if spend is not None and isinstance(answer, BaseModel):
            spend(len(answer.model_dump_json(by_alias=True)))
        return answer

    trail = state.audit
    if trail is None:
        return await run()

    def request() -> audit.Request:
        return audit.Request(ctx, kind, owner[0] if owner else None, name, arguments)

    return await audit.audited_request(trail, request, run, audit.held_or_ran, audit.raised)


async def watch(
    ctx: Context, uri: str, owner: str, upstream_uri: str, start: Callable[[], None]
) -> None:
    """A listen stream's watch of `uri` (already resolved among the upstreams the caller may
    see), started by `start` once metered, and audited as `resource-watch`
    (`router.server.sessions.listen`)."""

    async def resolve() -> tuple[str, str]:
        return owner, upstream_uri

    async def forward(server: str, at: str) -> types.EmptyResult:
        start()
        return types.EmptyResult()

    await passed(ctx, "resource-watch", uri, {"uri": uri}, resolve, forward)


async def admit(
    state: RouterState, server: str
) -> OverQuota | tuple[Callable[[], None], Spend | None] | None:
    """One request to `server` against the caller's quotas, counted as a tool call of that
    server is (`router.server.calls.stages.meter`): its place in flight to release and, where
    a results quota applies, what spends its answer's size; the quota it is over (counted in
    `/metrics`); None when no quota applies."""
    settings = state.settings
    if not settings.quotas:
        return None
    principal = current_access().principal
    limits = limits_for(settings.quotas, view_of(settings, principal).profiles, server)
    book, who = state.quotas, "" if principal is None else principal.key
    if book.shared is not None and not limits.unlimited:  # the store's buckets: blocking
        admitted = await anyio.to_thread.run_sync(book.admit, who, server, limits)
    else:
        admitted = book.admit(who, server, limits)
    if isinstance(admitted, OverQuota):
        state.metrics.over_quota(admitted.quota)
        return admitted
    if limits.result_mib_per_hour is None and limits.upstream_result_mib_per_hour is None:
        return admitted, None

    def spend(size: int) -> None:
        book.spend_results(who, server, limits, size)

    return admitted, spend
