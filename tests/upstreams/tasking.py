"""An upstream that runs its own tasks (the 2026-07-28 tasks extension, SEP-2663), written as
a third party would on the mcp SDK, which ships no tasks: an `Extension` that advertises
`io.modelcontextprotocol/tasks`, answers a `tools/call` of `job` or `confirm` from a client that
declared it with a `CreateTaskResult`, and serves `tasks/get`, `tasks/update` and
`tasks/cancel`, each refused without the declaration (-32021), with an `Mcp-Name` header that
does not name the body's task over HTTP (-32020), or for an id it never made (-32602).

Usage: `tasking.py streamable-http PORT LOG` (or `tasking.py LOG` over stdio). Tools:
`job(key)`: a task that works until `release(key)`, then completes with `done KEY`; called
without the declaration it answers `done KEY` at once. `confirm(key)`: a task that needs input
(an elicitation under `inputRequests["ok"]`) and completes with `confirmed KEY` once
`tasks/update` answers it. `release(key)`: ends the job `key`. LOG gets a line for each thing
the server did: `task KEY ID`, `sync KEY`, `get ID`, `update ID`, `cancelled KEY`.
"""

from __future__ import annotations

import secrets
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import mcp_types as types
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.extension import Extension, MethodBinding
from mcp.server.mcpserver import MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import Field

EXTENSION = "io.modelcontextprotocol/tasks"
LOG = Path(sys.argv[-1])
TASK_TOOLS = ("job", "confirm")


def _log(line: str) -> None:
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\n")


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass
class Job:
    id: str
    key: str
    status: str
    created: str = field(default_factory=_now)
    updated: str = field(default_factory=_now)
    text: str | None = None
    asks: dict[str, Any] | None = None

    def wire(self) -> dict[str, Any]:
        task: dict[str, Any] = {
            "taskId": self.id,
            "status": self.status,
            "createdAt": self.created,
            "lastUpdatedAt": self.updated,
            "ttlMs": 600_000,
            "pollIntervalMs": 50,
        }
        if self.status == "completed":
            task["result"] = {"content": [{"type": "text", "text": self.text}], "isError": False}
        if self.status == "input_required":
            task["inputRequests"] = self.asks
        return task

    def move(self, status: str, text: str | None = None) -> None:
        self.status, self.text, self.updated = status, text, _now()


JOBS: dict[str, Job] = {}


class TaskParams(types.RequestParams):
    task_id: str


class UpdateParams(TaskParams):
    input_responses: dict[str, Any] = Field(default_factory=dict)


def _declares(ctx: ServerRequestContext[Any, Any]) -> bool:
    envelope: Any = (ctx.meta or {}).get(types.CLIENT_CAPABILITIES_META_KEY) or {}
    return EXTENSION in (envelope.get("extensions") or {})


def _job(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> Job:
    if not _declares(ctx):
        raise MCPError(types.MISSING_REQUIRED_CLIENT_CAPABILITY, f"declare {EXTENSION}")
    headers = getattr(ctx.request, "headers", None)  # the HTTP request's; none on stdio
    if headers is not None and headers.get("mcp-name") != params.task_id:
        raise MCPError(types.HEADER_MISMATCH, "Mcp-Name does not name the body's task")
    job = JOBS.get(params.task_id)
    if job is None:
        raise MCPError(types.INVALID_PARAMS, "no such task")
    return job


async def get(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
    job = _job(ctx, params)
    _log(f"get {job.id}")
    return {"resultType": "complete", **job.wire()}


async def update(ctx: ServerRequestContext[Any, Any], params: UpdateParams) -> dict[str, Any]:
    job = _job(ctx, params)
    _log(f"update {job.id}")
    answer = params.input_responses.get("ok")
    if job.status == "input_required" and isinstance(answer, dict):
        said = answer.get("action")
        job.move("completed", f"confirmed {job.key}" if said == "accept" else f"kept {job.key}")
    return {"resultType": "complete"}


async def cancel(ctx: ServerRequestContext[Any, Any], params: TaskParams) -> dict[str, Any]:
    job = _job(ctx, params)
    if job.status in ("working", "input_required"):
        job.move("cancelled")
        _log(f"cancelled {job.key}")
    return {"resultType": "complete"}


class Tasks(Extension):
    identifier = EXTENSION

    def methods(self) -> Sequence[MethodBinding]:
        return (
            MethodBinding("tasks/get", TaskParams, get),
            MethodBinding("tasks/update", UpdateParams, update),
            MethodBinding("tasks/cancel", TaskParams, cancel),
        )

    async def intercept_tool_call(
        self,
        params: types.CallToolRequestParams,
        ctx: ServerRequestContext[Any, Any],
        call_next: CallNext,
    ) -> HandlerResult:
        if params.name not in TASK_TOOLS or not _declares(ctx):
            return await call_next(ctx)
        key = str((params.arguments or {}).get("key"))
        job = Job(f"up-{secrets.token_hex(8)}", key, "working")
        if params.name == "confirm":
            schema = {"type": "object", "properties": {"sure": {"type": "boolean"}}}
            ask = {"message": f"Confirm {key}?", "requestedSchema": schema}
            job.asks = {"ok": {"method": "elicitation/create", "params": ask}}
            job.status = "input_required"
        JOBS[job.id] = job
        _log(f"task {key} {job.id}")
        return {"resultType": "task", **job.wire()}


app = MCPServer("tasking", extensions=[Tasks()])


@app.tool()
async def job(key: str) -> str:
    """Run the job `key` (as a task for a client that declared the tasks extension)."""
    _log(f"sync {key}")
    return f"done {key}"


@app.tool()
async def confirm(key: str) -> str:
    """Ask to confirm `key` (a task for a client that declared the tasks extension)."""
    return f"unconfirmed {key}"


@app.tool()
async def release(key: str) -> str:
    """Let the job `key` complete."""
    for found in JOBS.values():
        if found.key == key and found.status == "working":
            found.move("completed", f"done {key}")
    return f"released {key}"


if __name__ == "__main__":
    if len(sys.argv) == 4:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
