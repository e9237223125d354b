"""`tasks/get`, `tasks/update` and `tasks/cancel`, and the extension's advertisement.

Each method needs the extension declared on its own request (-32021 otherwise); over HTTP
its `Mcp-Name` header must name the body's `taskId` (-32020 otherwise, which the SDK answers
with HTTP 400); then the task must be the caller's (`Tasks.find`: -32602 for any other). They
pass the authorization layer as `tools` requests (`MCP_RULES`). An id the router sealed names
an upstream's own task, and the method goes to that upstream (`router.server.tasks.passthrough`).
`tasks/result` and `tasks/list` do not exist in this revision of the extension: no handler, so
-32601."""

from __future__ import annotations

from typing import Any

import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError
from mcp.shared.inbound import MCP_NAME_HEADER, decode_header_value
from pydantic import Field

from router.server.lifecycle.errors import errors_as_mcp
from router.server.lifecycle.requests import Context
from router.server.lifecycle.state import RouterState
from router.server.tasks.extension import EXTENSION, SETTINGS, declares_tasks, missing_extension
from router.server.tasks.listening import serve as listen_with_tasks
from router.server.tasks.passthrough import forwarded, is_passed_through
from router.server.tasks.table import Tasks
from router.server.tasks.task import Task
from router.server.tasks.wire import ACK, detailed

__all__ = ["Tasks", "cancel_task", "get_task", "listen_with_tasks", "serve_tasks", "update_task"]


class TaskParams(types.RequestParams):
    task_id: str = Field(min_length=1, max_length=4096)
    """A router-run task's id, or an upstream's sealed (`router.server.tasks.passthrough`)."""


class UpdateParams(TaskParams):
    input_responses: dict[str, dict[str, Any]] = Field(default_factory=dict, max_length=64)


def _checked(ctx: Context, method: str, params: TaskParams) -> None:
    if not declares_tasks(ctx):
        raise missing_extension(method)
    headers = getattr(ctx.request, "headers", None)  # an HTTP request's; none on stdio
    if headers is not None and decode_header_value(headers.get(MCP_NAME_HEADER)) != params.task_id:
        raise MCPError(
            types.HEADER_MISMATCH,
            f"mcp-router: the {MCP_NAME_HEADER} header must name the task of the body's taskId",
        )


def _task(ctx: Context, params: TaskParams) -> Task:
    return ctx.lifespan_context.tasks.find(params.task_id)


@errors_as_mcp
async def get_task(ctx: Context, params: TaskParams) -> dict[str, Any]:
    _checked(ctx, "tasks/get", params)
    if is_passed_through(params.task_id):
        return await forwarded(ctx, "tasks/get", params.task_id)
    return detailed(_task(ctx, params), ctx.lifespan_context.tasks.settings.poll_ms)


@errors_as_mcp
async def update_task(ctx: Context, params: UpdateParams) -> dict[str, Any]:
    _checked(ctx, "tasks/update", params)
    if is_passed_through(params.task_id):
        answers = {"inputResponses": params.input_responses}
        return await forwarded(ctx, "tasks/update", params.task_id, answers)
    _task(ctx, params).deliver(params.input_responses)
    return dict(ACK)


@errors_as_mcp
async def cancel_task(ctx: Context, params: TaskParams) -> dict[str, Any]:
    _checked(ctx, "tasks/cancel", params)
    if is_passed_through(params.task_id):
        return await forwarded(ctx, "tasks/cancel", params.task_id)
    _task(ctx, params).cancel()  # a finished task's is a no-op
    return dict(ACK)


def serve_tasks(server: Server[RouterState]) -> None:
    """Advertise the extension and serve its methods."""
    server.extensions[EXTENSION] = SETTINGS
    server.add_request_handler("tasks/get", TaskParams, get_task)
    server.add_request_handler("tasks/update", UpdateParams, update_task)
    server.add_request_handler("tasks/cancel", TaskParams, cancel_task)
