"""A confirmation authorizes one call: each attack on a 2026-07-28 host's sealed state fails.

A raw 2026-07-28 client (no SDK retry logic between the test and the wire) confirms a
destructive tool of `tests/upstreams/guarded.py`, which records every call that ran, then
tries what an attacker would: replaying the accepted retry, the same state with other
arguments, a tampered state, a state sealed by another key, and (in process, with a clock) an
expired one. None runs the tool; each asks again (a fresh question) or refuses, never -32603.
"""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest

from router.approvals.sealing import PREFIX, Binding, Sealer
from router.core.catalog import ToolRecord
from router.policy.profiles import EVERYTHING, Principal
from router.policy.rules import Ruling, Verdict
from router.server.access.authorization import Access, enter
from router.server.calls.approval import CONFIRM_KEY, STATE_SECONDS, Approvals, Approved
from router.upstream.connection.host_requests import InputAnswers
from tests.support.serving import RawRouter, raw_router, write_config
from tests.upstream.test_upstream_pool import script

ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
    "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
}
ACCEPT = {CONFIRM_KEY: {"action": "accept", "content": {}}}


def _call(name: str, **extra: Any) -> dict[str, Any]:
    return {"name": "guarded__delete_note", "arguments": {"name": name}, "_meta": ENVELOPE, **extra}


async def _ran(router: RawRouter) -> list[str]:
    result = await router.result(
        "tools/call", {"name": "guarded__ran", "arguments": {}, "_meta": ENVELOPE}
    )
    text: str = result["content"][0]["text"]
    return [line for line in text.splitlines() if line]


def _asks_again(response: dict[str, Any]) -> bool:
    result = response.get("result", {})
    return result.get("resultType") == "input_required" and CONFIRM_KEY in result.get(
        "inputRequests", {}
    )


@pytest.mark.processes
async def test_a_confirmation_runs_one_call_and_no_attack_runs_another(tmp_path: Path) -> None:
    config = write_config(
        tmp_path, {"guarded": script("guarded")}, policy={"confirm": ["guarded/delete_note"]}
    )
    async with raw_router(config) as router:
        with anyio.fail_after(60):
            asked = await router.result("tools/call", _call("plans"))
            state = asked["requestState"]
            accepted = _call("plans", inputResponses=ACCEPT, requestState=state)
            done = await router.result("tools/call", accepted)
            replayed = await router.request("tools/call", accepted)
            swapped = await router.request(
                "tools/call", _call("everything", inputResponses=ACCEPT, requestState=state)
            )
            body, _, mac = state.rpartition(".")
            tampered = await router.request(
                "tools/call",
                _call("plans", inputResponses=ACCEPT, requestState=f"{body}.{mac[:-2]}00"),
            )
            foreign = Sealer(b"k" * 32).seal(Binding("confirm", digest="0" * 64), 60)
            forged = await router.request(
                "tools/call", _call("plans", inputResponses=ACCEPT, requestState=foreign)
            )
            ran = await _ran(router)
    assert asked["resultType"] == "input_required"
    assert done["content"][0]["text"] == "deleted plans"
    for attempt in (replayed, swapped, tampered, forged):
        assert "error" not in attempt, attempt  # never -32603: the user is asked again
        assert _asks_again(attempt), attempt
    assert ran == ["delete_note plans"]  # the one confirmed call, nothing else


def _record() -> ToolRecord:
    return ToolRecord(
        server="guarded",
        name="delete_note",
        qualified_name="guarded__delete_note",
        description="",
        input_schema={"type": "object"},
        search_text="",
        fingerprint="f",
    )


