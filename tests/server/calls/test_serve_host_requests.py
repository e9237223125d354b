"""What upstreams ask of the host, through the router: sampling, elicitation and roots reach
the host session whose call caused them, and the host's answer goes back.

The upstream is `tests/upstreams/asking.py` (the mcp SDK's server): each tool asks the
client something and answers with what it got back, an error's code and message included.
The host is the SDK `Client` with callbacks, on the router over stdio (a child process) and
over streamable HTTP and legacy HTTP+SSE (in-process on uvicorn); the upstream is reached
over stdio, streamable HTTP and legacy SSE. The router is BM25 only: ranking is not what
these tests are about.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.session import ClientRequestContext
from mcp.client.sse import sse_client
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import FileUrl

from tests.server.calls.test_relay_attacks import logged
from tests.support.http_serving import (
    config,
    http_front,
    listening_upstream,
    streamable_client,
    until_indexed,
)
from tests.support.ports import free_port
from tests.support.serving import router_parameters, write_config
from tests.upstream.test_upstream_pool import first_text, script

pytestmark = pytest.mark.processes

ASKING = {"asking": script("asking")}
ROOTS = [types.Root(uri=FileUrl("file:///work/project"), name="project")]


class Host:
    """The host side: what it was asked, and what it answers."""

    def __init__(self, elicit_action: str = "accept") -> None:
        self.sampled: list[str] = []
        self.elicited: list[str] = []
        self.roots = list(ROOTS)
        self.elicit_action = elicit_action
        self.release = anyio.Event()
        self.hold_elicitation = False
        self.elicitation_started = anyio.Event()
        self.logged: list[tuple[str, object]] = []

    async def sampling(
        self, context: ClientRequestContext, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult:
        content = params.messages[0].content
        assert isinstance(content, types.TextContent)
        self.sampled.append(content.text)
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=f"echo {content.text}"),
            model="host-model",
        )

    async def elicitation(
        self, context: ClientRequestContext, params: types.ElicitRequestParams
    ) -> types.ElicitResult:
        self.elicited.append(params.message)
        if self.hold_elicitation:
            self.elicitation_started.set()
            await self.release.wait()
        if isinstance(params, types.ElicitRequestURLParams):
            return types.ElicitResult(action="accept")
        if self.elicit_action != "accept":
            return types.ElicitResult(action=self.elicit_action)  # type: ignore[arg-type]
        return types.ElicitResult(action="accept", content={"answer": "blue"})

    async def list_roots(self, context: ClientRequestContext) -> types.ListRootsResult:
        return types.ListRootsResult(roots=self.roots)

    async def log(self, params: types.LoggingMessageNotificationParams) -> None:
        self.logged.append((params.level, params.data))

    def callbacks(self) -> dict[str, Any]:
        return {
            "sampling_callback": self.sampling,
            "elicitation_callback": self.elicitation,
            "list_roots_callback": self.list_roots,
            "logging_callback": self.log,
        }


ERAS = {"legacy": "legacy", "modern": "2026-07-28"}
"""The revision the router speaks to the upstream: it asks mid-call on the first, and
through an `InputRequiredResult` that the router answers and retries with on the second."""


@asynccontextmanager
async def upstream_entry(transport: str, era: str) -> AsyncIterator[dict[str, dict[str, Any]]]:
    """The asking upstream's config entry; over HTTP it runs here, on a free port (the
    router's retries cover the moments before it listens)."""
    if transport == "stdio":
        yield {"asking": script("asking", protocol=ERAS[era])}
        return
    port = free_port()
    path = "/sse" if transport == "sse" else "/mcp"
    async with listening_upstream("asking", transport, port):
        yield {"asking": {"url": f"http://127.0.0.1:{port}{path}", "protocol": ERAS[era]}}


@asynccontextmanager
async def hosted(
    tmp_path: Path,
    front: str,
    host: Host | None,
    *,
    mode: str = "legacy",
    upstream: str = "stdio",
    era: str = "legacy",
) -> AsyncIterator[Client]:
    """An SDK host (with `host`'s callbacks, or none) on a router in front of `asking`."""
    options: dict[str, Any] = {"mode": mode, **(host.callbacks() if host else {})}
    async with upstream_entry(upstream, era) as servers:
        if front == "stdio":
            async with Client(router_parameters(write_config(tmp_path, servers)), **options) as c:
                yield c
            return
        async with http_front(config(servers)) as http:
            with anyio.fail_after(30):
                await until_indexed(http.state)
            if front == "sse":  # the legacy HTTP+SSE front, handshake revisions only
                async with Client(sse_client(http.sse), **options) as client:
                    yield client
                return
            async with streamable_client(http.mcp, **options) as client:
                yield client


