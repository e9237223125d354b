"""The programs `execute` runs, each in a task of its own, and their pauses for the host.

A run starts in the task group this module holds for the router's life, in a copy of the
`execute` request's context (its principal, its trace), and the request waits for what the
run sends: its `Outcome`, or a question. Cancelling the request cancels the run, and with it
the calls it has in flight.

A question is the `InputRequiredResult` that a call inside the program got from `forward`
(a confirmation the policy asks for, tool pinning's approval, an upstream's own question) on
a 2026-07-28 host, which answers only by retrying its request. The run stays paused at that
call; the host gets the question with a `requestState` sealed (`router.approvals.sealing`, purpose
`code`): bound to the principal and to the digest of the program, naming the run, which
question it answers and this process, expiring with the pause, its nonce spent by the first
retry. The retry of `execute` (the same program, the same principal) hands the answers to
the waiting call, which goes through `forward` again with them; any other retry is an
`InvalidParams` error naming why (another program, principal, a spent or expired state, or
another replica, where the run is not: a paused run is per process). Handshake-era hosts
are asked on the request's own stream inside `forward`, and the run never pauses.

At most `MAX_RUNS` runs live at once, and `PRINCIPAL_SHARE` of one principal (with
identities); a paused one waits `HOLD_SECONDS` for the retry, then its call is refused and
the program goes on. The sandbox's workers have a per-principal share of their own
(`router.code_mode.sandbox`): a paused run holds its worker.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream

from router.approvals.sealing import Binding, Pauses, Sealer, digest
from router.code_mode.outcome import Outcome
from router.code_mode.sandbox import CallRefused, Host, Sandbox, untimed
from router.config import RouterConfig

logger = logging.getLogger(__name__)

MAX_RUNS = 128
"""Programs running or paused at once in this process."""
PRINCIPAL_SHARE = MAX_RUNS // 4
"""Runs one principal may have live at once, with identities: a quarter, as for held calls
(`router.server.calls.held_calls`), so no fewer than four principals fill the table. Without
identities every caller is one principal, and only `MAX_RUNS` applies."""
HOLD_SECONDS = 300.0
"""How long a paused run waits for the host's retry."""


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
    principal: str
    """`Principal.key` of the caller that started it, "" without identities."""
    ctx: Any
    _send: MemoryObjectSendStream[_Question | Outcome]
    _next: MemoryObjectReceiveStream[_Question | Outcome]
    scope: anyio.CancelScope = field(default_factory=anyio.CancelScope)
    pending: _Question | None = None
    generation: int = 0

    @property
    def binding(self) -> Binding:
        return Binding("code", self.principal, None, digest(self.code))

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
    """The runs of this process, by id; one per router (the router's `Sealer` seals their
    states)."""

    def __init__(self, sandbox: Sandbox, result_tokens: int, sealer: Sealer | None = None) -> None:
        self.sandbox = sandbox
        self.result_tokens = result_tokens
        """`router.limits.result_tokens`: what an `execute` result may cost."""
        self.sealer = sealer or Sealer()
        self._runs: dict[str, Run] = {}
        self._pauses = Pauses(
            self.sealer,
            self._runs,
            refused="mcp-router: the paused program was not resumed: {why}; run it again",
            elsewhere="mcp-router: another replica runs this program (a paused program stays "
            "in the router process that started it, and this request reached another); run "
            "it again from the start",
            gone="mcp-router: this program is no longer paused here (it ended or expired); "
            "run it again",
        )
        self._task_group: anyio.abc.TaskGroup | None = None

    @classmethod
    def from_config(cls, config: RouterConfig, sealer: Sealer | None = None) -> CodeRuns | None:
        """Code mode's runs, None when neither the router nor an endpoint is in code mode."""
        if "code" not in config.modes:
            return None
        return cls(Sandbox(config.router.code), config.router.limits.result_tokens, sealer)

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
        """Whether `state` is a run's (a retry of a paused `execute`), or looks like the
        router's and does not open (`resume` then says why it is refused)."""
        return Sealer.is_sealed(state) and self.sealer.purpose_of(state) in ("code", None)

    async def start(
        self, code: str, principal: str, ctx: Any, host: Callable[[Run], Host]
    ) -> Outcome | types.InputRequiredResult:
        """Run `code` for `principal` with the host functions `host(run)` makes; its
        outcome, or its first question."""
        if self._task_group is None or len(self._runs) >= MAX_RUNS:
            return Outcome(stopped=f"{MAX_RUNS} programs already run or wait here")
        if principal and sum(r.principal == principal for r in self._runs.values()) >= (
            PRINCIPAL_SHARE
        ):
            return Outcome(
                stopped=f"you already have {PRINCIPAL_SHARE} programs running or waiting for "
                "answers, your share of this router's runs; answer or finish one first"
            )
        send, receive = anyio.create_memory_object_stream[_Question | Outcome](MAX_RUNS)
        run = Run(secrets.token_urlsafe(16), code, principal, ctx, send, receive)
        self._runs[run.id] = run
        calls: Host = host(run)

        async def running() -> None:
            try:
                with run.scope:
                    outcome = await self.sandbox.run(code, calls, principal)
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
        principal: str,
        responses: types.InputResponses | None,
        ctx: Any,
    ) -> Outcome | types.InputRequiredResult:
        """The host's retry: answer the paused call's question, then the run's next."""
        run = await self._pauses.open(state, Binding("code", principal, None, digest(code)))
        question = run.pending
        assert question is not None  # `open` refuses a state of no waiting question
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
            request_state=self._pauses.seal(run, HOLD_SECONDS),
        )