async def test_an_expired_state_authorizes_nothing() -> None:
    now = [1_000_000.0]
    approvals = Approvals(Sealer(b"k" * 32, clock=lambda: now[0]))
    enter(Access(None, EVERYTHING, operator=False))  # what the layer sets for the request
    record, ruling = _record(), Ruling(Verdict.CONFIRM, "router.policy.confirm 'guarded/*'")
    question = await approvals._approve_by_result(record, {"name": "a"}, ruling, None, _form())
    assert isinstance(question, types.InputRequiredResult)
    answers = InputAnswers(
        {CONFIRM_KEY: types.ElicitResult(action="accept")}, question.request_state
    )
    now[0] += STATE_SECONDS + 1
    late = await approvals._approve_by_result(record, {"name": "a"}, ruling, answers, _form())
    assert isinstance(late, types.InputRequiredResult)  # asked again, not run
    assert late.input_requests is not None
    asking = late.input_requests[CONFIRM_KEY]
    assert isinstance(asking, types.ElicitRequest)
    message = asking.params.message
    assert message.endswith("(Asked again: the request state has expired.)")
    fresh = InputAnswers({CONFIRM_KEY: types.ElicitResult(action="accept")}, late.request_state)
    assert isinstance(
        await approvals._approve_by_result(record, {"name": "a"}, ruling, fresh, _form()),
        Approved,
    )


def test_the_question_lists_every_argument_in_order_each_cut() -> None:
    from router.server.calls.approval import SHOWN_VALUE, _question

    long = "x" * (SHOWN_VALUE * 5)
    message = _question(_record(), {"z_path": "/etc", "a_text": long, "m_flag": True}).message
    lines = message.splitlines()
    assert lines[0] == "Run delete_note on guarded?"
    assert [line.split(":")[0] for line in lines[1:]] == ["- a_text", "- m_flag", "- z_path"]
    assert len(lines[1]) < SHOWN_VALUE + 60 and lines[3] == '- z_path: "/etc"'


def _form() -> types.ElicitRequestFormParams:
    return types.ElicitRequestFormParams(message="?", requested_schema={"type": "object"})


def test_a_sealed_state_is_opaque_json_under_the_mac() -> None:
    state = Sealer(b"k" * 32).seal(Binding("confirm", "who", None, "d"), 60, {"step": "asked"})
    body = state.removeprefix(PREFIX).rpartition(".")[0]
    payload = json.loads(base64.urlsafe_b64decode(body))
    assert set(payload) == {"p", "who", "s", "d", "n", "exp", "data"}
    assert payload["p"] == "confirm" and payload["data"] == {"step": "asked"}


async def test_another_principals_or_another_purposes_state_confirms_nothing() -> None:
    """Alice's accepted state, sent by Bob, and a state sealed for another question (a held
    call's) with Alice's answer: each asks again, naming why; Alice's own state confirms."""
    approvals = Approvals(Sealer(b"k" * 32))
    record, ruling = _record(), Ruling(Verdict.CONFIRM, "router.policy.confirm 'guarded/*'")
    alice, bob = Principal("alice", issuer="idp"), Principal("bob", issuer="idp")
    accept: types.InputResponses = {CONFIRM_KEY: types.ElicitResult(action="accept")}
    enter(Access(alice, EVERYTHING, operator=False))
    question = await approvals._approve_by_result(record, {"name": "a"}, ruling, None, _form())
    assert isinstance(question, types.InputRequiredResult)
    enter(Access(bob, EVERYTHING, operator=False))
    answers = InputAnswers(accept, question.request_state)
    as_bob = await approvals._approve_by_result(record, {"name": "a"}, ruling, answers, _form())
    enter(Access(alice, EVERYTHING, operator=False))
    held = approvals.sealer.seal(Binding("held", alice.key, None, "d"), 60)
    other = InputAnswers(accept, held)
    purpose = await approvals._approve_by_result(record, {"name": "a"}, ruling, other, _form())
    own = await approvals._approve_by_result(record, {"name": "a"}, ruling, answers, _form())
    assert _message(as_bob).endswith(
        "(Asked again: the request state was issued to another principal.)"
    )
    assert "issued for another kind of question" in _message(purpose)
    assert isinstance(own, Approved)


def _message(outcome: object) -> str:
    assert isinstance(outcome, types.InputRequiredResult) and outcome.input_requests
    asking = outcome.input_requests[CONFIRM_KEY]
    assert isinstance(asking, types.ElicitRequest)
    return asking.params.message
