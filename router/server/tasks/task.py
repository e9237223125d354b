"""One call running as a task: its status, its questions, its outcome, its cancel.

A `Task` is the call's `Asker` (`router.server.calls.relay`): an upstream's question mid-call
(elicitation, sampling, roots) becomes one of the task's `inputRequests`, under a key of its
own, and waits for the host's `tasks/update`; the task is `input_required` while any waits.
Questions asked at once wait at once, and a partial update answers only the keys it names.
A question no one answers before the task expires gets a timeout error upstream."""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio
import mcp_types as types
from pydantic import ValidationError

_R = TypeVar("_R", bound=types.Result)
Status = Literal["working", "input_required", "completed", "failed", "cancelled"]
Note = Callable[["Task"], Awaitable[None]]
"""Told each status the task enters (the audit trail)."""
Hear = Callable[["Task"], None]
"""Told each status the task enters, at once (its principal's listen streams)."""


@dataclass(eq=False)
class _Question:
    request: dict[str, Any]
    """As the wire has it: `method` and `params`."""
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: Any = None


@dataclass(eq=False)
class Task:
    """The call behind one task id, in this process."""

    id: str
    owner: str
    """The principal that made the call (`Principal.key`, "" without identities)."""
    tool: str
    """The tool's qualified name."""
    created: float
    expires: float
    """Wall-clock seconds (`time.time()`): when the task and its result are forgotten."""
    note: Note | None = None
    updated: float = 0.0
    heard: Hear | None = None
    message: str | None = None
    result: dict[str, Any] | None = None
    error: dict[str, Any] | None = None
    cancelled: bool = False
    visible: bool = False
    """The host was given its id (an `auto` call that ended early never is)."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """The upstream call's: cancelled by `tasks/cancel`, and when the task expires."""
    done: anyio.Event = field(default_factory=anyio.Event)
    settled: anyio.Event = field(default_factory=anyio.Event)
    """Set at the call's first question, or at its end: an `auto` call decides then."""
    _pending: dict[str, _Question] = field(default_factory=dict)
    _asked: int = 0
    _noted: Status | None = None

    @property
    def status(self) -> Status:
        if self.cancelled:
            return "cancelled"
        if self.done.is_set():
            return "failed" if self.error is not None else "completed"
        return "input_required" if self._pending else "working"

    @property
    def finished(self) -> bool:
        return self.cancelled or self.done.is_set()

    def questions(self) -> dict[str, Any]:
        """The open questions, by key (`inputRequests`)."""
        return {key: question.request for key, question in self._pending.items()}

    async def ask(self, request: Any, result_type: type[_R]) -> _R | types.ErrorData:
        """An upstream's question: the host's answer, from a `tasks/update`."""
        self._asked += 1
        key = f"input-{self._asked}"
        dumped = request.model_dump(by_alias=True, exclude_none=True, mode="json")
        question = self._pending[key] = _Question(dumped)
        self.settled.set()
        try:
            await self.changed()
            with anyio.move_on_after(max(0.0, self.expires - time.time())):
                await question.answered.wait()
        finally:
            self._pending.pop(key, None)
        await self.changed()
        if question.answer is None:
            return types.ErrorData(
                code=types.REQUEST_TIMEOUT, message="mcp-router: the client never answered"
            )
        try:
            return result_type.model_validate(question.answer)
        except ValidationError as exc:
            return types.ErrorData(
                code=types.INVALID_PARAMS,
                message=f"mcp-router: the client's answer is invalid ({exc.error_count()} errors)",
            )

    def deliver(self, responses: Mapping[str, Any]) -> None:
        """A host's answers, by key; keys of no open question are ignored (answered, or
        never asked)."""
        for key, answer in responses.items():
            question = self._pending.pop(key, None)
            if question is not None:
                question.answer = answer
                question.answered.set()
        self.updated = time.time()

    def cancel(self) -> None:
        """The host's cancel: the upstream call is cancelled, the task says so at once."""
        if not self.finished:
            self.cancelled = True
            self.message = "cancelled by the client"
            self.updated = time.time()
            self.scope.cancel()

    async def changed(self) -> None:
        """The status may have changed: stamp it, and tell `note` once per change."""
        status = self.status
        if status == self._noted:
            return
        self._noted, self.updated = status, time.time()
        if not self.visible:
            return
        if self.heard is not None:
            self.heard(self)
        if self.note is not None:
            await self.note(self)
