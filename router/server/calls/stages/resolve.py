"""Resolve: the called name to a tool of the current catalog.

A name unknown while upstreams are still starting waits for them (`ToolNames`); a tool the
profile hides is unknown, one the policy denies is `ToolDenied`. A tool that pinning holds
(its definition changed) may be approved here by an operator the host can ask
(`router.server.calls.pin_approval`): the question ends the call, the approval resolves it."""

from __future__ import annotations

import mcp_types as types

from router.core.errors import ToolHeld
from router.server.calls.call import ToolCall
from router.server.calls.pin_approval import release


async def resolve(call: ToolCall) -> None:
    names = call.state.names
    try:
        call.record = await names.resolve_when_ready(call.name)
    except ToolHeld as hold:
        released = await release(call.ctx, hold, call.answers)
        if isinstance(released, types.InputRequiredResult):
            call.end(released)
            return
        call.answers = released
        call.record = await names.resolve_when_ready(call.name)
