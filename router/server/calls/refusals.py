"""A tool call against its principal's rate of refusals (`refused_per_minute`,
`router/policy/refusals.py`), around the whole pipeline.

A call the stages before `meter` refuse (an `InvalidParams`: an unknown tool, arguments
that break the schema, a denied or held tool) spends one of its principal's refusals. While
they are spent, every call of that principal is answered as over quota (the `isError`
result `meter` gives, naming `refused_per_minute`) before any stage runs, and only the
first of each run of such answers is written to the audit trail: a principal cannot make
the router resolve, validate or write without bound. Other principals are not touched.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import suppress

from router.audit import AuditUnavailable
from router.core.errors import InvalidParams
from router.policy.quotas import OverQuota
from router.policy.refusals import QUOTA, OverRate, refused_limit
from router.server.access.authorization import current_access
from router.server.calls import audit
from router.server.calls.call import Answer, ToolCall
from router.server.calls.stages.meter import over_quota_result
from router.server.lifecycle.settings import view_of


async def rated(call: ToolCall, run: Callable[[ToolCall], Awaitable[Answer]]) -> Answer:
    """`run(call)` (the audited stages), unless the caller's refusals are spent; a refusal
    it raises is counted."""
    state = call.state
    settings = state.settings
    principal = current_access().principal
    limit = refused_limit(settings.quotas, view_of(settings, principal).profiles)
    if limit is None:
        return await run(call)
    rate, who = state.quotas.refusals, "" if principal is None else principal.key
    over = rate.over(who, limit)
    if over is not None:
        return await _over_rate(call, over)
    try:
        return await run(call)
    except InvalidParams:
        rate.refused(who, limit)
        raise


async def _over_rate(call: ToolCall, over: OverRate) -> Answer:
    state = call.state
    state.metrics.over_quota(QUOTA)
    call.outcome = "over-quota"
    trail = state.audit
    if over.first and trail is not None:
        asked = audit.Request(call.ctx, "tool-call", None, call.name, call.arguments)
        record = audit.record_of(asked, trail, time.perf_counter(), "over-quota")
        with suppress(AuditUnavailable):  # refused either way
            await audit.write(trail, record)
    return over_quota_result(OverQuota(QUOTA, over.limit, over.retry_after))
