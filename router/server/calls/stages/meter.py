"""Meter: the call against the caller's quotas (`router.quotas`, `router.policy.quotas`).

A call over a quota never reaches the upstream: it is answered with an `isError` result that
names the quota and when it allows one more (also in `_meta` as `mcp-router/quota`, which
the REST surface turns into 429 and `Retry-After`), counted in `/metrics`, and written to
the audit trail as `over-quota`. An admitted call holds its place in flight (`concurrent_calls`)
until the upstream's work ends (`ToolCall.slot`): a held call's until the upstream answers or
the router cancels it, though the request that started it ended long before, and its
retries take no second place. With a shared store, `calls_per_minute` is counted in its
table by every replica (`router.store.quota_buckets`)."""

from __future__ import annotations

import dataclasses

import anyio.to_thread
import mcp_types as types

from router.policy.quotas import OverQuota, code_runs_limit, limits_for
from router.server.access.authorization import current_access
from router.server.calls.call import ToolCall
from router.server.lifecycle.settings import view_of
from router.server.lifecycle.state import RouterState

QUOTA_META = "mcp-router/quota"


async def meter(call: ToolCall) -> None:
    state, tool = call.state, call.tool
    settings = state.settings
    if not settings.quotas:
        return
    principal = current_access().principal
    view = view_of(settings, principal)
    limits = limits_for(settings.quotas, view.profiles, tool.server)
    answers = call.answers
    if answers is not None and state.held.is_held(answers.state):
        # the retry of a held call, which holds its place in flight already
        limits = dataclasses.replace(limits, concurrent_calls=None, upstream_concurrent_calls=None)
    book, who = state.quotas, "" if principal is None else principal.key
    if book.shared is not None and not limits.unlimited:  # the store's buckets: blocking
        admitted = await anyio.to_thread.run_sync(book.admit, who, tool.server, limits)
    else:
        admitted = book.admit(who, tool.server, limits)
    if isinstance(admitted, OverQuota):
        state.metrics.over_quota(admitted.quota)
        call.outcome = "over-quota"
        call.end(over_quota_result(admitted))
        return
    call.slot = admitted
    if limits.result_mib_per_hour is not None or limits.upstream_result_mib_per_hour is not None:

        def spend() -> None:
            result = call.upstream  # as the upstream sent it, before any cut
            if result is not None:
                size = len(result.model_dump_json(by_alias=True))
                book.spend_results(who, tool.server, limits, size)

        call.finish.append(spend)


async def meter_code_run(state: RouterState) -> types.CallToolResult | None:
    """The answer to an `execute` over `code_runs_per_minute`; None: it may run."""
    settings = state.settings
    if not settings.quotas:
        return None
    principal = current_access().principal
    limit = code_runs_limit(settings.quotas, view_of(settings, principal).profiles)
    if limit is None:
        return None
    book, who = state.quotas, "" if principal is None else principal.key
    if book.shared is not None:
        over = await anyio.to_thread.run_sync(book.admit_run, who, limit)
    else:
        over = book.admit_run(who, limit)
    if over is None:
        return None
    state.metrics.over_quota(over.quota)
    return over_quota_result(over)


def over_quota_result(over: OverQuota) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(text=over.message())],
        is_error=True,
        _meta={
            QUOTA_META: {
                "quota": over.quota,
                "limit": over.limit,
                "retryAfter": max(1, round(over.retry_after)),
            }
        },
    )
