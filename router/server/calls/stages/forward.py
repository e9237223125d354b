"""Forward: the call to the upstream that owns the tool, and its answer back.

What the upstream asks of the host on the way reaches the host (`router.server.calls.relay`),
with the host's capabilities (`for_host`). Between a 2026-07-28 host and a 2026-07-28 upstream
the upstream's questions pass as the `InputRequiredResult` they are, and the host's retry
(`answers`) goes back to it; a 2026-07-28 host's call to an upstream reached over the
handshake, which asks mid-call, becomes a held call (`router.server.calls.held_calls`).
Progress is relayed only when the host asked (the upstream's progress still pushes the call
timeout back, `router.upstream.failures.ProgressClock`). The call is timed, counted and
traced here; the SDK's client span inside this one carries the trace on in the upstream's
`_meta`. A host that declared the tasks extension may get a new call as a task instead: the
upstream's own, where it offers tasks (`router.server.tasks.passthrough`), or one the router
runs (`router.server.tasks.runner`)."""

from __future__ import annotations

import contextlib
import logging

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from router.core.errors import SignInNeeded, UpstreamError
from router.core.tracing import failed, span
from router.server.calls import audit
from router.server.calls.call import Answer, ToolCall
from router.server.calls.held_calls import HeldCall
from router.server.lifecycle.errors import tool_error_result
from router.server.lifecycle.requests import is_modern, wants_progress
from router.server.tasks import passthrough
from router.server.tasks import runner as tasks
from router.server.tasks.wire import CreatedTask
from router.upstream.connection.capabilities import for_host

logger = logging.getLogger(__name__)


async def forward(call: ToolCall) -> None:
    ctx, state, tool = call.ctx, call.state, call.tool
    progress = ctx.session.report_progress if wants_progress(ctx) else None
    attributes = {"mcp_router.upstream": tool.server, "gen_ai.tool.name": tool.name}
    with span(f"mcp-router forward {tool.qualified_name}", attributes) as current:
        try:
            with state.metrics.upstream_call(tool.server):
                answer = await _answer(call, progress)
        except UpstreamError as exc:
            logger.warning("call to %s failed: %s", tool.qualified_name, exc)
            failed(current, str(exc))
            if isinstance(exc, SignInNeeded):
                call.outcome = "sign-in-needed"
            call.end(tool_error_result(exc))
            return
        if isinstance(answer, types.CallToolResult) and answer.is_error:
            state.metrics.tool_error(tool.server)
            failed(current, "tool error")
    if isinstance(answer, CreatedTask):  # the call runs on; `tasks/get` has its outcome
        call.end(answer)
        return
    if isinstance(answer, types.InputRequiredResult):  # the upstream's question, for the host
        call.end(answer if call.seal is None else state.approvals.sealed(answer, call.seal))
        return
    call.answer = call.upstream = answer


async def _answer(call: ToolCall, progress: ProgressFnT | None) -> Answer:
    ctx, state, tool, answers = call.ctx, call.state, call.tool, call.answers
    retry = answers is not None and (answers.responses or answers.state) is not None
    if call.seal is None and (not retry or not _held_here(call)):
        # a new call, or a 2026-07-28 upstream's round retried with the host's answers, may
        # run on as a task (the router's own: the upstream's are new calls' only)
        task = (None if retry else await passthrough.passed(call, progress)) or (
            await tasks.started(call)
        )
        if task is not None:
            return task
    if is_modern(ctx) and call.seal is None and _held_here(call):
        return await _held(call, progress)
    async with state.relay.calling(ctx, tool.server):
        with for_host(ctx.session.client_capabilities):
            if answers is not None and is_modern(ctx):
                return await state.pool.call_tool_round(
                    tool.server,
                    tool.called_as,
                    call.arguments,
                    answers=answers,
                    progress_callback=progress,
                )
            return await state.pool.call_tool(
                tool.server,
                tool.called_as,
                call.arguments,
                progress_callback=progress,
                handshake_host=not is_modern(ctx),
            )


def _held_here(call: ToolCall) -> bool:
    """Whether a 2026-07-28 host's call goes through `router.server.calls.held_calls`: its
    retry of a held call, or a call to an upstream reached over the handshake, which asks
    mid-call on a channel such a host does not have."""
    answers, state = call.answers, call.state
    if answers is not None and state.held.is_held(answers.state):
        return True
    return not state.pool.upstream(call.tool.server).speaks_modern


async def _held(call: ToolCall, report: ProgressFnT | None) -> Answer:
    state, tool, arguments, answers = call.state, call.tool, call.arguments, call.answers
    if answers is not None and answers.state is not None and state.held.is_held(answers.state):
        return await state.held.resume(answers.state, tool, arguments, answers.responses)
    ctx = call.ctx
    capabilities = ctx.session.client_capabilities

    async def relayed(progress: float, total: float | None, message: str | None) -> None:
        # Progress goes on the first request's stream, which ends at the first question.
        if report is not None:
            with contextlib.suppress(Exception):
                await report(progress, total, message)

    async def upstream_call(held: HeldCall) -> types.CallToolResult:
        try:  # outside `calling`, which keeps a call that timed out counted for a while
            async with state.relay.calling(ctx, tool.server, held=held):
                with for_host(capabilities):
                    return await state.pool.call_tool(
                        tool.server, tool.called_as, arguments, progress_callback=relayed
                    )
        except UpstreamError as exc:
            logger.warning("call to %s failed: %s", tool.qualified_name, exc)
            if isinstance(exc, SignInNeeded):
                call.outcome = "sign-in-needed"
            return tool_error_result(exc)

    slot, call.slot = call.slot, None  # the held call gives it back, not this request
    return await state.held.start(
        upstream_call, tool, arguments, release=slot, abandoned=audit.abandoned_call(call)
    )
