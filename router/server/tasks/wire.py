"""A task as the extension's wire has it: `tools/call`'s `CreateTaskResult` (flat: the task's
fields beside `resultType: "task"`), and `tasks/get`'s detailed task, which carries the
result once completed, the error once failed, and the open questions while input is
required. Times are ISO 8601 in UTC; `ttlMs` and `pollIntervalMs` are integer milliseconds.
No `requestState` and no `related-task` `_meta`: the extension has neither."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, Literal

import mcp_types as types

from router.server.tasks.task import Status, Task


class CreatedTask(types.Result):
    """`CreateTaskResult`: the answer of a `tools/call` that became a task."""

    result_type: Literal["task"] = "task"
    task_id: str
    status: Status
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int
    poll_interval_ms: int


def _iso(seconds: float) -> str:
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def created(task: Task, poll_ms: int) -> CreatedTask:
    return CreatedTask(
        task_id=task.id,
        status=task.status,
        status_message=task.message,
        created_at=_iso(task.created),
        last_updated_at=_iso(task.updated),
        ttl_ms=round((task.expires - task.created) * 1000),
        poll_interval_ms=poll_ms,
    )


def detailed(task: Task, poll_ms: int) -> dict[str, Any]:
    """`tasks/get`'s answer."""
    answer: dict[str, Any] = created(task, poll_ms).model_dump(by_alias=True, exclude_none=True)
    answer["resultType"] = "complete"
    status = answer["status"]
    if status == "completed" and task.result is not None:
        answer["result"] = task.result
    elif status == "failed" and task.error is not None:
        answer["error"] = task.error
    elif status == "input_required":
        answer["inputRequests"] = task.questions()
    return answer


ACK: dict[str, Any] = {"resultType": "complete"}
"""`tasks/update`'s and `tasks/cancel`'s answer: taken (what follows shows in `tasks/get`)."""