@pytest.mark.parametrize(
    ("upstream", "era"),
    [
        ("stdio", "legacy"),
        ("stdio", "modern"),
        ("streamable-http", "legacy"),
        ("streamable-http", "modern"),
        ("sse", "legacy"),
    ],
)
@pytest.mark.parametrize("front", ["stdio", "http", "sse"])
async def test_sampling_reaches_the_host_and_its_answer_the_upstream(
    tmp_path: Path, front: str, upstream: str, era: str
) -> None:
    host = Host()
    with anyio.fail_after(60):
        async with hosted(tmp_path, front, host, upstream=upstream, era=era) as client:
            direct = await client.call_tool("asking__ask_model", {"prompt": "hello"})
            routed = await client.call_tool(
                "call_tool", {"name": "asking__ask_model", "arguments": {"prompt": "again"}}
            )

    assert first_text(direct) == "host-model: echo hello"
    assert first_text(routed) == "host-model: echo again"
    assert host.sampled == ["hello", "again"]


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_elicitation_reaches_the_host_and_its_answer_the_upstream(
    tmp_path: Path, front: str, era: str
) -> None:
    host = Host()
    with anyio.fail_after(60):
        async with hosted(tmp_path, front, host, era=era) as client:
            accepted = await client.call_tool("asking__ask_user", {"question": "Colour?"})
            host.elicit_action = "decline"
            declined = await client.call_tool("asking__ask_user", {"question": "Again?"})

    assert first_text(accepted) == "accept: blue"
    assert first_text(declined) == "decline"
    assert host.elicited == ["Colour?", "Again?"]


@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_url_elicitation_reaches_the_host(tmp_path: Path, front: str) -> None:
    host = Host()
    with anyio.fail_after(60):
        async with hosted(tmp_path, front, host) as client:
            url = await client.call_tool("asking__ask_url", {"url": "https://example.com/x"})

    assert first_text(url) == "accept"
    assert host.elicited == ["Sign in, please"]


@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_the_hosts_roots_and_their_changes_reach_the_upstream(
    tmp_path: Path, front: str
) -> None:
    """`roots/list_changed` exists up to 2025-11-25 only: the upstream speaks that. Asked
    during a call, the upstream gets the caller's roots. Asked on its own after the change,
    it gets them from the one host on stdio; over HTTP from no one (`router.server.calls.relay`):
    the test waits for that refusal in the router's log, with no call in flight meanwhile."""
    host = Host()
    refusal = "roots/list from 'asking' arrived outside any call"
    with anyio.fail_after(60):
        async with hosted(tmp_path, front, host) as client:
            first = await client.call_tool("asking__roots", {})
            before = int(first_text(await client.call_tool("asking__roots_changes", {})))
            host.roots = [*ROOTS, types.Root(uri=FileUrl("file:///work/other"))]
            with logged("router.server.calls.relay", refusal) as refused:
                await client.session.send_notification(types.RootsListChangedNotification())
                if front == "http":
                    with anyio.fail_after(10):
                        await refused.wait()
            after = await client.call_tool("asking__roots_changes", {"at_least": before + 1})
            heard = await client.call_tool("asking__roots_heard", {})  # asked outside a call
            second = await client.call_tool("asking__roots", {})

    assert first_text(first) == "file:///work/project"
    assert int(first_text(after)) == before + 1
    assert first_text(second) == "file:///work/project\nfile:///work/other"
    if front == "stdio":
        assert first_text(heard) == first_text(second)
    else:
        assert first_text(heard).startswith(f"error -32600: mcp-router: {refusal}, and over HTTP")


@pytest.mark.parametrize("era", ["legacy", "modern"])
async def test_a_host_without_the_capabilities_gets_the_upstream_a_clear_error(
    tmp_path: Path, era: str
) -> None:
    """On a handshake-era upstream connection the upstream asks and hears the router's
    refusal; its tool fails with it, and the host sees the failure (as the upstream reports
    it: here the SDK's JSON-RPC error). On 2026-07-28 the request itself carries the host's
    capabilities, so the upstream refuses as it would directly: -32021, naming the one
    missing (the router never claims what the host did not declare)."""
    with anyio.fail_after(60):
        async with hosted(tmp_path, "stdio", None, era=era) as client:
            for tool, arguments, capability in (
                ("asking__ask_model", {"prompt": "hello"}, "sampling"),
                ("asking__ask_user", {"question": "Colour?"}, "elicitation"),
                ("asking__roots", {}, "roots"),
            ):
                with pytest.raises(MCPError) as refused:
                    await client.call_tool(tool, arguments)
                if era == "legacy":
                    assert refused.value.message.startswith(
                        f"mcp-router: the client did not declare the {capability} capability"
                    ), refused.value.message
                else:
                    assert refused.value.code == types.MISSING_REQUIRED_CLIENT_CAPABILITY, (
                        refused.value.message
                    )
                    assert capability in refused.value.message


@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_a_stateless_host_answers_a_stateless_upstreams_questions(
    tmp_path: Path, front: str
) -> None:
    """Both on 2026-07-28: the upstream's `InputRequiredResult` passes through the router to
    the host, whose retry (answers and the upstream's request state) goes back to it."""
    host = Host()
    with anyio.fail_after(60):
        async with hosted(tmp_path, front, host, mode="auto", era="modern") as client:
            assert client.protocol_version == "2026-07-28"
            sampled = await client.call_tool("asking__ask_model", {"prompt": "hello"})
            elicited = await client.call_tool(
                "call_tool", {"name": "asking__ask_user", "arguments": {"question": "Colour?"}}
            )
            rooted = await client.call_tool("asking__roots", {})

    assert first_text(sampled) == "host-model: echo hello"
    assert first_text(elicited) == "accept: blue"
    assert first_text(rooted) == "file:///work/project"
    assert host.sampled == ["hello"] and host.elicited == ["Colour?"]


