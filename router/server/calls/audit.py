"""Each decision about a principal's request on the audit trail (`router.audit`,
`router/audit/`).

`run_call` hands every tool call here once its stages are done (or one raised); resource
reads, prompt gets and code mode's `execute` runs come through `audited_request` too. The
record names the principal (its `sub` and issuer) and session, what was asked (the tool's
qualified name and its server), the arguments as a sha256 digest plus the argument names
`router.audit.fields` lists (redacted like every log), the outcome, the latency and the
result's size. Outcomes: `ran`, `error`, `denied` (the policy, or a tool the caller's
profile does not see), `over-quota` (`meter`), `confirmed` (the user said yes, and it
ran), `declined` (the user's no, or a host that cannot ask), `held` (a question for the
host: a confirmation or a held tool's approval), `sign-in-needed` (a per-user upstream the
caller has not signed in to; the call that signs in is `ran`), `revoked` (an operator or the
principal revoked its sign-in to a per-user upstream, `/v1/auth`), `cancelled` (the client
cancelled the request or went away before its answer), `abandoned` (a held call's upstream
result that no request read, with the upstream's own outcome in `upstream_outcome`: `ran`,
`error`, or `cancelled` when the router cancelled it because its client left), `task` (the
call became a task, `router.server.tasks`: its later statuses are lines of kind `task`, one
per status the task enters, whose outcome is that status, `working` to `completed`, `failed`
or `cancelled`, naming the task by a digest of its id).

With `required`, a request the trail cannot record is refused: one that arrives while the
trail is unhealthy is refused before anything runs, and one whose record fails after it ran
gets an error instead of its result.
"""

from __future__ import annotations

import hashlib
import json
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable
from contextlib import suppress
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, NoReturn, TypeVar, cast

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.connection import Connection

from router.config import RouterConfig
from router.core.errors import (
    AuditUnavailable,
    OverQuotaError,
    ToolDenied,
    ToolHeld,
    ToolNotFound,
)
from router.core.redaction import redact
from router.server.access.authorization import current_access
from router.server.calls.call import Answer, ToolCall
from router.server.lifecycle.requests import Context, connection, is_modern

if TYPE_CHECKING:  # router.audit is imported only when router.audit is configured
    from router.audit import AuditTrail

_T = TypeVar("_T")

_sessions: weakref.WeakKeyDictionary[Connection, str] = weakref.WeakKeyDictionary()
"""An opaque id per connected client, for the records (gone with the connection)."""


def trail_for(config: RouterConfig) -> AuditTrail | None:
    """The trail `router.audit` asks for; None without the section."""
    section = config.router.audit
    if section is None:
        return None
    from router.audit import AuditTrail  # only a router that keeps a trail pays for it

    trail = AuditTrail(
        section.path.expanduser(),
        required=section.required,
        max_bytes=int(section.max_mib * (1 << 20)),
        keep=section.keep,
        fields=tuple(section.fields),
    )
    if section.otel:
        from router.audit.export import export_audit_logs

        export_audit_logs()
    return trail


def arguments_digest(arguments: dict[str, Any]) -> str:
    canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"), default=str)
    return "sha256:" + hashlib.sha256(canonical.encode("utf-8")).hexdigest()


def outcome_of(call: ToolCall) -> str:
    """The outcome of a call its stages answered (one that raised: `_refused_outcome`)."""
    if isinstance(call.answer, types.InputRequiredResult):
        return "held"
    result = call.result
    if call.outcome == "declined" or (result is not None and result.is_error):
        return call.outcome or "error"
    return call.outcome or "ran"


def _session(ctx: Context) -> str | None:
    if is_modern(ctx):
        return None
    try:
        client = connection(ctx)
    except Exception:  # a request with no connection behind it (none in the SDK today)
        return None
    return _sessions.setdefault(client, uuid.uuid4().hex[:16])


@dataclass(frozen=True, slots=True)
class Request:
    """What a record says a principal asked: its kind, and the server and name it reached
    (the tool's qualified name, a prompt's name, a resource's URI)."""

    ctx: Context
    kind: str
    server: str | None
    name: str
    arguments: dict[str, Any]


def record_of(
    request: Request,
    trail: AuditTrail,
    started: float,
    outcome: str,
    answer: Any = None,
    error: BaseException | None = None,
) -> dict[str, Any]:
    principal = current_access().principal
    record: dict[str, Any] = {
        "kind": request.kind,
        "principal": None
        if principal is None
        else {"sub": principal.subject, "iss": principal.issuer},
        "session": _session(request.ctx),
        "server": request.server,
        "tool" if request.kind == "tool-call" else "name": request.name,
        "arguments": arguments_digest(request.arguments),
        "outcome": outcome,
        "latency_ms": round((time.perf_counter() - started) * 1000, 3),
        "result_bytes": 0 if answer is None else len(answer.model_dump_json(by_alias=True)),
    }
    clear = {
        name: redact(json.dumps(request.arguments[name], default=str))
        for name in trail.fields
        if name in request.arguments
    }
    if clear:
        record["fields"] = clear
    if error is not None:
        record["error"] = redact(str(error))  # cut to its bound by the trail (`bounds`)
    return record


