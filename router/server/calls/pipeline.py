"""Where a tool call goes: the stages it passes, in order, read top to bottom.

Every tool call passes here: a direct `tools/call`, one wrapped in `call_tool`, and each call
a code-mode program makes (`router.server.code_mode.tools` is handed `run_call`). The stages
are plain async functions over one `ToolCall`, each in its own module under `stages/`; one
that answers the call (`ToolCall.end`) stops it there. An explicit list rather than a
middleware chain: each stage does one step and hands the same object on, none needs to wrap
the ones after it (the upstream call's span and timing wrap only the upstream call, inside
`forward`), and the order is this tuple."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import mcp_types as types

from router.server.calls import audit, refusals
from router.server.calls.call import Answer, ToolCall
from router.server.calls.stages.authorize import authorize
from router.server.calls.stages.forward import forward
from router.server.calls.stages.learn import learn
from router.server.calls.stages.limit import limit
from router.server.calls.stages.meter import meter
from router.server.calls.stages.resolve import resolve
from router.server.calls.stages.shape import shape
from router.server.calls.stages.validate import validate
from router.server.lifecycle.requests import Context
from router.server.lifecycle.state import RouterState
from router.server.tasks.wire import CreatedTask
from router.upstream.connection.host_requests import InputAnswers

Stage = Callable[[ToolCall], Awaitable[None]]

STAGES: tuple[Stage, ...] = (
    resolve,  # the name to a tool of the current catalog; a held tool may be approved here
    validate,  # the arguments against the tool's input schema
    shape,  # a transformed tool's fixed and default arguments added (router.shaping)
    authorize,  # the profile and policy in force; a tool that asks first asks the user
    meter,  # the caller's quotas: a call over one never reaches the upstream
    forward,  # to the upstream, its requests relayed to the host, or as a held call
    limit,  # the result cut to its token limit, the rest kept for `read_result`
    learn,  # usage feedback from a call that succeeded
)


async def run_call(
    ctx: Context,
    state: RouterState,
    name: str,
    arguments: dict[str, Any],
    answers: InputAnswers | None = None,
    *,
    may_be_task: bool = False,
) -> Answer:
    """Run the call named `name` through every stage; its answer for the host.

    An unknown tool or bad arguments raise `InvalidParams`, a denied one `ToolDenied` (both
    JSON-RPC errors); a failing upstream gives an `isError` result. With `router.audit`,
    the decision is written to the trail before the answer goes back
    (`router.server.calls.audit`). A caller past its rate of refused calls is answered as
    over quota before any stage runs (`router.server.calls.refusals`). `may_be_task`: a
    host's own call, which may run on as a task (`router.server.tasks.runner`)."""
    call = ToolCall(ctx, state, name, arguments, answers, may_be_task=may_be_task)
    return await refusals.rated(call, _audited)


async def run_program_call(
    ctx: Context,
    state: RouterState,
    name: str,
    arguments: dict[str, Any],
    answers: InputAnswers | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """`run_call` for a code-mode program's call, which never becomes a task."""
    answer = await run_call(ctx, state, name, arguments, answers)
    if isinstance(answer, CreatedTask):
        raise RuntimeError(f"{name}: a program's call became a task")
    return answer


async def _audited(call: ToolCall) -> Answer:
    trail = call.state.audit
    if trail is None:
        return await _through_stages(call)
    return await audit.audited(call, trail, _through_stages)


async def _through_stages(call: ToolCall) -> Answer:
    try:
        for stage in STAGES:
            await stage(call)
            if call.ended:
                break
    finally:
        for done in call.finish:
            done()
        if call.slot is not None:  # not handed to a held call
            call.slot()
    if call.answer is None:
        raise RuntimeError(f"{call.name}: no stage answered the call")
    return call.answer
