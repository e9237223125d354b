"""Which calls become tasks, and running them.

A host that declares the tasks extension on a 2026-07-28 `tools/call` may get the call as a
task, by the tool's mode (`router.server.tasks.modes`): `always` at once, `auto` once it runs
past `router.tasks.after_ms` or asks the host something (one that ends sooner answers in its
request, as without the extension), `never` not at all. A client that did not declare it
gets every call in its request, as before (but a `required` tool's: refused, `-32021`); so do
code mode's programs.

The call passes the pipeline once (`router.server.calls.pipeline`): resolve, validate,
authorize, meter and audit happen in the request that creates the task; `forward` hands the
upstream call here, which runs it in the tasks' task group (`router.server.tasks.table`), in
the request's context (its principal, endpoint and per-user sign-in). The caller's place in
flight (`ToolCall.slot`) is held until the upstream call ends, not the request. The result is
cut to its server's token limit when it comes (the rest kept for `read_result`, for the
principal), and kept up to `router.tasks.result_bytes`. Over a bound of the table an `auto`
call answers in its request, an `always` or `required` one is refused."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import anyio
import mcp_types as types
from mcp.shared.exceptions import MCPError

from router.core.errors import RouterError, UpstreamError
from router.server.calls.call import Answer, ToolCall
from router.server.calls.stages.limit import keeping
from router.server.lifecycle.errors import jsonrpc_error, tool_error_result
from router.server.results.limits import limit_result
from router.server.tasks import trail
from router.server.tasks.extension import declares_tasks, missing_extension
from router.server.tasks.task import Task
from router.server.tasks.wire import created
from router.upstream.connection.capabilities import for_host
from router.upstream.connection.host_requests import InputAnswers

logger = logging.getLogger(__name__)

_EXPIRED = "mcp-router: the call ran past the task's time to live (router.tasks.ttl_s)"


async def started(call: ToolCall) -> Answer | None:
    """The call as a task when it becomes one (or its result, when an `auto` call ended
    early); None: not one for a task, and `forward` runs it in the request."""
    tasks, tool = call.state.tasks, call.tool
    group = tasks.group
    if not call.may_be_task or group is None:
        return None
    mode = tasks.modes.mode_of(tool.server, tool.called_as)
    if not declares_tasks(call.ctx):
        if mode == "required":
            raise missing_extension("tools/call")
        return None
    if mode == "never":
        return None
    task = tasks.admit(tool.qualified_name, trail.noting(call), required=mode != "auto")
    if task is None:
        return None
    slot, call.slot = call.slot, None  # the task's call gives it back, not the request
    group.start_soon(_work, call, task, slot)
    if mode == "auto":
        try:
            with anyio.move_on_after(tasks.settings.after_ms / 1000):
                await task.settled.wait()
        except BaseException:  # the request was cancelled: so is its call
            task.scope.cancel()
            raise
        if task.done.is_set() and not task.questions():
            tasks.drop(task)
            return _early(task)
    task.visible = True
    call.outcome = "task"
    await task.changed()
    return created(task, tasks.settings.poll_ms)


async def _work(call: ToolCall, task: Task, slot: Callable[[], None] | None) -> None:
    """The upstream call, to its end or the task's; its outcome kept on the task."""
    try:
        with task.scope:
            task.scope.deadline = anyio.current_time() + (task.expires - time.time())
            result = await _call_upstream(call, task)
            if isinstance(result, types.InputRequiredResult):
                _asked(task, result)
                return
            tokens = call.state.settings.result_tokens_for(call.tool.server)
            _keep(call, task, await limit_result(result, tokens, keeping(call.ctx, call.state)))
        if task.scope.cancelled_caught and not task.cancelled:
            task.error = {"code": types.REQUEST_TIMEOUT, "message": _EXPIRED}
    except MCPError as exc:  # the upstream's JSON-RPC error
        task.error = exc.error.model_dump(by_alias=True, exclude_none=True, mode="json")
    except RouterError as exc:
        task.error = jsonrpc_error(exc).model_dump(by_alias=True, exclude_none=True)
    except Exception:  # a bug's: the task says so, the log has it
        logger.exception("task of %s failed", task.tool)
        task.error = {"code": types.INTERNAL_ERROR, "message": "mcp-router: internal error"}
    finally:
        if slot is not None:
            slot()
        task.done.set()
        task.settled.set()
        with anyio.CancelScope(shield=True):
            await task.changed()


async def _call_upstream(
    call: ToolCall, task: Task
) -> types.CallToolResult | types.InputRequiredResult:
    """The upstream's answer. A 2026-07-28 upstream's round (a new `auto` call's, or any
    retry's, with the host's answers) may answer `InputRequiredResult`: before the call is a
    task that is the answer in the request; after, the call runs again, its questions the
    task's (the SDK's own rounds, through `relay`)."""
    state, tool, ctx = call.state, call.tool, call.ctx
    try:
        async with state.relay.calling(ctx, tool.server, held=task):
            with for_host(ctx.session.client_capabilities):
                answers = _round(call)
                if answers is not None:
                    answer = await state.pool.call_tool_round(
                        tool.server, tool.called_as, call.arguments, answers=answers
                    )
                    if isinstance(answer, types.CallToolResult) or not task.visible:
                        return answer
                return await state.pool.call_tool(tool.server, tool.called_as, call.arguments)
    except UpstreamError as exc:  # the model reads it, as a call in a request would
        logger.warning("task call to %s failed: %s", tool.qualified_name, exc)
        return tool_error_result(exc)


def _round(call: ToolCall) -> InputAnswers | None:
    """The host's answers, when the call goes to its upstream as a 2026-07-28 round: a
    retry's answers must reach it, and a new `auto` call's question may go back in the
    request; None: the SDK's own rounds."""
    answers, tool = call.answers, call.tool
    if answers is None or not call.state.pool.upstream(tool.server).speaks_modern:
        return None
    if answers.responses or answers.state is not None:
        return answers
    auto = call.state.tasks.modes.mode_of(tool.server, tool.called_as) == "auto"
    return answers if auto else None


def _keep(call: ToolCall, task: Task, result: types.CallToolResult) -> None:
    bound = call.state.tasks.settings.result_bytes
    size = len(result.model_dump_json(by_alias=True, exclude_none=True))
    if size > bound:
        message = f"mcp-router: the result is {size} bytes, over the {bound} a task keeps"
        task.error = {"code": types.INTERNAL_ERROR, "message": message}
        return
    task.result = result.model_dump(by_alias=True, exclude_none=True, mode="json")
    task.result.pop("resultType", None)


def _asked(task: Task, asked: types.InputRequiredResult) -> None:
    """A round's questions, the answer in the request of a call not yet a task; one that
    became a task meanwhile fails, saying so."""
    if task.visible:
        message = "mcp-router: the upstream asked for input after the call became a task"
        task.error = {"code": types.INTERNAL_ERROR, "message": message}
        return
    task.result = asked.model_dump(by_alias=True, exclude_none=True, mode="json")


def _early(task: Task) -> Answer:
    """An `auto` call that ended before it became a task: its answer in the request."""
    if task.result is not None and task.result.get("resultType") == "input_required":
        return types.InputRequiredResult.model_validate(task.result)
    if task.result is not None:
        return types.CallToolResult.model_validate(task.result)
    error = task.error or {"code": types.INTERNAL_ERROR, "message": "no result"}
    raise MCPError(error["code"], str(error.get("message", "")), error.get("data"))
