"""Resolve: the called name to a tool of the current catalog.

A name unknown while upstreams are still starting waits for them (`ToolNames`); a tool the
profile hides is unknown, one the policy denies is `ToolDenied`. A tool that pinning holds
(its definition changed) may be approved here by an operator the host can ask
(`router.server.calls.pin_approval`): the question ends the call, the approval resolves it.

A lazy upstream's tools are resolved from its last listing (`router.start`), which may be
older than what the server lists now: it changed while the router was down, or another
replica listed it. So a call whose upstream is not running starts it here, the index takes
what it lists now (decided by the pins, the transforms and the policy), and the name is
resolved again: a tool changed meanwhile is held for this call too, before anything reaches
the upstream. The upstream is kept running until the call ends, so that it is not stopped
for idleness and started again, unchecked, while the user is asked."""

from __future__ import annotations

import logging

import mcp_types as types

from router.core.errors import ToolHeld, UpstreamError
from router.server.calls.call import ToolCall
from router.server.calls.pin_approval import release
from router.server.lifecycle.errors import tool_error_result

logger = logging.getLogger(__name__)


async def resolve(call: ToolCall) -> None:
    if await _resolved(call) and await _woken(call):
        await _resolved(call)


async def _resolved(call: ToolCall) -> bool:
    """Resolve the name (a held tool asks the operator); false if the call ended."""
    names = call.state.names
    try:
        call.record = await names.resolve_when_ready(call.name)
    except ToolHeld as hold:
        released = await release(call.ctx, hold, call.answers)
        if isinstance(released, types.InputRequiredResult):
            call.end(released)
            return False
        call.answers = released
        call.record = await names.resolve_when_ready(call.name)
    return True


async def _woken(call: ToolCall) -> bool:
    """Whether the call's lazy upstream had to start: its listing is in the index then. One
    that does not start ends the call, saying why, as a failed upstream does in `forward`."""
    state, tool = call.state, call.tool
    try:
        upstream = state.pool.upstream(tool.server)
    except UpstreamError:
        return False  # removed by a reload since it was indexed: `forward` says so
    call.finish.append(upstream.keep_running())
    try:
        if not await upstream.wake():
            return False
    except UpstreamError as exc:
        logger.warning("call to %s failed: %s", tool.qualified_name, exc)
        call.end(tool_error_result(exc))
        return False
    await state.index.rebuild()
    return True
