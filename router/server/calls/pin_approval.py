"""Approving a held tool in the session: an operator is asked, through elicitation.

A call to a tool that tool pinning holds (`router.pinning`) is the `ToolHeld` error, unless
the caller may approve it and its host declared form elicitation: then the caller is asked,
in a message that names the tool and shows what changed (`router.pinning.review.question`:
the unified diff of the approved and the new definition, cut short), whether to approve it
and run the call. Accept approves the definition shown, and only that one (an upstream that
changed it again meanwhile gets nothing approved, and the call is refused), as `mcp-router
tools approve` would, for every router sharing the pins (every replica, with a shared
store); the call then runs. Decline, cancel, no answer within the upstream's call timeout, or a host
that cannot ask: the tool stays held, the call is the `ToolHeld` error.

Approving changes what everyone is served, so it is a right (`may_approve`): on stdio the
one local user has it; over HTTP, only a principal `router.operators` admits (a front
without identities has none: its approvals are the CLI's). Anyone else gets the `ToolHeld`
error naming who may approve. Pins that cannot be read (`unverified`) are approved by no one.

- Up to 2025-11-25 the router sends `elicitation/create` on the call's own stream, as a
  confirmation does (`router.server.calls.approval`).
- On 2026-07-28 it answers with an `InputRequiredResult` whose `requestState` is sealed
  (`router.approvals.sealing`, purpose `pin`): bound to the principal and to the digest of the
  server,
  the tool and the pending fingerprint shown, expiring after `STATE_SECONDS`, its nonce
  spent by the first answer (fleet-wide with a shared store). An answer without such a state
  (made up, the old prefix and fingerprint, another principal's, replayed, expired) approves
  nothing: the caller is asked again.
"""

from __future__ import annotations

import logging
from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata

from router.approvals.sealing import Binding, Refused, digest
from router.core.errors import ToolHeld
from router.pinning import Pin
from router.pinning.review import question
from router.server.access.authorization import current_access
from router.server.calls import audit
from router.server.lifecycle.requests import Context, is_modern
from router.server.lifecycle.state import RouterState
from router.upstream.connection.host_requests import InputAnswers

logger = logging.getLogger(__name__)

PIN_KEY = "mcp-router/approve-tool"
"""The key of the router's question among a call's input requests and responses."""
STATE_SECONDS = 300.0
"""How long a sealed pin question can be answered."""
_NO_FIELDS: dict[str, Any] = {"type": "object", "properties": {}}

Answer = InputAnswers | None | types.InputRequiredResult


def may_approve(state: RouterState) -> bool:
    """Whether the current request's caller may approve a held tool for everyone: the one
    host of stdio, or a principal `router.operators` admits."""
    if state.era is not None:  # stdio: the host is the local user, the only one there is
        return True
    visibility = state.visibility
    return visibility.identities and visibility.operators.admits(current_access().principal)


async def release(ctx: Context, held: ToolHeld, answers: InputAnswers | None) -> Answer:
    """Ask the caller to approve the held tool. Approved: the answers that go on to the
    upstream (the router's own taken out), the tool released in the index. On 2026-07-28 the
    question itself, as a result. Otherwise `held` (or who may approve) is raised."""
    state = ctx.lifespan_context
    pinning = state.index.pinning
    store = pinning.store
    if store is None or held.reason == "unverified":
        raise held
    if not may_approve(state):
        refused = pinning.refused(held.name, held.server, held.tool, held.reason, operators=True)
        raise refused from None
    caps = ctx.session.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    if elicitation is None or (elicitation.form is None and elicitation.url is not None):
        raise held
    try:
        pin = await anyio.to_thread.run_sync(store.pin, held.server, held.tool)
    except Exception as exc:  # pins that fail approve nothing
        pinning.failed(exc)
        raise held from None
    if pin is None or pin.pending_fingerprint is None:
        raise held
    question = _question(held, pin)
    if is_modern(ctx):
        answered = await _answered(state, held, pin, question, answers)
        if isinstance(answered, types.InputRequiredResult):
            return answered
        answers = answered
    else:
        limit = state.pool.upstream(held.server).timeouts.call
        try:
            with anyio.fail_after(limit):
                result = await ctx.session.send_request(
                    types.ElicitRequest(params=question),
                    types.ElicitResult,
                    metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
                )
        except (TimeoutError, MCPError):
            raise held from None
        if result.action != "accept":
            raise held
    try:
        approved = await anyio.to_thread.run_sync(
            store.approve, held.server, held.tool, pin.pending_fingerprint
        )
    except Exception as exc:
        pinning.failed(exc)
        raise held from None
    if approved is None:  # changed again since the question, or approved elsewhere
        if not await state.index.release_approved():
            raise held
        return answers
    await audit.note(ctx, "pin-approval", held.server, held.name, "confirmed")
    await state.index.rebuild(repin=True)
    return answers


async def _answered(
    state: RouterState,
    held: ToolHeld,
    pin: Pin,
    question: types.ElicitRequestFormParams,
    answers: InputAnswers | None,
) -> Answer:
    """2026-07-28: the question as a result, sealed; or, for an answer to a question this
    router sealed for this caller and this definition (once), the answers without it."""
    principal = current_access().principal
    binding = Binding(
        "pin",
        principal.key if principal is not None else "",
        None,
        digest(held.server, held.tool, pin.pending_fingerprint),
    )
    sealer = state.sealer
    responses = dict(answers.responses or {}) if answers else {}
    answer = responses.pop(PIN_KEY, None)
    if answer is not None and answers is not None:
        opened = await sealer.open_once(answers.state, binding)
        if not isinstance(opened, Refused):
            if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
                raise held
            return InputAnswers(responses or None, None)
        logger.info(
            "tool pinning: an answer to approve %s/%s approves nothing: %s",
            held.server,
            held.tool,
            opened.describe(),
        )
    return types.InputRequiredResult(
        input_requests={PIN_KEY: types.ElicitRequest(params=question)},
        request_state=sealer.seal(binding, STATE_SECONDS),
    )


def _question(held: ToolHeld, pin: Pin) -> types.ElicitRequestFormParams:
    message = question(pin, held.reason)
    return types.ElicitRequestFormParams(message=message, requested_schema=_NO_FIELDS)
