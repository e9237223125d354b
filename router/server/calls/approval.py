"""Asking the user before a call that `router.policy` says to confirm.

The host asks through elicitation: a form with no fields whose message names the tool, the
server and the arguments ("Run git_reset on git with {...}?"). Accept runs the call; decline,
cancel, or a host that cannot ask, give an `isError` result that names the policy: the tool
never runs without a yes.

- Up to 2025-11-25 the router sends `elicitation/create` on the call's own stream.
- On 2026-07-28 a server cannot send requests, so the router answers the call with an
  `InputRequiredResult` holding the question; the host retries with the answer. Its
  `requestState` is sealed (`router.approvals.sealing`, purpose `confirm`): bound to the principal
  and to the digest of this tool and these arguments, expiring after `STATE_SECONDS`, its
  nonce spent in the store's ledger, so it authorizes one call on every replica together.
  A replayed (here or on another replica), expired, tampered, forged, other-principal or
  other-arguments state never runs the tool: the user is asked again, the question saying
  why the answer counted for nothing. Once confirmed it wraps the upstream's own
  `requestState` (single-use too), so that the upstream's later questions on the same call
  do not ask the user again.

The question lists every argument on a line of its own, keys in order, each value cut to
`SHOWN_VALUE` characters, so that no long argument pushes another out of view.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.approvals.sealing import Binding, Opened, Sealer, digest
from router.core.catalog import ToolRecord
from router.policy.rules import Ruling
from router.server.access.authorization import current_access
from router.upstream.connection.host_requests import InputAnswers

logger = logging.getLogger(__name__)

CONFIRM_KEY = "mcp-router/confirm"
"""The key of the router's own question among a call's input requests and responses."""
SHOWN_VALUE = 200
"""Characters of each argument's value shown in the question; the rest is elided."""
SHOWN_KEYS = 50
"""Arguments listed in the question; more are counted, not shown."""
STATE_SECONDS = 300.0
"""How long a sealed confirmation state can be answered or used."""
_NO_FIELDS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class Approved:
    """Run the call; `answers` is what goes on to the upstream (the router's own question
    and state taken out), and `seal` wraps the upstream's next `requestState` (2026-07-28)."""

    answers: InputAnswers | None
    seal: str | None = None


Outcome = Approved | types.CallToolResult | types.InputRequiredResult


class Approvals:
    """Asks the host before confirmed calls; one per router process, sealing with the
    router's `Sealer` (its key and nonce ledger shared by the replicas of a store)."""

    def __init__(self, sealer: Sealer | None = None) -> None:
        self.sealer = sealer or Sealer()

    async def approve(
        self,
        ctx: ServerRequestContext[Any, Any],
        record: ToolRecord,
        arguments: dict[str, Any],
        ruling: Ruling,
        answers: InputAnswers | None,
        limit: float,
    ) -> Outcome:
        """Whether the user lets this call run, within `limit` seconds of waiting."""
        caps = ctx.session.client_capabilities
        elicitation = caps.elicitation if caps is not None else None
        if elicitation is None or (elicitation.form is None and elicitation.url is not None):
            return _refusal(
                record,
                ruling,
                "this client cannot ask the user (it did not declare form elicitation)",
            )
        question = _question(record, arguments)
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return await self._approve_by_result(record, arguments, ruling, answers, question)
        try:
            with anyio.fail_after(limit):
                result = await ctx.session.send_request(
                    types.ElicitRequest(params=question),
                    types.ElicitResult,
                    metadata=ServerMessageMetadata(related_request_id=ctx.request_id),
                )
        except TimeoutError:
            return _refusal(record, ruling, f"the user did not answer within {limit:g}s")
        except MCPError as exc:
            return _refusal(record, ruling, f"asking the user failed: {exc.message}")
        if result.action != "accept":
            return _refusal(record, ruling, f"the user answered {result.action}")
        return Approved(answers)

    async def _approve_by_result(
        self,
        record: ToolRecord,
        arguments: dict[str, Any],
        ruling: Ruling,
        answers: InputAnswers | None,
        question: types.ElicitRequestFormParams,
    ) -> Outcome:
        binding = _binding(digest(record.server, record.name, arguments))
        responses = dict(answers.responses or {}) if answers else {}
        answer = responses.pop(CONFIRM_KEY, None)
        state = answers.state if answers else None
        if Sealer.is_sealed(state):  # ours (else absent, or the upstream's own)
            opened = await self.sealer.open_once(state, binding)
            if isinstance(opened, Opened):
                step = opened.data.get("step")
                if step == "confirmed":
                    upstream = opened.data.get("upstream")
                    return Approved(
                        InputAnswers(responses or None, upstream if upstream else None),
                        seal=binding.digest,
                    )
                if step == "asked" and answer is not None:
                    if isinstance(answer, types.ElicitResult) and answer.action == "accept":
                        return Approved(InputAnswers(responses or None, None), seal=binding.digest)
                    action = (
                        answer.action if isinstance(answer, types.ElicitResult) else "no answer"
                    )
                    return _refusal(record, ruling, f"the user answered {action}")
            else:  # it authorizes nothing: ask again, saying why the answer did not count
                why = opened.describe()
                logger.info("confirmation of %s asked again: %s", record.qualified_name, why)
                question = question.model_copy(
                    update={"message": f"{question.message}\n\n(Asked again: {why}.)"}
                )
        return types.InputRequiredResult(
            input_requests={CONFIRM_KEY: types.ElicitRequest(params=question)},
            request_state=self.sealer.seal(binding, STATE_SECONDS, {"step": "asked"}),
        )

    def sealed(self, result: types.InputRequiredResult, seal: str) -> types.InputRequiredResult:
        """The upstream's further questions on a confirmed call (`seal`: its digest), its
        state wrapped with the confirmation so that the host's retry is not asked again."""
        data = {"step": "confirmed", "upstream": result.request_state}
        state = self.sealer.seal(_binding(seal), STATE_SECONDS, data)
        return result.model_copy(update={"request_state": state})


def _binding(call: str) -> Binding:
    """A confirmation's binding: the caller (2026-07-28 has no session) and the call."""
    principal = current_access().principal
    return Binding("confirm", principal.key if principal is not None else "", None, call)


def _question(record: ToolRecord, arguments: dict[str, Any]) -> types.ElicitRequestFormParams:
    keys = sorted(arguments)
    lines = []
    for key in keys[:SHOWN_KEYS]:
        value = json.dumps(arguments[key], ensure_ascii=False, default=str)
        if len(value) > SHOWN_VALUE:
            value = value[:SHOWN_VALUE] + f"… ({len(value):,} characters)"
        lines.append(f"- {key}: {value}")
    if len(keys) > SHOWN_KEYS:
        lines.append(f"- and {len(keys) - SHOWN_KEYS} more arguments")
    listed = ("\n" + "\n".join(lines)) if lines else " (no arguments)"
    return types.ElicitRequestFormParams(
        message=f"Run {record.name} on {record.server}?{listed}",
        requested_schema=_NO_FIELDS,
    )


def _refusal(record: ToolRecord, ruling: Ruling, why: str) -> types.CallToolResult:
    text = (
        f"mcp-router: {record.qualified_name} was not run: it needs the user's confirmation "
        f"({ruling.rule}) and {why}."
    )
    return types.CallToolResult.model_validate(
        {
            "content": [{"type": "text", "text": text}],
            "isError": True,
            "_meta": {"mcp-router/policy": {"tool": record.qualified_name, "rule": ruling.rule}},
        }
    )
