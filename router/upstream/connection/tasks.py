"""An upstream's own tasks (the 2026-07-28 tasks extension, SEP-2663), asked for on a host's
behalf: its `tools/call` with the host's declaration passed on, and its `tasks/*` methods.

An upstream that advertises the extension (`offers_tasks`) decides per call whether to answer
with a task; the router passes the host's declaration on only where it takes the answer
(`passing_tasks`). Its `CreateTaskResult` and `tasks/*` answers come back as the upstream wrote
them (JSON objects): the server layer rewrites their ids (`router.server.tasks.passthrough`).
Each `tasks/*` request names its task in `Mcp-Name` over HTTP, the upstream's own id.
"""

from __future__ import annotations

from typing import Any, Literal

import mcp_types as types
from mcp import Client
from mcp.shared.dispatcher import ProgressFnT
from pydantic import RootModel

from router.core.errors import ToolNotFound, UpstreamProtocolError
from router.upstream.connection.capabilities import TASKS_EXTENSION, passing_tasks
from router.upstream.failures import ProgressClock
from router.upstream.upstream import Upstream

TaskMethod = Literal["tasks/get", "tasks/update", "tasks/cancel"]


class _Raw(RootModel[dict[str, Any]]):
    """An answer as the upstream wrote it (the SDK's `send_request` parses into a model)."""


class _TaskRequest(types.Request[dict[str, Any], str]):
    """A `tasks/*` request: its `taskId` goes in the `Mcp-Name` header too."""

    name_param = "taskId"


def offers_tasks(upstream: Upstream) -> bool:
    """Whether `upstream` speaks 2026-07-28 and advertises the tasks extension."""
    return upstream.speaks_modern and TASKS_EXTENSION in upstream.status.extensions


async def call_tool_passing_tasks(
    upstream: Upstream,
    tool: str,
    arguments: dict[str, object] | None,
    declared: dict[str, Any],
    progress_callback: ProgressFnT | None = None,
) -> types.CallToolResult | types.InputRequiredResult | dict[str, Any]:
    """`tools/call` declaring the tasks extension with the host's `declared` settings: the
    result, the upstream's question, or its `CreateTaskResult` as it wrote it. Raises as
    `Upstream.call_tool` does."""
    if not upstream.allows(tool):
        raise ToolNotFound(f"{upstream.name}/{tool}")
    what = f"tools/call {tool!r}"
    clock = ProgressClock(upstream.timeouts.total_call_limit, progress_callback)
    request = types.CallToolRequest(
        params=types.CallToolRequestParams(name=tool, arguments=arguments)
    )

    async def send(client: Client) -> types.CallToolResult | types.InputRequiredResult | _Raw:
        answered = await client.session.send_request(
            request, _Raw, progress_callback=clock.callback
        )
        raw = answered.root
        if raw.get("resultType") == "task":
            if not isinstance(raw.get("taskId"), str) or not isinstance(raw.get("status"), str):
                raise UpstreamProtocolError(upstream.name, f"{what}: a task without its id")
            return answered
        try:
            if raw.get("resultType") == "input_required":
                return types.InputRequiredResult.model_validate(raw, by_name=False)
            result = types.CallToolResult.model_validate(raw, by_name=False)
        except ValueError as exc:
            raise UpstreamProtocolError(upstream.name, f"{what}: unexpected result") from exc
        if not result.is_error:  # as the SDK's `call_tool` checks it: its output schema
            await client.session.validate_tool_result(tool, result)
        return result

    with passing_tasks(declared):
        answer = await upstream.request(what, send, clock)
    return answer.root if isinstance(answer, _Raw) else answer


async def task_request(
    upstream: Upstream,
    method: TaskMethod,
    task_id: str,
    declared: dict[str, Any],
    params: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """`method` on the upstream's own task `task_id`, declaring the extension with the host's
    `declared` settings: its answer as the upstream wrote it. Raises as `Upstream.call_tool`
    does (`MCPError` for the upstream's JSON-RPC error, its code kept)."""
    request = _TaskRequest(method=method, params={**(params or {}), "taskId": task_id})
    with passing_tasks(declared):
        answered = await upstream.request(
            method, lambda client: client.session.send_request(request, _Raw)
        )
    return answered.root
