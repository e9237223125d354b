"""What a shared upstream's handshake-era twin asks or logs outside any call follows the
relay's rule for shared upstreams, not the first caller's context (issue 48).

A remote upstream that offers 2026-07-28 is reached by a handshake-era host through its
twin (`router.upstream.connection.twins`), which the first such host's call opens. That
task used to start inside the call, so it kept that call's context for good: every question
the twin asked out of band, and every log message, went to that first host's session for as
long as it stayed open, whoever had a call in flight. The upstream is
`tests/upstreams/shared_asking.py`: host A starts a deliberation (its call answers at once,
the work goes on) and stays connected; host B's `conclude` releases the work, which logs and
asks out of band. A's call ended with its answer, so it does not linger at the upstream: B's
call is the only one in flight there, so by the relay's rule B's session is told and asked
(on its call's stream), and A never.
"""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp.client.session import ClientRequestContext

from tests.support.http_serving import (
    config,
    http_front,
    listening_upstream,
    streamable_client,
    until_indexed,
)
from tests.support.ports import free_port

pytestmark = pytest.mark.processes

LIMIT = 60.0


class Host:
    """One host session: what the router asked and told it, each question answered with its
    name."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.asked: list[str] = []
        self.logged: list[object] = []

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.asked.append(params.message)
        return types.ElicitResult(action="accept", content={"answer": self.name})

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logged.append(params.data)


def _text(result: types.CallToolResult) -> str:
    assert not result.is_error, result.model_dump_json()
    content = result.content[0]
    assert isinstance(content, types.TextContent)
    return content.text


async def test_a_twins_question_outside_any_call_goes_to_the_call_in_flight_not_the_first() -> None:
    first, second = Host("first"), Host("second")
    port = free_port()
    async with listening_upstream("shared_asking", "streamable-http", port):
        servers = {"shared": {"url": f"http://127.0.0.1:{port}/mcp"}}
        async with http_front(config(servers, mode="all")) as front:
            with anyio.fail_after(LIMIT):
                await until_indexed(front.state)
                async with (
                    streamable_client(
                        front.mcp,
                        mode="legacy",
                        elicitation_callback=first.elicitation,
                        logging_callback=first.log,
                    ) as a,
                    streamable_client(
                        front.mcp,
                        mode="legacy",
                        elicitation_callback=second.elicitation,
                        logging_callback=second.log,
                    ) as b,
                ):
                    started = await a.call_tool("shared__deliberate", {"topic": "the budget"})
                    assert _text(started) == "deliberating"
                    assert list(front.state.pool.twins) == ["shared"]  # A's call opened it
                    outcome = _text(await b.call_tool("shared__conclude", {}))
                    # A stays connected until B's call has its answer
    primary = front.state.pool.upstream("shared")
    assert primary.status.protocol_version == "2026-07-28"
    assert first.asked == [] and first.logged == [], (first.asked, first.logged)
    assert outcome == "accept: second", outcome
    assert second.asked == ["About the budget: go on?"]
    assert second.logged == ["deliberated the budget"]
