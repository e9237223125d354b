"""The instructions each session is given: the `initialize` answer's and, on 2026-07-28,
`server/discover`'s, made when the request comes (`router.server.listing.door`), not when
the server was built, so a session opened after a reload or after an upstream listed is told
of the servers as they are then. A session already initialized keeps what it was told."""

from __future__ import annotations

from typing import Any

from mcp.server.context import CallNext, ServerRequestContext

TOLD_IN = frozenset({"initialize", "server/discover"})


async def tell_instructions(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
    """Middleware (inside the authorization layer, so a principal is told only of the
    servers it may see): the answer's `instructions` replaced by the live ones."""
    result = await call_next(ctx)
    if ctx.method in TOLD_IN and isinstance(result, dict):
        state = ctx.lifespan_context
        await state.door.warm(state.pool.upstreams, state.settings.servers_summary_tokens)
        result = {**result, "instructions": state.instructions}
    return result
