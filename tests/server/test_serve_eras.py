"""The router mirrors its one host's protocol era on the upstreams
(`router.upstream.connection.eras`).

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

from tests.support.http_serving import (
    config,
    http_front,
    listening_upstream,
    streamable_client,
    until_indexed,
)
from tests.support.ports import free_port
from tests.support.serving import first_text, raw_router, router_parameters, write_config
from tests.upstream.test_upstream_pool import script

pytestmark = pytest.mark.processes

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


@pytest.mark.parametrize("asks", [True, False])
async def test_a_modern_request_carries_the_hosts_capabilities_not_the_routers(
    tmp_path: Path, asks: bool
) -> None:
    """On 2026-07-28 every request declares its client's capabilities: the upstream sees the
    host's, as it would directly, never the sampling and elicitation the router relays."""
    parameters = router_parameters(write_config(tmp_path, UPSTREAM, mode="all"))
    callbacks: dict[str, object] = (
        {"sampling_callback": _sample, "elicitation_callback": _elicit} if asks else {}
    )
    async with Client(parameters, mode="2026-07-28", **callbacks) as client:  # type: ignore[arg-type]
        said = await _call(client, "asking__declared", {})
    assert said == ("elicitation,sampling" if asks else "")


async def test_over_http_a_handshake_host_is_served_by_a_twin_beside_the_modern_connection(
    tmp_path: Path,
) -> None:
    """The HTTP front serves many hosts, so a remote upstream keeps its 2026-07-28 connection
    (listing, notifications, modern hosts) and a handshake-era host's call goes out on a
    second, handshake-era connection, where the upstream can ask it mid-call; a modern host
    keeps the modern one (and is told the upstream cannot ask, as directly)."""
    port = free_port()
    async with listening_upstream("session_asking", "streamable-http", port):
        servers = {"asking": {"url": f"http://127.0.0.1:{port}/mcp"}}
        async with http_front(config(servers, mode="all")) as http:
            with anyio.fail_after(60):
                await until_indexed(http.state)
                async with streamable_client(
                    http.mcp,
                    mode="legacy",
                    sampling_callback=_sample,
                    elicitation_callback=_elicit,
                ) as old:
                    asked = await _call(old, "asking__summarize", {"text": "news"})
                async with streamable_client(
                    http.mcp, mode="2026-07-28", sampling_callback=_sample
                ) as new:
                    declared = await _call(new, "asking__declared", {})
            twins = dict(http.state.pool.twins)
    assert asked == "model said: echo Summarize: news"
    assert declared == "sampling"
    assert list(twins) == ["asking"]
    primary = http.state.pool.upstream("asking")
    assert primary.status.protocol_version == "2026-07-28"


async def test_a_modern_host_hears_of_a_changed_listing_on_its_listen_stream(
    tmp_path: Path,
) -> None:
    """On 2026-07-28 changes travel on `subscriptions/listen` only: `server/discover`
    declares `tools.listChanged`, and a host's stream gets the event when an upstream adds a
    tool (pass-through mode lists it at once)."""
    servers = {"growing": script("growing")}
    parameters = router_parameters(write_config(tmp_path, servers, mode="all"))
    async with Client(parameters, mode="auto") as client:  # discover: the real capabilities
        with anyio.fail_after(60):
            assert client.protocol_version == "2026-07-28"
            capabilities = client.server_capabilities
            before = [tool.name for tool in (await client.list_tools()).tools]
            async with client.listen(tools_list_changed=True) as stream:
                await client.call_tool("growing__grow", {})
                event = await anext(aiter(stream))
            after = [tool.name for tool in (await client.list_tools()).tools]
    assert capabilities.tools is not None and capabilities.tools.list_changed is True
    assert type(event).__name__ == "ToolsListChanged"
    assert "growing__grown" not in before and "growing__grown" in after


async def test_a_modern_host_answers_a_handshake_upstreams_mid_call_question_by_retrying(
    tmp_path: Path,
) -> None:
    """The one true gap: a 2026-07-28 host calls a handshake-only upstream whose tool asks
    mid-call. The router holds the upstream call open, gives the host the question as an
    `InputRequiredResult` (its state sealed), and resumes the call with the host's answer."""
    servers = {"asking": {**script("session_asking"), "protocol": "legacy"}}
    parameters = router_parameters(write_config(tmp_path, servers, mode="all"))
    async with Client(
        parameters, mode="2026-07-28", sampling_callback=_sample, elicitation_callback=_elicit
    ) as client:
        said = await _call(client, "asking__summarize", {"text": "the news"})
        picked = await _call(client, "asking__pick_colour", {})
    assert said == "model said: echo Summarize: the news"
    assert picked == "the user picked teal"


async def test_a_held_calls_state_answers_once_and_a_forged_one_never(tmp_path: Path) -> None:
    """The sealed `requestState` of a held call resumes it once: replaying the same retry,
    or a state with its seal changed, is an error that says so, and the upstream asks no
    second time."""
    servers = {"asking": {**script("session_asking"), "protocol": "legacy"}}
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {"sampling": {}},
    }
    call = {"name": "asking__summarize", "arguments": {"text": "x"}, "_meta": envelope}
    async with raw_router(write_config(tmp_path, servers, mode="all")) as router:
        with anyio.fail_after(60):
            asked = await router.result("tools/call", call)
            state = asked["requestState"]
            answer = {
                "input": {
                    "role": "assistant",
                    "content": {"type": "text", "text": "short"},
                    "model": "raw",
                }
            }
            retry = {**call, "inputResponses": answer, "requestState": state}
            done = await router.result("tools/call", retry)
            again = await router.request("tools/call", retry)
            forged = await router.request(
                "tools/call", {**retry, "requestState": state[:-4] + "AAAA"}
            )
    assert asked["resultType"] == "input_required"
    assert asked["inputRequests"]["input"]["method"] == "sampling/createMessage"
    assert done["content"][0]["text"] == "model said: short"
    for refused in (again, forged):
        assert refused["error"]["code"] == types.INVALID_PARAMS, refused
    assert "no longer held here" in again["error"]["message"]
    assert "not one this router sealed" in forged["error"]["message"]
