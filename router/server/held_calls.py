"""A 2026-07-28 host's call to a handshake-only upstream that asks mid-call, held open.

The upstream asks on its connection and waits for the answer; the 2026-07-28 host has no
channel for that request: it answers questions only by retrying its call. So this process
keeps the upstream call running in a task of its own, and the host gets the question as an
`InputRequiredResult` whose `requestState` is sealed (HMAC, a key of this process) with the
held call's id. The retry's answer goes to the waiting upstream request, and the host gets the
call's result, or its next question the same way. Only the process that holds the call can
resume it: another replica, an expired or forged state, or a second retry with the same state
is an error that says so. Held calls are bounded in number and in time.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import TypeAdapter

from router.errors import InvalidParams

logger = logging.getLogger(__name__)

MAX_HELD = 64
"""Calls held open at once (each is an upstream request waiting on a person)."""
HOLD_SECONDS = 300.0
"""How long a held call waits for the host's retry before it is cancelled."""
_STATE_PREFIX = "mcp-router-held:"
_R = TypeVar("_R", bound=types.Result)
_RESPONSE = TypeAdapter[types.InputResponse](types.InputResponse)

Outcome = types.CallToolResult | types.InputRequiredResult


@dataclass(eq=False)
class _Question:
    request: Any
    """The upstream's `InputRequest` (sampling, elicitation, roots)."""
    answered: anyio.Event = field(default_factory=anyio.Event)
    answer: types.InputResponse | None = None


@dataclass(eq=False)
class HeldCall:
    """One upstream call held open for a 2026-07-28 host."""

    id: str
    _questions: MemoryObjectSendStream[_Question | types.CallToolResult]
    _next: MemoryObjectReceiveStream[_Question | types.CallToolResult]
    pending: _Question | None = None
    generation: int = 0
    """Which question the next sealed state answers (a retry answers each once)."""

    async def ask(self, request: Any, result_type: type[_R]) -> _R | types.ErrorData:
        """The upstream's request: wait until the host's retry answers it."""
        question = _Question(request)
        await self._questions.send(question)
        with anyio.move_on_after(HOLD_SECONDS):
            await question.answered.wait()
        if question.answer is None:
            return types.ErrorData(
                code=types.REQUEST_TIMEOUT, message="mcp-router: the client never answered"
            )
        return result_type.model_validate(question.answer.model_dump(by_alias=True))


class HeldCalls:
    """The calls this process holds open, by id; one per router process (its key seals)."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._held: dict[str, HeldCall] = {}
        self._task_group: anyio.abc.TaskGroup | None = None

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The task group held calls run in, for the router's life."""
        async with anyio.create_task_group() as group:
            self._task_group = group
            task_status.started()
            await anyio.sleep_forever()

    def is_held(self, state: str | None) -> bool:
        return state is not None and state.startswith(_STATE_PREFIX)

    async def start(self, call: Callable[[HeldCall], Awaitable[types.CallToolResult]]) -> Outcome:
        """Run `call(held)` held open; its result, or its first question."""
        if self._task_group is None or len(self._held) >= MAX_HELD:
            raise InvalidParams("mcp-router: too many calls wait for their clients' answers")
        send, receive = anyio.create_memory_object_stream[_Question | types.CallToolResult](1)
        held = HeldCall(secrets.token_urlsafe(16), send, receive)
        self._held[held.id] = held

        async def running() -> None:
            try:
                with anyio.move_on_after(HOLD_SECONDS * 4):
                    result = await call(held)
                    await send.send(result)
            except Exception:  # the call's own failures are results; this is a bug's
                logger.exception("held call %s failed", held.id)
            finally:
                self._held.pop(held.id, None)
                send.close()
                if held.pending is not None:  # abandoned: nobody waits to read the rest
                    receive.close()

        self._task_group.start_soon(running)
        return await self._outcome(held)

    async def resume(self, state: str, responses: types.InputResponses | None) -> Outcome:
        """The host's retry: answer the held call's question, then its next outcome."""
        held, generation = self._open(state)
        question = held.pending
        if question is None or generation != held.generation:
            raise InvalidParams("mcp-router: this question was answered already")
        answer = (responses or {}).get("input")
        if answer is None:
            raise InvalidParams("mcp-router: the retry carries no answer to the question")
        question.answer = _RESPONSE.validate_python(answer)
        held.pending = None
        question.answered.set()
        return await self._outcome(held)

    async def _outcome(self, held: HeldCall) -> Outcome:
        try:
            with anyio.fail_after(HOLD_SECONDS):
                item = await held._next.receive()
        except (anyio.EndOfStream, TimeoutError):
            held._next.close()
            raise InvalidParams("mcp-router: the held call ended without a result") from None
        if isinstance(item, types.CallToolResult):
            held._next.close()
            return item
        held.pending = item
        held.generation += 1
        return types.InputRequiredResult(
            input_requests={"input": item.request},
            request_state=self._seal(held.id, held.generation),
        )

    def _seal(self, held_id: str, generation: int) -> str:
        body = f"{held_id}.{generation}"
        mac = hmac.new(self._key, body.encode(), hashlib.sha256).digest()
        return _STATE_PREFIX + body + "." + base64.urlsafe_b64encode(mac).decode()

    def _open(self, state: str) -> tuple[HeldCall, int]:
        try:
            held_id, generation, mac = state.removeprefix(_STATE_PREFIX).split(".", 2)
            expected = hmac.new(
                self._key, f"{held_id}.{generation}".encode(), hashlib.sha256
            ).digest()
            valid = hmac.compare_digest(base64.urlsafe_b64decode(mac), expected)
        except ValueError:
            valid = False
        held = self._held.get(held_id) if valid else None
        if held is None:
            raise InvalidParams(
                "mcp-router: this call is no longer held here (it expired, was answered, or "
                "another replica holds it); call the tool again"
            )
        return held, int(generation)
