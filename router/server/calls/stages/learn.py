"""Learn: a call that succeeded is usage feedback for the searches before it
(`Searcher.learn`). Learning is a hint: it never fails the call it follows."""

from __future__ import annotations

import logging

from router.server.calls.call import ToolCall
from router.server.lifecycle.requests import connection

logger = logging.getLogger(__name__)


async def learn(call: ToolCall) -> None:
    result = call.upstream  # as the upstream gave it: a cut result may be marked isError
    if result is None or result.is_error:
        return
    try:
        await call.state.searcher.learn(connection(call.ctx), call.tool)
    except Exception:
        logger.warning("usage feedback not recorded", exc_info=True)
