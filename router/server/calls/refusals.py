"""A tool call against its principal's rate of refusals (`refused_per_minute`,
`router/policy/refusals.py`), around the whole pipeline.

A call the stages before `meter` refuse (an `InvalidParams`: an unknown tool, arguments
that break the schema, a denied or held tool) spends one of its principal's refusals, as
does any other request refused for its unknown name (`router.server.calls.passage`). While
they are spent, every call of that principal is answered as over quota (the `isError`
result `meter` gives, naming `refused_per_minute`) before any stage runs, and only the
first of each run of such answers is written to the audit trail: a principal cannot make
the router resolve, validate or write without bound. Other principals are not touched.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass

from router.core.errors import AuditUnavailable, InvalidParams
from router.policy.quotas import OverQuota
from router.policy.refusals import QUOTA, OverRate, RefusalRate, refused_limit
from router.server.access.authorization import current_access
from router.server.calls import audit
from router.server.calls.call import Answer, ToolCall
from router.server.calls.stages.meter import over_quota_result
from router.server.lifecycle.settings import view_of
from router.server.lifecycle.state import RouterState


@dataclass(frozen=True, slots=True)
class Refusals:
    """The current request's principal against its refusal rate."""

    rate: RefusalRate
    who: str
    limit: int

    def over(self) -> OverRate | None:
        return self.rate.over(self.who, self.limit)

    def refused(self) -> None:
        self.rate.refused(self.who, self.limit)


def refusals_of(state: RouterState) -> Refusals | None:
    """The current request's principal's refusal rate; None: unlimited."""
    settings = state.settings
    principal = current_access().principal
    limit = refused_limit(settings.quotas, view_of(settings, principal).profiles)
    if limit is None:
        return None
    return Refusals(state.quotas.refusals, "" if principal is None else principal.key, limit)


async def rated(call: ToolCall, run: Callable[[ToolCall], Awaitable[Answer]]) -> Answer:
    """`run(call)` (the audited stages), unless the caller's refusals are spent; a refusal
    it raises is counted."""
    refusals = refusals_of(call.state)
    if refusals is None:
        return await run(call)
    over = refusals.over()
    if over is not None:
        call.outcome = "over-quota"
        asked = audit.Request(call.ctx, "tool-call", None, call.name, call.arguments)
        return over_quota_result(await over_rate(call.state, asked, over))
    try:
        return await run(call)
    except InvalidParams:
        refusals.refused()
        raise


async def over_rate(state: RouterState, asked: audit.Request, over: OverRate) -> OverQuota:
    """Count a request refused for its principal's spent refusals, and write it to the
    trail if it is the first of its run; the quota it is over."""
    state.metrics.over_quota(QUOTA)
    trail = state.audit
    if over.first and trail is not None:
        record = audit.record_of(asked, trail, time.perf_counter(), "over-quota")
        with suppress(AuditUnavailable):  # refused either way
            await audit.write(trail, record)
    return OverQuota(QUOTA, over.limit, over.retry_after)
