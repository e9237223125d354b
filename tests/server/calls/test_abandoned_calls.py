"""Calls the client gives up on: what reached an upstream is on the audit trail and holds
the caller's place in flight for as long as the upstream works on it, whatever the client
did (`router.server.calls.audit`, `router.server.calls.held_calls`, `ToolCall.slot`).

The router runs over stdio with the trail on; the host is the SDK `Client`, speaking the
handshake (the call is forwarded directly) or 2026-07-28 (the router holds a call to a
handshake-era upstream open in a task of its own). The upstreams are `tests/upstreams/slow.py`,
whose writes run until cancelled and which says which ones ended, and `asking.py`.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext

from tests.support.serving import router_parameters, write_config
from tests.upstream.test_upstream_pool import SCRIPTS, first_text, script

pytestmark = pytest.mark.processes


def _slow(log: Path) -> dict[str, Any]:
    return {"command": sys.executable, "args": [str(SCRIPTS / "slow.py"), str(log)]}


async def _never(context: ClientRequestContext, params: types.ElicitRequestParams) -> Any:
    raise AssertionError("the test answers no question")


def _records(trail: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in trail.read_text("utf-8").splitlines()]


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_call_the_client_cancels_is_cancelled_upstream_and_on_the_trail(
    tmp_path: Path, mode: str
) -> None:
    """The attack: cancel a write once it reached the upstream, so that it runs there and
    leaves no line. Now the trail says `cancelled` (and, for a held call, that the router
    cancelled its upstream call), and the upstream's write is cut short."""
    log, trail = tmp_path / "slow.log", tmp_path / "trail.jsonl"
    servers = {"slow": {**_slow(log), "protocol": "legacy"}}
    config = write_config(tmp_path, servers, audit={"path": str(trail)})
    with anyio.fail_after(60):
        async with Client(router_parameters(config), mode=mode) as client:
            reached = anyio.Event()

            async def progressed(progress: float, total: float | None, message: str | None) -> None:
                reached.set()

            async with anyio.create_task_group() as group:

                async def write() -> None:
                    await client.call_tool(
                        "slow__write", {"key": "k1"}, progress_callback=progressed
                    )

                group.start_soon(write)
                await reached.wait()
                group.cancel_scope.cancel()  # the SDK sends notifications/cancelled
            settled = first_text(await client.call_tool("slow__settled", {}))

    assert settled.splitlines() == ["started k1", "cancelled k1"]
    records = [r for r in _records(trail) if r.get("tool") == "slow__write"]
    outcomes = [(r["outcome"], r.get("upstream_outcome")) for r in records]
    if mode == "legacy":
        assert outcomes == [("cancelled", None)]
    else:
        assert sorted(outcomes, key=str) == sorted(
            [("cancelled", None), ("abandoned", "cancelled")], key=str
        )
    assert all(r["server"] == "slow" for r in records)


async def test_a_held_call_keeps_its_place_in_flight_until_the_upstream_ends_it(
    tmp_path: Path,
) -> None:
    """The attack: with `concurrent_calls: 1`, start calls that the router holds open (the
    upstream asks the 2026-07-28 host a question) and never answer them: each used to free
    its place when its request ended, so any number ran upstream at once, none on the trail
    once abandoned. Now the held call keeps the place (a second call is over quota), and
    when the router ends it the trail says so."""
    trail = tmp_path / "trail.jsonl"
    config = write_config(
        tmp_path,
        {"asking": script("asking", protocol="legacy")},
        audit={"path": str(trail)},
        quotas={"default": {"concurrent_calls": 1}},
    )
    with anyio.fail_after(60):
        parameters = router_parameters(config)
        async with Client(parameters, mode="2026-07-28", elicitation_callback=_never) as client:
            first = await client.session.call_tool(
                "asking__ask_user", {"question": "Overwrite the ledger?"}, allow_input_required=True
            )
            second = await client.session.call_tool(
                "asking__ask_user", {"question": "And the backup?"}, allow_input_required=True
            )
    assert isinstance(first, types.InputRequiredResult)
    assert isinstance(second, types.CallToolResult) and second.is_error
    assert "concurrent_calls is 1" in first_text(second)
    records = [r for r in _records(trail) if r.get("tool") == "asking__ask_user"]
    outcomes = [(r["outcome"], r.get("upstream_outcome")) for r in records]
    # the router's shutdown ended the held call: its upstream connection closed under it
    assert outcomes == [("held", None), ("over-quota", None), ("abandoned", "error")]