def _refused_outcome(error: BaseException) -> str:
    if isinstance(error, OverQuotaError):
        return "over-quota"  # a request other than a tool call (`router.server.calls.passage`)
    if isinstance(error, ToolHeld):
        return "held"  # its definition changed: held until a person approves it
    return "denied" if isinstance(error, ToolDenied | ToolNotFound) else "error"


async def note(ctx: Context, kind: str, server: str, name: str, outcome: str) -> None:
    """A decision that is not a request's answer (a held tool approved in the session), on
    the trail when there is one."""
    trail = ctx.lifespan_context.audit
    if trail is not None:
        asked = Request(ctx, kind, server, name, {})
        await write(trail, record_of(asked, trail, time.perf_counter(), outcome))


async def audited_request(
    trail: AuditTrail,
    request: Request | Callable[[], Request],
    run: Callable[[], Awaitable[_T]],
    outcome: Callable[[_T], str],
    refuse: Callable[[AuditUnavailable], _T],
) -> _T:
    """`run()` with its decision written to `trail`. `request` may be a function, read once
    `run` ended (a tool call knows its server only once resolved). With `required`, refused
    (`refuse`) when the trail cannot be written: before `run` when the last write failed
    (a line saying the trail is writable again must go first), after it otherwise."""
    started = time.perf_counter()
    described = request if isinstance(request, Request) else None
    if trail.required and not trail.healthy:
        try:
            await write(trail, {"kind": "trail-writable-again"})
        except AuditUnavailable as exc:
            return refuse(exc)
    try:
        answer = await run()
    except BaseException as exc:
        asked = described or cast(Callable[[], Request], request)()
        if isinstance(exc, anyio.get_cancelled_exc_class()):
            # what reached an upstream is on the trail, whatever the client did
            record = record_of(asked, trail, started, "cancelled")
        else:
            record = record_of(asked, trail, started, _refused_outcome(exc), error=exc)
        with anyio.CancelScope(shield=True), suppress(AuditUnavailable):
            await write(trail, record)  # its error goes back either way
        raise
    asked = described or cast(Callable[[], Request], request)()
    try:
        await write(trail, record_of(asked, trail, started, outcome(answer), answer))
    except AuditUnavailable as exc:
        return refuse(exc)
    return answer


async def write(trail: AuditTrail, record: dict[str, Any]) -> None:
    """Append `record` in a worker thread; a failure raises only when the trail is required
    (otherwise it is logged and counted by the trail)."""
    try:
        await anyio.to_thread.run_sync(trail.append, record)
    except AuditUnavailable:
        if trail.required:
            raise


async def audited(
    call: ToolCall, trail: AuditTrail, run: Callable[[ToolCall], Awaitable[Answer]]
) -> Answer:
    """`run(call)` (the pipeline's stages) on the trail as a `tool-call`."""

    def request() -> Request:
        tool = call.record
        return Request(
            call.ctx,
            "tool-call",
            None if tool is None else tool.server,
            call.name if tool is None else tool.qualified_name,
            call.arguments,
        )

    return await audited_request(
        trail, request, lambda: run(call), lambda _: outcome_of(call), refusal
    )


def abandoned_call(
    call: ToolCall,
) -> Callable[[types.CallToolResult | None], Awaitable[None]] | None:
    """For a held call (`router.server.calls.held_calls`): the record of its upstream result
    that no request read, `abandoned`, with the upstream's own outcome (`cancelled`: the
    router cancelled it). None without a trail."""
    trail = call.state.audit
    if trail is None:
        return None
    started = time.perf_counter()
    tool = call.tool
    asked = Request(call.ctx, "tool-call", tool.server, tool.qualified_name, call.arguments)

    async def abandoned(result: types.CallToolResult | None) -> None:
        record = record_of(asked, trail, started, "abandoned", result)
        record["upstream_outcome"] = (
            "cancelled" if result is None else "error" if result.is_error else "ran"
        )
        await write(trail, record)

    return abandoned


def refusal(exc: AuditUnavailable) -> types.CallToolResult:
    text = f"Refused: {exc}. The router records every call (router.audit.required)."
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def raised(exc: AuditUnavailable) -> NoReturn:
    """For requests whose answer is not a tool result: the refusal as a JSON-RPC error."""
    raise AuditUnavailable(
        f"Refused: {exc}. The router records every request (router.audit.required)."
    )


def result_outcome(answer: Any) -> str:
    """A tool result's outcome: `held` (a question), `error` (`isError`), else `ran`."""
    if isinstance(answer, types.CallToolResult) and answer.is_error:
        from router.server.calls.stages.meter import QUOTA_META  # quotas' modules: on use

        return "over-quota" if QUOTA_META in (answer.meta or {}) else "error"
    return held_or_ran(answer)


def held_or_ran(answer: Any) -> str:
    return "held" if isinstance(answer, types.InputRequiredResult) else "ran"
