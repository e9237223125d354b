"""Approving a held tool in the session: the host asks the user, through elicitation.

A call to a tool that tool pinning holds (`router.pinning`) is the `ToolHeld` error, unless
the host declared form elicitation: then the user is asked, in a message that names the
tool and shows what changed (the unified diff of the approved and the new definition, cut
to `SHOWN_DIFF` characters), whether to approve it and run the call. Accept approves the
definition shown, and only that one (an upstream that changed it again meanwhile gets
nothing approved, and the call is refused), as `mcp-router tools approve` would, for every
router sharing the cache folder; the call then runs. Decline, cancel, no answer within the
upstream's call timeout, or a host that cannot ask: the tool stays held, the call is the
`ToolHeld` error.

- Up to 2025-11-25 the router sends `elicitation/create` on the call's own stream, as a
  confirmation does (`router.server.approval`).
- On 2026-07-28 it answers with an `InputRequiredResult` whose `requestState` names the
  fingerprint shown. It needs no seal: it authorizes nothing, the host's accept does, and
  only for the definition that is still the pending one.
"""

from __future__ import annotations

from typing import Any

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.errors import ToolHeld
from router.pinning import Pin, diff
from router.server.state import RouterState
from router.upstream.host_requests import InputAnswers

PIN_KEY = "mcp-router/approve-tool"
"""The key of the router's question among a call's input requests and responses."""
SHOWN_DIFF = 1_500
"""Characters of the diff shown in the question; the rest is elided."""
_STATE_PREFIX = "mcp-router.pin."
_NO_FIELDS: dict[str, Any] = {"type": "object", "properties": {}}

Answer = InputAnswers | None | types.InputRequiredResult


async def release(
    ctx: ServerRequestContext[RouterState, Any], held: ToolHeld, answers: InputAnswers | None
) -> Answer:
    """Ask the user to approve the held tool. Approved: the answers that go on to the upstream
    (the router's own taken out), the tool released in the index. On 2026-07-28 the question
    itself, as a result. Otherwise `held` is raised."""
    state = ctx.lifespan_context
    caps = ctx.session.client_capabilities
    elicitation = caps.elicitation if caps is not None else None
    store = state.index.pinning.store
    if (
        store is None
        or elicitation is None
        or (elicitation.form is None and elicitation.url is not None)
    ):
        raise held
    pin = await anyio.to_thread.run_sync(store.pin, held.server, held.tool)
    if pin is None or pin.pending_fingerprint is None:
        raise held
    question = _question(held, pin)
    shown = _STATE_PREFIX + pin.pending_fingerprint
    if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
        responses = dict(answers.responses or {}) if answers else {}
        answer = responses.pop(PIN_KEY, None)
        if answer is None or answers is None or answers.state != shown:
            return types.InputRequiredResult(
                input_requests={PIN_KEY: types.ElicitRequest(params=question)},
                request_state=shown,
            )
        if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
            raise held
        answers = InputAnswers(responses or None, None)
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
    approved = await anyio.to_thread.run_sync(
        store.approve, held.server, held.tool, pin.pending_fingerprint
    )
    if approved is None:  # changed again since the question, or approved elsewhere
        if not await state.index.release_approved():
            raise held
        return answers
    await state.index.rebuild(repin=True)
    return answers


def _question(held: ToolHeld, pin: Pin) -> types.ElicitRequestFormParams:
    change = diff(pin)
    if len(change) > SHOWN_DIFF:
        change = change[:SHOWN_DIFF] + f"\n… ({len(change):,} characters in all)"
    if held.reason == "changed":
        lead = (
            f"The tool {held.tool} of server {held.server} changed since it was approved. "
            "Read the change: approve the new definition and run this call?"
        )
    else:
        lead = (
            f"Server {held.server} added a new tool, {held.tool}, which router.pinning "
            "'strict' holds. Read it: approve it and run this call?"
        )
    return types.ElicitRequestFormParams(message=f"{lead}\n\n{change}", requested_schema=_NO_FIELDS)
