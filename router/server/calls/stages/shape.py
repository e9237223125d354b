"""Shape: a transformed tool's arguments as its upstream takes them (`router.shaping`).

The model saw the transformed schema: fixed parameters gone, defaults shown as `default`.
Here a left-out parameter gets its default and every fixed one its value, over whatever
the call sent (a model that guessed a fixed parameter's name still cannot change it); the
call then goes out under the upstream's own name (`ToolRecord.called_as`)."""

from __future__ import annotations

import copy
import logging

from router.server.calls.call import ToolCall

logger = logging.getLogger(__name__)


async def shape(call: ToolCall) -> None:
    shaping = call.tool.shaping
    if shaping is None or not (shaping.defaults or shaping.fixed):
        return
    arguments = dict(call.arguments)
    for name, value in shaping.defaults.items():
        if name not in arguments:
            arguments[name] = copy.deepcopy(value)
    overridden = sorted(n for n in shaping.fixed if n in arguments)
    if overridden:
        logger.info(
            "%s: fixed argument(s) %s set by the config, not by the call",
            call.tool.qualified_name,
            ", ".join(overridden),
        )
    arguments.update(copy.deepcopy(shaping.fixed))
    call.arguments = arguments