@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_a_prompts_question_reaches_a_stateless_host_and_its_retry_the_upstream(
    tmp_path: Path, front: str
) -> None:
    """`prompts/get` and `resources/read` between two 2026-07-28 ends: the upstream's
    `InputRequiredResult` passes through to the host as it is, and the retry's answers and
    request state go back, as for `tools/call`."""
    host = Host()
    with anyio.fail_after(60):
        async with hosted(tmp_path, front, host, mode="auto", era="modern") as client:
            assert client.protocol_version == "2026-07-28"
            prompt = await client.get_prompt("asking__greeting", {})
            read = await client.read_resource("asking://secret/door")

    content = prompt.messages[0].content
    assert isinstance(content, types.TextContent)
    assert content.text == "Write a warm greeting for blue."
    first = read.contents[0]
    assert isinstance(first, types.TextResourceContents)
    assert first.text == "the door secret, for blue"
    assert host.elicited == ["Whose greeting?", "Password?"]


@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_a_stateless_host_answers_a_mid_call_request_by_retrying(
    tmp_path: Path, front: str
) -> None:
    """A 2026-07-28 host has no channel for a request that an upstream on 2025-11-25 sends
    mid-call: the router holds the call open and asks the host with an `InputRequiredResult`
    (`router.server.calls.held_calls`); the host's retry answers the upstream."""
    host = Host()
    with anyio.fail_after(60):
        async with hosted(tmp_path, front, host, mode="auto") as client:
            assert client.protocol_version == "2026-07-28"
            result = await client.call_tool("asking__ask_url", {"url": "https://example.com"})

    assert first_text(result) == "accept"
    assert host.elicited == ["Sign in, please"]


@pytest.mark.parametrize(
    ("upstream", "era", "tied"),
    [("stdio", "legacy", False), ("streamable-http", "legacy", True), ("stdio", "modern", True)],
)
async def test_requests_go_to_the_calling_session_and_never_to_another(
    upstream: str, era: str, tied: bool
) -> None:
    """Two HTTP sessions: while A's call waits on A's user, B's call asks for sampling.
    - Tied: the request comes on B's call's own stream (streamable HTTP) or in its result
      (2026-07-28), so B answers it.
    - Not tied: an upstream on 2025-11-25 over stdio sends requests that carry no sign of
      the call they belong to. No one can tell whose it is, so B's call fails.
    Either way A is never asked."""
    host_a, host_b = Host(), Host()
    host_a.hold_elicitation = True
    b_said: list[str] = []
    with anyio.fail_after(60):
        async with (
            upstream_entry(upstream, era) as servers,
            http_front(config(servers)) as http,
        ):
            await until_indexed(http.state)
            async with (
                streamable_client(http.mcp, mode="legacy", **host_a.callbacks()) as a,
                streamable_client(http.mcp, mode="legacy", **host_b.callbacks()) as b,
            ):
                answers: dict[str, str] = {}

                async def ask_a() -> None:
                    result = await a.call_tool("asking__ask_user", {"question": "Colour?"})
                    answers["a"] = first_text(result)

                async with anyio.create_task_group() as group:
                    group.start_soon(ask_a)
                    await host_a.elicitation_started.wait()
                    try:
                        result = await b.call_tool("asking__ask_model", {"prompt": "mine"})
                        b_said.append(first_text(result))
                    except MCPError as refused:
                        b_said.append(refused.message)
                    host_a.release.set()
                alone = await b.call_tool("asking__ask_model", {"prompt": "now"})

    if tied:
        assert b_said == ["host-model: echo mine"]
        assert host_b.sampled == ["mine", "now"]
    else:
        assert "calls from 2 clients are in flight" in b_said[0]
        assert host_b.sampled == ["now"]
    assert answers["a"] == "accept: blue"
    assert host_a.elicited == ["Colour?"] and host_a.sampled == []
    assert first_text(alone) == "host-model: echo now"


@pytest.mark.parametrize("era", ["legacy", "modern"])
@pytest.mark.parametrize("front", ["stdio", "http"])
async def test_an_upstreams_log_messages_reach_the_calling_host_at_its_level(
    tmp_path: Path, front: str, era: str
) -> None:
    host = Host()
    with anyio.fail_after(60):
        async with hosted(tmp_path, front, host, era=era) as client:
            await client.call_tool("asking__say", {"text": "one"})
            everything = list(host.logged)
            host.logged.clear()
            with pytest.warns(MCPDeprecationWarning):  # logging/setLevel ends at 2026-07-28
                await client.set_logging_level("warning")
            await client.call_tool("asking__say", {"text": "two"})

    assert everything == [("info", "info: one"), ("warning", "warning: one")]
    assert host.logged == [("warning", "warning: two")]
