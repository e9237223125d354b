"""One round of a 2026-07-28 request whose answer may be a question: `tools/call`,
`prompts/get` and `resources/read` for a host on 2026-07-28 too.

Between two 2026-07-28 ends nothing is relayed: the upstream's `InputRequiredResult` goes back
to the host as it is, and the host's retry carries its answers and the upstream's opaque
`requestState` back (`answers`). On a handshake-era upstream connection each is the plain
request, whose questions the relay carries instead (`router.server.calls.relay`).
"""

from __future__ import annotations

from typing import TypeVar

import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT

from router.core.errors import ToolNotFound, UpstreamProtocolError
from router.upstream.connection.host_requests import InputAnswers
from router.upstream.failures import ProgressClock
from router.upstream.upstream import Upstream


async def call_tool_round(
    upstream: Upstream,
    tool: str,
    arguments: dict[str, object] | None,
    answers: InputAnswers,
    progress_callback: ProgressFnT | None = None,
) -> types.CallToolResult | types.InputRequiredResult:
    """`tools/call`, raising as `Upstream.call_tool` does."""
    if not upstream.speaks_modern:
        return await upstream.call_tool(tool, arguments, progress_callback=progress_callback)
    if not upstream.allows(tool):
        raise ToolNotFound(f"{upstream.name}/{tool}")
    clock = ProgressClock(upstream.timeouts.total_call_limit, progress_callback)
    result = await upstream.request(
        f"tools/call {tool!r}",
        lambda client: client.session.call_tool(
            tool,
            arguments,
            progress_callback=clock.callback,
            input_responses=answers.responses,
            request_state=answers.state,
            allow_input_required=True,
        ),
        clock,
    )
    return _checked(upstream, f"tools/call {tool!r}", result, types.CallToolResult)


async def read_resource_round(
    upstream: Upstream, uri: str, answers: InputAnswers
) -> types.ReadResourceResult | types.InputRequiredResult:
    """`resources/read`, raising as `Upstream.read_resource` does."""
    if not upstream.speaks_modern:
        return await upstream.read_resource(uri)
    result = await upstream.request(
        "resources/read",
        lambda client: client.session.read_resource(
            uri,
            input_responses=answers.responses,
            request_state=answers.state,
            allow_input_required=True,
        ),
    )
    return _checked(upstream, "resources/read", result, types.ReadResourceResult)


async def get_prompt_round(
    upstream: Upstream, name: str, arguments: dict[str, str] | None, answers: InputAnswers
) -> types.GetPromptResult | types.InputRequiredResult:
    """`prompts/get`, raising as `Upstream.get_prompt` does."""
    if not upstream.speaks_modern:
        return await upstream.get_prompt(name, arguments)
    result = await upstream.request(
        f"prompts/get {name!r}",
        lambda client: client.session.get_prompt(
            name,
            arguments,
            input_responses=answers.responses,
            request_state=answers.state,
            allow_input_required=True,
        ),
    )
    return _checked(upstream, f"prompts/get {name!r}", result, types.GetPromptResult)


_R = TypeVar("_R")


def _checked(
    upstream: Upstream, what: str, result: object, final: type[_R]
) -> _R | types.InputRequiredResult:
    if isinstance(result, final | types.InputRequiredResult):
        return result
    raise UpstreamProtocolError(upstream.name, f"{what}: unexpected result")
