"""Asking the user before a call that `router.policy` says to confirm.

The host asks through elicitation: a form with no fields whose message names the tool, the
server and the arguments ("Run git_reset on git with {...}?"). Accept runs the call; decline,
cancel, or a host that cannot ask, give an `isError` result that names the policy: the tool
never runs without a yes.

- Up to 2025-11-25 the router sends `elicitation/create` on the call's own stream.
- On 2026-07-28 a server cannot send requests, so the router answers the call with an
  `InputRequiredResult` holding the question; the host retries with the answer. Its
  `requestState` is sealed (HMAC with a key of this process, or of the replicas' shared
  store) and binds the answer to this tool and these arguments, compared as bytes; it
  expires after `STATE_SECONDS` and carries a nonce that authorizes one call: a replayed,
  expired, tampered, forged or other-arguments state never runs the tool, the user is asked
  again. Once confirmed it wraps the upstream's own `requestState` (single-use too), so that
  the upstream's later questions on the same call do not ask the user again.

The question lists every argument on a line of its own, keys in order, each value cut to
`SHOWN_VALUE` characters, so that no long argument pushes another out of view.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import anyio
import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.catalog import ToolRecord
from router.policy import Ruling
from router.upstream.host_requests import InputAnswers

CONFIRM_KEY = "mcp-router/confirm"
"""The key of the router's own question among a call's input requests and responses."""
_STATE_PREFIX = "mcp-router.v2."
SHOWN_VALUE = 200
"""Characters of each argument's value shown in the question; the rest is elided."""
SHOWN_KEYS = 50
"""Arguments listed in the question; more are counted, not shown."""
STATE_SECONDS = 300.0
"""How long a sealed confirmation state can be answered or used."""
MAX_USED_NONCES = 10_000
"""Nonces remembered as used until their state expires (the bound of the table)."""
_NO_FIELDS: dict[str, Any] = {"type": "object", "properties": {}}


@dataclass(frozen=True, slots=True)
class Approved:
    """Run the call; `answers` is what goes on to the upstream (the router's own question
    and state taken out), and `seal` wraps the upstream's next `requestState` (2026-07-28)."""

    answers: InputAnswers | None
    seal: str | None = None


Outcome = Approved | types.CallToolResult | types.InputRequiredResult


class Approvals:
    """Asks the host before confirmed calls; one per router process (its key seals state)."""

    def __init__(self, key: bytes | None = None, clock: Callable[[], float] = time.time) -> None:
        """`key` seals the state (shared by replicas); `clock` gives wall-clock seconds."""
        self._key = key or secrets.token_bytes(32)
        self._clock = clock
        self._used: dict[str, float] = {}

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
            return self._approve_by_result(record, arguments, ruling, answers, question)
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

    def _approve_by_result(
        self,
        record: ToolRecord,
        arguments: dict[str, Any],
        ruling: Ruling,
        answers: InputAnswers | None,
        question: types.ElicitRequestFormParams,
    ) -> Outcome:
        digest = _digest(record, arguments)
        responses = dict(answers.responses or {}) if answers else {}
        state = self._open(answers.state if answers else None)
        answer = responses.pop(CONFIRM_KEY, None)
        if state is not None and not self._claim(state):
            state = None  # replayed or expired: it authorizes nothing, ask again
        if state is not None and _same(state.get("confirmed"), digest):
            upstream_state = state.get("upstream")
            return Approved(
                InputAnswers(responses or None, upstream_state if upstream_state else None),
                seal=digest,
            )
        if state is not None and _same(state.get("asked"), digest) and answer is not None:
            if isinstance(answer, types.ElicitResult) and answer.action == "accept":
                return Approved(InputAnswers(responses or None, None), seal=digest)
            action = answer.action if isinstance(answer, types.ElicitResult) else "no answer"
            return _refusal(record, ruling, f"the user answered {action}")
        return types.InputRequiredResult(
            input_requests={CONFIRM_KEY: types.ElicitRequest(params=question)},
            request_state=self._seal({"asked": digest}),
        )

    def sealed(self, result: types.InputRequiredResult, seal: str) -> types.InputRequiredResult:
        """The upstream's further questions on a confirmed call, its state wrapped with the
        confirmation so that the host's retry is not asked again."""
        state = self._seal({"confirmed": seal, "upstream": result.request_state})
        return result.model_copy(update={"request_state": state})

    def _claim(self, state: dict[str, Any]) -> bool:
        """Use a state's nonce once, before its expiry."""
        now = self._clock()
        expires, nonce = state.get("expires"), state.get("nonce")
        if not isinstance(expires, int | float) or not isinstance(nonce, str) or expires < now:
            return False
        for used, until in list(self._used.items()):
            if until < now:
                del self._used[used]
        if nonce in self._used or len(self._used) >= MAX_USED_NONCES:
            return False
        self._used[nonce] = expires
        return True

    def _seal(self, payload: dict[str, Any]) -> str:
        payload = {
            **payload,
            "nonce": secrets.token_urlsafe(16),
            "expires": self._clock() + STATE_SECONDS,
        }
        body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()
        mac = hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()
        return f"{_STATE_PREFIX}{body}.{mac}"

    def _open(self, state: str | None) -> dict[str, Any] | None:
        """The router's own sealed state, or None (absent, the upstream's, or forged)."""
        if not state or not state.startswith(_STATE_PREFIX):
            return None
        body, _, mac = state[len(_STATE_PREFIX) :].rpartition(".")
        expected = hmac.new(self._key, body.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(mac, expected):
            return None
        try:
            payload = json.loads(base64.urlsafe_b64decode(body.encode()))
        except ValueError:
            return None
        return payload if isinstance(payload, dict) else None


def _digest(record: ToolRecord, arguments: dict[str, Any]) -> str:
    canonical = json.dumps([record.server, record.name, arguments], sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()


def _same(sealed: Any, digest: str) -> bool:
    return isinstance(sealed, str) and hmac.compare_digest(sealed.encode(), digest.encode())


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
