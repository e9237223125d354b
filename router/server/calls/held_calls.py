"""A 2026-07-28 host's call to a handshake-only upstream that asks mid-call, held open.

The upstream asks on its connection and waits for the answer; the 2026-07-28 host has no
channel for that request: it answers questions only by retrying its call. So this process
keeps the upstream call running in a task of its own, and the host gets the question as an
`InputRequiredResult` whose `requestState` is sealed (`router.approvals.sealing`, purpose `held`):
bound to the principal that made the call and to the digest of its tool and arguments,
naming the held call, which question it answers and this process; it expires with the hold,
and its nonce is spent by the first retry. The retry's answer goes to the waiting upstream
request, and the host gets the call's result, or its next question the same way.

A retry is refused, with an `InvalidParams` error naming why, when its state is forged,
expired or spent, was sealed for another principal, or is carried by a call of another tool
or with other arguments. Only the process that holds the call can resume it: the state opens
on every replica of a store (the key is shared), and another replica answers that the call
is held elsewhere and is to be retried from the start (a held upstream call is per process;
nothing forwards the retry). Held calls are bounded in time, in number (`MAX_HELD`), and per
principal (`PRINCIPAL_SHARE`), so one principal holding its share leaves the rest to others.

A held call outlives requests, so what it does upstream is accounted for by the call, not by
a request: it keeps the caller's place in flight (`release`, `router.server.calls.stages.meter`)
until the upstream answers or the router cancels it; a request that waits for its outcome and
is cancelled (the client's `notifications/cancelled`, or the client gone) cancels the
upstream call; and a result nobody reads (the host never came back with its answer, or left)
is handed to `abandoned`, which puts it on the audit trail.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

import anyio
import anyio.abc
import mcp_types as types
from anyio import WouldBlock
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from pydantic import TypeAdapter

from router.approvals.sealing import Binding, Pauses, Sealer, digest
from router.core.catalog import ToolRecord
from router.core.errors import InvalidParams
from router.server.access.authorization import current_access

logger = logging.getLogger(__name__)

MAX_HELD = 64
"""Calls held open at once (each is an upstream request waiting on a person)."""
PRINCIPAL_SHARE = MAX_HELD // 4
"""Calls one principal may hold at once, with identities: a quarter, so no fewer than four
principals fill the table, and 16 questions waiting on one person is more than any host
asks at a time (a held call waits on a person's answer). Without identities every caller
is one principal, and only `MAX_HELD` applies."""
HOLD_SECONDS = 300.0
"""How long a held call waits for the host's retry before it is cancelled."""
_R = TypeVar("_R", bound=types.Result)
_RESPONSE = TypeAdapter[types.InputResponse](types.InputResponse)

Outcome = types.CallToolResult | types.InputRequiredResult
Abandoned = Callable[[types.CallToolResult | None], Awaitable[None]]
"""Told the upstream's result that no request read (None: the router cancelled the call)."""


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
    owner: str
    """The principal that made the call (`Principal.key`, "" without identities)."""
    call: str
    """The digest of its tool and arguments."""
    _questions: MemoryObjectSendStream[_Question | types.CallToolResult]
    _next: MemoryObjectReceiveStream[_Question | types.CallToolResult]
    pending: _Question | None = None
    generation: int = 0
    """Which question the next sealed state answers (a retry answers each once)."""
    waiting: int = 0
    """Requests waiting for its next outcome; none when its result comes: nobody reads it."""
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    """The upstream call's: cancelled when the request waiting for it is."""
    abandoned: Abandoned | None = None

    @property
    def binding(self) -> Binding:
        return Binding("held", self.owner, None, self.call)

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
    """The calls this process holds open, by id; one per router process."""

    def __init__(self, sealer: Sealer | None = None) -> None:
        self.sealer = sealer or Sealer()
        self._held: dict[str, HeldCall] = {}
        self._pauses = Pauses(
            self.sealer,
            self._held,
            refused="mcp-router: the held call was not resumed: {why}; call the tool again",
            elsewhere="mcp-router: another replica holds this call (a call waiting for an "
            "answer stays in the router process that started it, and this request reached "
            "another); retry the tool from the start",
            gone="mcp-router: this call is no longer held here (it ended, expired, or was "
            "answered); call the tool again",
        )
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
        """Whether `state` is a held call's, or looks like the router's and does not open
        (`resume` then says why it is refused)."""
        return Sealer.is_sealed(state) and self.sealer.purpose_of(state) in ("held", None)

    async def start(
        self,
        call: Callable[[HeldCall], Awaitable[types.CallToolResult]],
        record: ToolRecord,
        arguments: dict[str, Any],
        *,
        release: Callable[[], None] | None = None,
        abandoned: Abandoned | None = None,
    ) -> Outcome:
        """Run `call(held)`, the call of `record` with `arguments`, held open; its result,
        or its first question. `release` gives back the caller's place in flight once the
        upstream call ends (at once when it is refused here)."""
        try:
            held = self._admit(record, arguments)
        except InvalidParams:
            if release is not None:
                release()
            raise
        held.abandoned = abandoned
        send = held._questions

        async def running() -> None:
            result: types.CallToolResult | None = None
            delivered = False
            try:
                with held.scope:
                    held.scope.deadline = anyio.current_time() + HOLD_SECONDS * 4
                    result = await call(held)
                    if held.waiting:  # no checkpoint between the check and the hand-over
                        with contextlib.suppress(WouldBlock):
                            send.send_nowait(result)
                            delivered = True
            except Exception:  # the call's own failures are results; this is a bug's
                logger.exception("held call %s failed", held.id)
            finally:
                self._held.pop(held.id, None)
                send.close()
                if held.pending is not None:  # abandoned: nobody waits to read the rest
                    held._next.close()
                if release is not None:
                    release()
                if not delivered:
                    with anyio.CancelScope(shield=True):
                        await _tell_abandoned(held, result)

        assert self._task_group is not None  # `_admit` refuses before `run` started
        self._task_group.start_soon(running)
        return await self._outcome(held)  # no checkpoint before it counts as waiting

    def _admit(self, record: ToolRecord, arguments: dict[str, Any]) -> HeldCall:
        owner = _caller()
        if self._task_group is None or len(self._held) >= MAX_HELD:
            raise InvalidParams(
                f"mcp-router: too many calls wait for their clients' answers ({MAX_HELD}); "
                "answer or abandon one, or try again later"
            )
        if owner and sum(held.owner == owner for held in self._held.values()) >= PRINCIPAL_SHARE:
            raise InvalidParams(
                f"mcp-router: you already have {PRINCIPAL_SHARE} calls waiting for answers, "
                "your share of this router's held calls; answer one of them, or wait for "
                f"it to expire ({HOLD_SECONDS:g} s), then call again"
            )
        send, receive = anyio.create_memory_object_stream[_Question | types.CallToolResult](1)
        held = HeldCall(secrets.token_urlsafe(16), owner, _digest(record, arguments), send, receive)
        self._held[held.id] = held
        return held

    async def resume(
        self,
        state: str,
        record: ToolRecord,
        arguments: dict[str, Any],
        responses: types.InputResponses | None,
    ) -> Outcome:
        """The host's retry of the call of `record` with `arguments`: answer the held
        call's question, then its next outcome."""
        held = await self._pauses.open(
            state, Binding("held", _caller(), None, _digest(record, arguments))
        )
        question = held.pending
        assert question is not None  # `open` refuses a state of no waiting question
        answer = (responses or {}).get("input")
        if answer is None:
            raise InvalidParams("mcp-router: the retry carries no answer to the question")
        question.answer = _RESPONSE.validate_python(answer)
        held.pending = None
        question.answered.set()
        return await self._outcome(held)

    async def _outcome(self, held: HeldCall) -> Outcome:
        held.waiting += 1
        try:
            try:
                with anyio.fail_after(HOLD_SECONDS):
                    item = await held._next.receive()
            finally:
                held.waiting -= 1
        except (anyio.EndOfStream, TimeoutError):
            held._next.close()
            raise InvalidParams("mcp-router: the held call ended without a result") from None
        except anyio.get_cancelled_exc_class():
            # The client cancelled or left: so is the upstream call. A result that came
            # just before is nobody's now.
            if not held.waiting:
                held.scope.cancel()
                with contextlib.suppress(WouldBlock, anyio.EndOfStream, anyio.ClosedResourceError):
                    left = held._next.receive_nowait()
                    if isinstance(left, types.CallToolResult):
                        with anyio.CancelScope(shield=True):
                            await _tell_abandoned(held, left)
            raise
        if isinstance(item, types.CallToolResult):
            held._next.close()
            return item
        held.pending = item
        held.generation += 1
        return types.InputRequiredResult(
            input_requests={"input": item.request},
            request_state=self._pauses.seal(held, HOLD_SECONDS),
        )


async def _tell_abandoned(held: HeldCall, result: types.CallToolResult | None) -> None:
    if held.abandoned is None:
        return
    try:
        await held.abandoned(result)
    except Exception:  # a failed record must not take the router's held calls down
        logger.exception("held call %s: its abandoned result was not recorded", held.id)


def _caller() -> str:
    principal = current_access().principal
    return principal.key if principal is not None else ""


def _digest(record: ToolRecord, arguments: dict[str, Any]) -> str:
    return digest(record.server, record.name, arguments)
