"""A confirmed call is checked again after the user's yes, under the settings in force then,
its endpoint's included (`router.server.calls.stages.authorize`): a reload that takes the tool
out of the endpoint while the user is asked refuses the call, and the upstream never runs it.

A handshake host at `/mcp/desk` of a real HTTP front reading a real config file; the upstream
is tests/upstreams/guarded.py, which records every call that ran. The host's elicitation
callback is the attacker's window: it saves the narrowed config, waits for the router to
adopt it (an event of the router's state), then accepts.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp.client.context import ClientRequestContext
from mcp.shared.exceptions import MCPError

from router.config import load_config
from router.server.lifecycle.state import RouterState
from tests.config.test_config_reload import rewrite
from tests.support.http_serving import http_front, streamable_client, until_indexed
from tests.support.serving import first_text, write_config
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

LIMIT = 60
SERVERS = {"guarded": script("guarded")}
POLICY = {"confirm": ["guarded/delete_note"]}


async def until(state: RouterState, done: Callable[[], bool]) -> None:
    """Until `done()`, checked at every change of the state (a reload is one)."""
    while not done():
        await state.changes.wait()


NARROWED = {
    "endpoint tools": {"tools": ["guarded/read_note", "guarded/ran"]},
    "endpoint policy": {"policy": {"deny": ["guarded/delete_note"]}},
}


@pytest.mark.parametrize("case", list(NARROWED))
async def test_a_tool_an_endpoint_drops_while_the_user_is_asked_does_not_run(
    tmp_path: Path, case: str
) -> None:
    """Before, with the endpoint's `tools` narrowed, the call ran: the re-check read the
    principal's profiles without the endpoint."""
    narrowed = NARROWED[case]
    path = write_config(tmp_path, SERVERS, policy=POLICY, endpoints={"desk": {}})
    asked: list[str] = []
    async with http_front(load_config(path), read_config=lambda: load_config(path)) as front:
        state = front.state

        async def narrow_then_accept(
            context: ClientRequestContext, params: types.ElicitRequestParams
        ) -> types.ElicitResult:
            asked.append(params.message)
            before = state.config_settings
            rewrite(path, SERVERS, policy=POLICY, endpoints={"desk": narrowed})
            await until(state, lambda: state.config_settings is not before)
            return types.ElicitResult(action="accept")

        async with streamable_client(
            f"{front.mcp}/desk", mode="legacy", elicitation_callback=narrow_then_accept
        ) as client:
            with anyio.fail_after(LIMIT):
                await until_indexed(state)
                try:
                    outcome: types.CallToolResult | MCPError = await client.call_tool(
                        "guarded__delete_note", {"name": "plans"}
                    )
                except MCPError as refused:
                    outcome = refused
                ran = first_text(await client.call_tool("guarded__ran", {}))

    assert asked == ['Run delete_note on guarded?\n- name: "plans"']
    assert ran == ""  # the upstream never ran it
    assert isinstance(outcome, MCPError), outcome  # before: it ran ("deleted plans")
    assert outcome.error.code == types.INVALID_PARAMS
    assert outcome.error.message == "unknown tool 'guarded__delete_note'"
