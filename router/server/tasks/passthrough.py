"""An upstream's own tasks, passed through to the host.

An upstream that speaks 2026-07-28 and advertises the tasks extension decides itself which
calls become tasks. A host's `tools/call` that declared the extension (and may be a task: not
a code-mode program's, not a tool whose mode is `never`) reaches it with the host's
declaration passed on, after the pipeline's stages (resolve, validate, authorize, meter) as
any call. The upstream may answer in the request (that answer goes back as it is) or with its
`CreateTaskResult`: the host then gets a task whose id is sealed (`router.approvals.sealing`,
purpose `task`): the upstream, the upstream's own id and the tool, bound to the principal, with
an expiry of `router.tasks.ttl_s` (or the upstream's `ttlMs`, if shorter). The router keeps
nothing: any replica that shares the sealing key opens the id.

`tasks/get`, `tasks/update` and `tasks/cancel` on such an id open it as the caller's (another
principal's, a forged or an expired id are unknown, -32602, as for a router-run task), and go
to the upstream with its own id (its `Mcp-Name` too, over HTTP) and the caller's declaration;
the answer comes back with the ids rewritten, and a completed task's result cut to its server's
token limit as a call's would be. On the audit trail, the creating request is a `tool-call`
line whose outcome is `task`; a `task` line is written at the creation (`working`) and for each
`tasks/cancel` (`cancelled`), naming the task by a digest of its id."""

from __future__ import annotations

import time
from collections.abc import Mapping
from contextlib import suppress
from typing import Any

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from pydantic import ValidationError

from router.approvals.sealing import Binding, Refused, Sealer
from router.core.errors import AuditUnavailable, InvalidParams, UpstreamProtocolError
from router.server.calls import audit
from router.server.calls.call import Answer, ToolCall
from router.server.calls.stages.limit import keeping
from router.server.lifecycle.requests import Context
from router.server.results.limits import limit_result
from router.server.tasks.extension import EXTENSION, declares_tasks
from router.server.tasks.table import UNKNOWN, caller
from router.server.tasks.trail import digest_of
from router.server.tasks.wire import CreatedTask
from router.upstream.connection.capabilities import for_host
from router.upstream.connection.tasks import (
    TaskMethod,
    call_tool_passing_tasks,
    offers_tasks,
    task_request,
)

MAX_UPSTREAM_ID = 1024
"""The longest upstream task id the router wraps (the sealed id carries it)."""


def is_passed_through(task_id: str) -> bool:
    """Whether `task_id` names an upstream's task (sealed), not one the router runs."""
    return Sealer.is_sealed(task_id)


async def passed(call: ToolCall, progress: ProgressFnT | None) -> Answer | None:
    """The call to an upstream that offers tasks, with the host's declaration passed on: its
    answer, or the host's task for the upstream's; None when the call is not one to pass so
    (the router may run it as a task itself)."""
    ctx, state, tool = call.ctx, call.state, call.tool
    if not call.may_be_task or not declares_tasks(ctx):
        return None
    if state.tasks.modes.mode_of(tool.server, tool.called_as) == "never":
        return None
    upstream = state.pool.upstream(tool.server)
    if not offers_tasks(upstream):
        return None
    async with state.relay.calling(ctx, tool.server):
        with for_host(ctx.session.client_capabilities):
            answer = await call_tool_passing_tasks(
                upstream, tool.called_as, call.arguments, _declared(ctx), progress
            )
    if not isinstance(answer, dict):
        return answer
    created = _wrapped(call, answer)
    call.outcome = "task"
    name, arguments = tool.qualified_name, call.arguments
    await _note(ctx, tool.server, name, created.task_id, created.status, arguments)
    return created


