"""Limit and keep: a result over its server's token limit is cut (`router.server.results`),
and, in the modes that list `call_tool`, what was cut is kept for `read_result`, for the
caller alone."""

from __future__ import annotations

import weakref

from router.server.calls.call import ToolCall
from router.server.lifecycle.requests import Context, connection, is_modern
from router.server.lifecycle.state import RouterState
from router.server.results.kept import Keeping, Owner
from router.server.results.limits import limit_result


async def limit(call: ToolCall) -> None:
    result = call.result
    if result is None:
        return
    tokens = call.state.settings.result_tokens_for(call.tool.server)
    call.answer = await limit_result(result, tokens, keeping(call.ctx, call.state))


def owner(ctx: Context, state: RouterState) -> Owner:
    """Who a kept result belongs to: the principal, and the connection of a client that
    holds a session (a 2026-07-28 request stands alone: its principal only)."""
    principal = state.settings.visibility.principal()
    held = None if is_modern(ctx) else weakref.ref(connection(ctx))
    return Owner(principal.key if principal is not None else None, held)


def keeping(ctx: Context, state: RouterState) -> Keeping | None:
    """How a cut result is kept for `read_result`: in the modes that list `call_tool`, which
    reaches it (pass-through lists no meta-tools, and code mode's programs call tools by
    their names)."""
    if state.settings.mode not in ("search", "dynamic"):
        return None
    return state.kept.keeping(owner(ctx, state))
