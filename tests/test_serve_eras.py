"""The router mirrors its one host's protocol era on the upstreams (`router.upstream.eras`).

The upstream is `tests/upstreams/session_asking.py`, written the ordinary SDK way: its tools
ask mid-call through the session (`ctx.session.create_message`, `ctx.elicit`), which works on
a handshake-era connection only. It offers 2026-07-28, so with `protocol: auto` the router
would speak that; with a host on a handshake revision the router reaches it over the
handshake instead, and the questions reach the host as they would directly.
"""

from __future__ import annotations

from pathlib import Path

import anyio
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.stdio import stdio_client

from tests.serving import first_text, router_parameters, write_config
from tests.test_upstream_pool import script

UPSTREAM = {"asking": script("session_asking")}


async def _sample(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.CreateMessageResult:
    content = params.messages[0].content
    assert isinstance(content, types.TextContent)
    return types.CreateMessageResult(
        role="assistant", content=types.TextContent(text=f"echo {content.text}"), model="host"
    )


async def _elicit(
    context: ClientRequestContext, params: types.ElicitRequestParams
) -> types.ElicitResult:
    return types.ElicitResult(action="accept", content={"colour": "teal"})


async def _call(client: Client, tool: str, arguments: dict[str, object]) -> str:
    with anyio.fail_after(60):
        return first_text(await client.call_tool(tool, arguments))


async def test_a_handshake_host_is_asked_mid_call_as_directly(tmp_path: Path) -> None:
    parameters = router_parameters(write_config(tmp_path, UPSTREAM, mode="all"))
    direct = script("session_asking")
    async with Client(
        stdio_client(type(parameters)(command=direct["command"], args=direct["args"])),
        mode="legacy",
        sampling_callback=_sample,
        elicitation_callback=_elicit,
    ) as upstream:
        expected = await _call(upstream, "summarize", {"text": "a long story"})
    assert expected == "model said: echo Summarize: a long story"
    async with Client(
        parameters, mode="legacy", sampling_callback=_sample, elicitation_callback=_elicit
    ) as client:
        assert await _call(client, "asking__summarize", {"text": "a long story"}) == expected
        assert await _call(client, "asking__pick_colour", {}) == "the user picked teal"


@pytest.mark.parametrize("protocol", ["legacy", "2026-07-28"])
async def test_a_fixed_protocol_setting_is_not_mirrored(tmp_path: Path, protocol: str) -> None:
    """`protocol` other than `auto` is the user's choice: at 2026-07-28 the upstream cannot
    ask, and says so, as it would to a direct client on that revision."""
    servers = {"asking": {**script("session_asking"), "protocol": protocol}}
    parameters = router_parameters(write_config(tmp_path, servers, mode="all"))
    async with Client(
        parameters, mode="legacy", sampling_callback=_sample, elicitation_callback=_elicit
    ) as client:
        said = await _call(client, "asking__summarize", {"text": "x"})
    if protocol == "legacy":
        assert said == "model said: echo Summarize: x"
    else:
        assert said.startswith("could not sample")