def _wrapped(call: ToolCall, upstream_task: Mapping[str, Any]) -> CreatedTask:
    """The host's `CreateTaskResult` for the upstream's: its id sealed, its life bounded."""
    state, tool = call.state, call.tool
    own, ttl = upstream_task["taskId"], upstream_task.get("ttlMs")
    if len(own) > MAX_UPSTREAM_ID:
        raise UpstreamProtocolError(tool.server, f"a task id over {MAX_UPSTREAM_ID} characters")
    settings = state.tasks.settings
    seconds = settings.ttl_s
    if isinstance(ttl, int) and 0 < ttl < seconds * 1000:
        seconds = ttl / 1000
    life = round(seconds * 1000)
    data = {"u": tool.server, "t": own, "n": tool.qualified_name, "l": life}
    wrapped = state.sealer.seal(Binding("task", caller()), seconds, data)
    try:
        return CreatedTask.model_validate(
            {
                **{k: v for k, v in upstream_task.items() if k != "_meta"},
                "taskId": wrapped,
                "ttlMs": life,
                "pollIntervalMs": upstream_task.get("pollIntervalMs") or settings.poll_ms,
            }
        )
    except ValidationError as exc:
        raise UpstreamProtocolError(tool.server, "tools/call: an invalid task") from exc


async def forwarded(
    ctx: Context, method: TaskMethod, task_id: str, params: dict[str, Any] | None = None
) -> dict[str, Any]:
    """`method` on the caller's passed-through task `task_id`, answered by its upstream."""
    state = ctx.lifespan_context
    opened = state.sealer.open(task_id, Binding("task", caller()))
    if isinstance(opened, Refused):
        raise InvalidParams(UNKNOWN)
    server, own = str(opened.data.get("u")), str(opened.data.get("t"))
    tool, life = str(opened.data.get("n")), opened.data.get("l")
    upstream = state.pool.upstream(server)
    with for_host(ctx.session.client_capabilities):
        answer = await task_request(upstream, method, own, _declared(ctx), params)
    answer.pop("_meta", None)  # the upstream's own (its `serverInfo`): the host's server is us
    if "taskId" in answer:  # the upstream's own id never reaches the host
        answer["taskId"] = task_id
    ttl = answer.get("ttlMs")
    if "ttlMs" in answer and isinstance(life, int) and (not isinstance(ttl, int) or ttl > life):
        answer["ttlMs"] = life
    result = answer.get("result")
    if method == "tasks/get" and isinstance(result, dict):
        answer["result"] = await _limited(ctx, server, result)
    if method == "tasks/cancel":
        await _note(ctx, server, tool, task_id, "cancelled", {})
    return answer


async def _limited(ctx: Context, server: str, result: dict[str, Any]) -> dict[str, Any]:
    """A completed task's result, cut to `server`'s token limit as a call's would be."""
    state = ctx.lifespan_context
    try:
        parsed = types.CallToolResult.model_validate(result, by_name=False)
    except ValidationError as exc:
        raise UpstreamProtocolError(server, "tasks/get: an invalid result") from exc
    tokens = state.settings.result_tokens_for(server)
    cut = await limit_result(parsed, tokens, keeping(ctx, state))
    if cut is parsed:
        return result
    dumped = cut.model_dump(by_alias=True, exclude_none=True, mode="json")
    dumped.pop("resultType", None)
    return dumped


def _declared(ctx: Context) -> dict[str, Any]:
    """The settings the host declared the extension with (`declares_tasks` holds)."""
    envelope = (ctx.meta or {}).get(types.CLIENT_CAPABILITIES_META_KEY)
    extensions = envelope.get("extensions") if isinstance(envelope, Mapping) else None
    settings = extensions.get(EXTENSION) if isinstance(extensions, Mapping) else None
    return dict(settings) if isinstance(settings, Mapping) else {}


async def _note(
    ctx: Context, server: str, tool: str, task_id: str, outcome: str, arguments: dict[str, Any]
) -> None:
    trail = ctx.lifespan_context.audit
    if trail is None:
        return
    asked = audit.Request(ctx, "task", server, tool, arguments)
    record = audit.record_of(asked, trail, time.perf_counter(), outcome)
    record["task"] = digest_of(task_id)
    with suppress(AuditUnavailable):  # the trail counts and logs it
        await audit.write(trail, record)
