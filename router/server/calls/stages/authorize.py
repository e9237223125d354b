"""Authorize: the call under the settings in force (the caller's profile, `router.policy`).

A denied tool is `ToolDenied`. A tool the policy confirms asks the user first
(`router.server.calls.approval`): the question, the user's no or a host that cannot ask end
the call; a yes is checked again against the settings in force after the answer, since a
config applied while the user was asked may deny the tool now, or take it out of the endpoint
the call came in at (its `tools`, `servers`)."""

from __future__ import annotations

import dataclasses

import mcp_types as types

from router.core.errors import UpstreamError
from router.policy.rules import Ruling, Verdict
from router.server.access.authorization import current_access
from router.server.calls.approval import Approved
from router.server.calls.call import ToolCall
from router.server.lifecycle.errors import tool_error_result
from router.server.lifecycle.settings import authorize_call, view_of


async def authorize(call: ToolCall) -> None:
    ruling = _ruling(call)
    if ruling.verdict is not Verdict.CONFIRM:
        return
    state, tool = call.state, call.tool
    try:
        limit = state.pool.upstream(tool.server).timeouts.call
    except UpstreamError as exc:  # removed by a reload since it was indexed
        call.end(tool_error_result(exc))
        return
    approval = await state.approvals.approve(
        call.ctx, tool, call.arguments, ruling, call.answers, limit
    )
    if not isinstance(approval, Approved):
        call.end(approval)  # the user's no, a host that cannot ask, or the question itself
        if isinstance(approval, types.CallToolResult):
            call.outcome = "declined"
        return
    call.answers, call.seal = approval.answers, approval.seal
    call.outcome = "confirmed"
    _ruling(call)  # still, under a config applied while the user was asked


def _ruling(call: ToolCall) -> Ruling:
    """The call's ruling under the settings in force now (`authorize_call`), at the endpoint
    the call came in at: the view holds it, so the endpoint's filter of these settings
    applies (one a reload removed permits nothing)."""
    settings, access = call.state.settings, current_access()
    view = dataclasses.replace(view_of(settings, access.principal), endpoint=access.view.endpoint)
    return authorize_call(settings, view, call.tool)
