"""A task on the audit trail (`router.audit`): a `task` line for each status it enters, from
its creation (`working`, or `input_required` when it asks at once) to its outcome
(`completed`, `failed` or `cancelled`). The request that created it is the call's own
`tool-call` line, whose outcome is `task`. A line names the task by a digest of its id (the
id itself lets its principal read the result), besides the principal, tool and arguments."""

from __future__ import annotations

import hashlib
import time
from contextlib import suppress
from typing import TYPE_CHECKING

from router.core.errors import AuditUnavailable
from router.server.calls import audit
from router.server.calls.call import ToolCall

if TYPE_CHECKING:
    from router.server.tasks.task import Note, Task


def digest_of(task_id: str) -> str:
    """How a line names a task: the id itself would let a reader of the trail read its result."""
    return "sha256:" + hashlib.sha256(task_id.encode()).hexdigest()[:32]


def noting(call: ToolCall) -> Note | None:
    """What writes `call`'s task's statuses to the trail; None without one."""
    trail = call.state.audit
    if trail is None:
        return None
    started = time.perf_counter()
    tool = call.tool
    asked = audit.Request(call.ctx, "task", tool.server, tool.qualified_name, call.arguments)

    # made here, in the request: a status may change in an upstream's task (its question)
    base = audit.record_of(asked, trail, started, "working")

    async def note(task: Task) -> None:
        elapsed = round((time.perf_counter() - started) * 1000, 3)
        record = {**base, "outcome": task.status, "latency_ms": elapsed}
        record["task"] = digest_of(task.id)
        if task.error is not None:
            record["error"] = str(task.error.get("message", ""))
        with suppress(AuditUnavailable):  # the trail counts and logs it; the task goes on
            await audit.write(trail, record)

    return note
