"""The programs `execute` runs, each in a task of its own, and their pauses for the host.

A run starts in the task group this module holds for the router's life, in a copy of the
`execute` request's context (its principal, its trace), and the request waits for what the
run sends: its `Outcome`, or a question. Cancelling the request cancels the run, and with it
the calls it has in flight.

A question is the `InputRequiredResult` that a call inside the program got from `forward`
(a confirmation the policy asks for, tool pinning's approval, an upstream's own question) on
a 2026-07-28 host, which answers only by retrying its request. The run stays paused at that
call; the host gets the question with a `requestState` sealed here (HMAC, a key of this
process) naming the run and which question it answers, and its retry of `execute` (the same
program, the same principal) hands the answers to the waiting call, which goes through
`forward` again with them. Handshake-era hosts are asked on the request's own stream inside
`forward`, and the run never pauses. At most `MAX_RUNS` runs live at once; a paused one
waits `HOLD_SECONDS` for the retry, then its call is refused and the program goes on.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from router.code_mode.outcome import Outcome
from router.code_mode.sandbox import CallRefused, Host, Sandbox, untimed
from router.config import RouterConfig
from router.errors import InvalidParams

logger = logging.getLogger(__name__)

MAX_RUNS = 128
"""Programs running or paused at once in this process."""
HOLD_SECONDS = 300.0
"""How long a paused run waits for the host's retry."""
_STATE_PREFIX = "mcp-router-run:"


@dataclass(eq=False)
class _Question:
    result: types.InputRequiredResult
    answered: anyio.Event = field(default_factory=anyio.Event)
    responses: types.InputResponses | None = None


@dataclass(eq=False)
class Run:
    """One program's run; `ctx` is the request that drives it now (the first `execute`,
    then each retry), which the calls inside use."""

    id: str
    code: str
    principal: str | None
    ctx: Any
    _send: MemoryObjectSendStream[_Question | Outcome]
    _next: MemoryObjectReceiveStream[_Question | Outcome]
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    pending: _Question | None = None
    generation: int = 0

    async def ask(self, result: types.InputRequiredResult) -> types.InputResponses:
        """A call's question to the host: wait (untimed) until the host's retry answers."""
        question = _Question(result)
        await self._send.send(question)
        with untimed(HOLD_SECONDS), anyio.move_on_after(HOLD_SECONDS):
            await question.answered.wait()
        if question.responses is None:
            raise CallRefused(
                "mcp-router: the client never answered the question this call needs",
                PermissionError,
            )
        return question.responses


class CodeRuns:
    """The runs of this process, by id; one per router (its key seals their states)."""

    def __init__(self, sandbox: Sandbox, result_tokens: int) -> None:
        self.sandbox = sandbox
        self.result_tokens = result_tokens
        """`router.limits.result_tokens`: what an `execute` result may cost."""
        self._key = secrets.token_bytes(32)
        self._runs: dict[str, Run] = {}
        self._task_group: anyio.abc.TaskGroup | None = None

    @classmethod
    def from_config(cls, config: RouterConfig) -> CodeRuns | None:
        """Code mode's runs, None in the other modes."""
        if config.router.mode != "code":
            return None
        return cls(Sandbox(config.router.code), config.router.limits.result_tokens)

    async def run(
        self, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
    ) -> None:
        """The sandbox's warm pool and the task group runs live in, for the router's life."""
        async with anyio.create_task_group() as group:
            await group.start(self.sandbox.run_pool)
            self._task_group = group
            task_status.started()
            await anyio.sleep_forever()

    def holds(self, state: str | None) -> bool:
        """Whether `state` is a run's (a retry of a paused `execute`)."""
        return state is not None and state.startswith(_STATE_PREFIX)

    async def start(
        self, code: str, principal: str | None, ctx: Any, host: Callable[[Run], Host]
    ) -> Outcome | types.InputRequiredResult:
        """Run `code` with the host functions `host(run)` makes; its outcome, or its first
        question."""
        if self._task_group is None or len(self._runs) >= MAX_RUNS:
            return Outcome(stopped=f"{MAX_RUNS} programs already run or wait here")
        send, receive = anyio.create_memory_object_stream[_Question | Outcome](MAX_RUNS)
        run = Run(secrets.token_urlsafe(16), code, principal, ctx, send, receive)
        self._runs[run.id] = run
        calls: Host = host(run)

        async def running() -> None:
            try:
                with run.scope:
                    outcome = await self.sandbox.run(code, calls)
                    send.send_nowait(outcome)
            except (anyio.WouldBlock, anyio.BrokenResourceError):
                logger.warning("run %s ended with nobody to read it", run.id)
            except Exception:  # the program's own failures are outcomes: this is a bug's
                logger.exception("run %s failed", run.id)
                send.send_nowait(Outcome(stopped="the router failed running it (see its log)"))
            finally:
                self._runs.pop(run.id, None)
                send.close()
                if run.pending is not None:  # its question was never answered: nobody reads
                    receive.close()

        self._task_group.start_soon(running)
        return await self._outcome(run)

    async def resume(
        self,
        state: str,
        code: str,
        principal: str | None,
        responses: types.InputResponses | None,
        ctx: Any,
    ) -> Outcome | types.InputRequiredResult:
        """The host's retry: answer the paused call's question, then the run's next."""
        run, generation = self._open(state)
        if run.principal != principal or not hmac.compare_digest(run.code.encode(), code.encode()):
            raise _not_here()
        question = run.pending
        if question is None or generation != run.generation:
            raise InvalidParams("mcp-router: this question was answered already")
        run.ctx = ctx
        run.pending = None
        question.responses = dict(responses or {})
        question.answered.set()
        return await self._outcome(run)

    async def _outcome(self, run: Run) -> Outcome | types.InputRequiredResult:
        try:
            item = await run._next.receive()
        except anyio.EndOfStream:
            return Outcome(stopped="the run ended without an outcome")
        except BaseException:  # the request was cancelled: so is its run
            run.scope.cancel()
            raise
        if isinstance(item, Outcome):
            run._next.close()
            return item
        run.pending = item
        run.generation += 1
        return types.InputRequiredResult(
            input_requests=item.result.input_requests,
            request_state=self._seal(run.id, run.generation),
        )

    def _seal(self, run_id: str, generation: int) -> str:
        body = f"{run_id}.{generation}"
        mac = hmac.new(self._key, body.encode(), hashlib.sha256).digest()
        return _STATE_PREFIX + body + "." + base64.urlsafe_b64encode(mac).decode()

    def _open(self, state: str) -> tuple[Run, int]:
        try:
            run_id, generation, mac = state.removeprefix(_STATE_PREFIX).split(".", 2)
            expected = hmac.new(self._key, f"{run_id}.{generation}".encode(), hashlib.sha256)
            valid = hmac.compare_digest(base64.urlsafe_b64decode(mac), expected.digest())
            number = int(generation)
        except ValueError:
            valid, number = False, 0
        run = self._runs.get(run_id) if valid else None
        if run is None:
            raise _not_here()
        return run, number


def _not_here() -> InvalidParams:
    return InvalidParams(
        "mcp-router: this program is no longer paused here (it ended, expired, or another "
        "replica runs it); run it again"
    )
