"""One tool call as it passes the stages of `router.server.calls.pipeline`: what the host
asked, and what each stage found out on the way."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import mcp_types as types

from router.core.catalog import ToolRecord
from router.server.lifecycle.requests import Context
from router.server.lifecycle.state import RouterState
from router.server.tasks.wire import CreatedTask
from router.upstream.connection.host_requests import InputAnswers

Answer = types.CallToolResult | types.InputRequiredResult | CreatedTask


@dataclass(slots=True)
class ToolCall:
    """A call by the name the host used. `resolve` sets `record`, `authorize` the `seal` of
    a call the user confirmed on a 2026-07-28 host, `forward` the `answer`
    and the `upstream`'s own result, which `limit` may cut in `answer`.
    A stage that `end`s the call answers it: the stages after it do not run."""

    ctx: Context
    state: RouterState
    name: str
    arguments: dict[str, Any]
    answers: InputAnswers | None = None
    may_be_task: bool = False
    """A host's own `tools/call` (not a code-mode program's): it may become a task
    (`router.server.tasks.runner`)."""
    record: ToolRecord | None = None
    seal: str | None = None
    answer: Answer | None = None
    upstream: types.CallToolResult | None = None
    ended: bool = False
    outcome: str | None = None
    """What a stage decided that the answer alone does not say, for the audit trail:
    `confirmed` (the user said yes) or `declined` (`authorize`), `over-quota` (`meter`),
    `sign-in-needed` (`forward`: the caller must sign in to the upstream first), `task`
    (`forward`: the call runs on as a task)."""
    finish: list[Callable[[], None]] = field(default_factory=list)
    """Run once the call ends, however it ends."""
    slot: Callable[[], None] | None = None
    """The caller's place in flight (`meter`), given back when the upstream's work ends: when
    the call ends, or, for a held call (`forward`), when the upstream answers it or the router
    cancels it, however long after the request that is."""

    @property
    def tool(self) -> ToolRecord:
        """The resolved tool (every stage after `resolve` has one)."""
        if self.record is None:
            raise RuntimeError(f"{self.name}: the call has not been resolved")
        return self.record

    def end(self, answer: Answer) -> None:
        """Answer the call now: a question for the host, a refusal, a failed upstream."""
        self.answer, self.ended = answer, True

    @property
    def result(self) -> types.CallToolResult | None:
        """The upstream's result, once there is one (not a question)."""
        return self.answer if isinstance(self.answer, types.CallToolResult) else None
