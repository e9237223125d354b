"""The SDK internals the router relies on (`router.sdk.internals`) still exist and behave.

Each failure names the private thing an SDK upgrade removed, so the fix starts there.
"""

from __future__ import annotations

import contextvars
import importlib
import inspect
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.shared._context_streams import create_context_streams
from mcp.shared.message import SessionMessage

from router.sdk import internals as sdk_internals
from router.sdk.read_stream import ReadStreamWrapper

PRIVATE_NAMES = [
    ("mcp.shared._stream_protocols", "ReadStream"),
    ("mcp.shared._stream_protocols", "WriteStream"),
    ("mcp.client._transport", "TransportStreams"),
]


@pytest.mark.parametrize(("module", "name"), PRIVATE_NAMES)
def test_private_sdk_names_exist(module: str, name: str) -> None:
    try:
        found = hasattr(importlib.import_module(module), name)
    except ImportError:
        found = False
    if not found:
        pytest.fail(f"SDK internal gone: {module}.{name} (see router/sdk/internals.py, item 1)")


@pytest.mark.parametrize("module", ["mcp.shared.jsonrpc_dispatcher", "mcp.server.runner"])
def test_sdk_dispatch_still_reads_last_context(module: str) -> None:
    # If the SDK renamed the attribute, wrappers would forward a name nobody reads and
    # handlers would run without their sender's contextvars, with no error anywhere.
    source = inspect.getsource(importlib.import_module(module))
    if f'"{sdk_internals.LAST_CONTEXT}"' not in source:
        pytest.fail(
            f"SDK internal gone: {module} no longer reads a read stream's "
            f"`{sdk_internals.LAST_CONTEXT}` (see router/sdk/internals.py, item 2)"
        )


async def test_a_wrapped_read_stream_forwards_the_senders_context() -> None:
    marker: contextvars.ContextVar[str] = contextvars.ContextVar("marker", default="unset")
    send, receive = create_context_streams[SessionMessage | Exception](1)
    wrapped = ReadStreamWrapper(receive)
    message = SessionMessage(types.JSONRPCNotification(jsonrpc="2.0", method="ping"))

    async def send_marked() -> None:
        marker.set("sender")
        await send.send(message)

    with anyio.fail_after(5):
        async with send, wrapped, anyio.create_task_group() as tg:
            tg.start_soon(send_marked)
            assert await wrapped.receive() is message
    sender_context = wrapped.last_context
    assert isinstance(sender_context, contextvars.Context), (
        "SDK internal changed: context streams no longer expose `last_context`"
    )
    assert sender_context.run(marker.get) == "sender"


async def test_connection_of_is_one_object_per_connected_client() -> None:
    seen: list[Connection] = []

    async def call_tool(
        ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        seen.append(sdk_internals.connection_of(ctx.session))
        return types.CallToolResult(content=[])

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[types.Tool(name="probe", input_schema={"type": "object"})]
        )

    server: Server[Any] = Server("probe", on_call_tool=call_tool, on_list_tools=list_tools)
    with anyio.fail_after(10):
        async with Client(server, mode="legacy") as first:
            await first.call_tool("probe", {})
            await first.call_tool("probe", {})
        async with Client(server, mode="legacy") as second:
            await second.call_tool("probe", {})
    assert all(isinstance(c, Connection) for c in seen)
    assert seen[0] is seen[1], "two requests of one client must share one Connection"
    assert seen[2] is not seen[0], "another client must get its own Connection"


def test_connection_of_fails_loudly_without_the_private_attribute() -> None:
    class NoConnection:
        pass

    with pytest.raises(sdk_internals.SdkInternalMissing, match=r"ServerSession\._connection"):
        sdk_internals.connection_of(NoConnection())  # type: ignore[arg-type]


def test_open_session_count_reads_the_session_managers_table() -> None:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    manager = StreamableHTTPSessionManager(Server("probe"))
    assert sdk_internals.open_session_count(manager) == 0  # counting live ones: test_http_front


def test_a_client_session_still_stamps_each_request_through_one_function() -> None:
    """`with_envelope_rewrite` wraps `ClientSession._stamp` (item 5): a session built on a
    pair of streams has it, and a wrapped one runs the rewrite after the SDK's stamp."""
    from mcp.client.session import ClientSession

    send, receive = anyio.create_memory_object_stream[Any](1)
    session = ClientSession(receive, send)
    seen: list[dict[str, Any]] = []
    sdk_internals.with_envelope_rewrite(session, seen.append)
    session._stamp({"method": "tools/list", "params": {}}, {})
    assert seen == [{"method": "tools/list", "params": {}}]
    with pytest.raises(sdk_internals.SdkInternalMissing, match=r"ClientSession\._stamp"):
        sdk_internals.with_envelope_rewrite(object(), seen.append)
    send.close()
    receive.close()


async def test_an_oauth_provider_still_loads_tokens_in_initialize() -> None:
    """`restore_expiry_on_load` (item 6): a loaded token gets an expiry the provider checks,
    so an expired stored token is refreshed rather than sent."""
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
    from pydantic import AnyUrl

    class Stored:
        async def get_tokens(self) -> OAuthToken:
            return OAuthToken(access_token="a", token_type="Bearer", expires_in=0)

        async def set_tokens(self, tokens: OAuthToken) -> None: ...

        async def get_client_info(self) -> OAuthClientInformationFull | None:
            return None

        async def set_client_info(self, client_info: OAuthClientInformationFull) -> None: ...

    metadata = OAuthClientMetadata(redirect_uris=[AnyUrl("http://127.0.0.1:1/callback")])
    provider = OAuthClientProvider("https://example.com/mcp", metadata, Stored())
    sdk_internals.restore_expiry_on_load(provider)
    await provider._initialize()
    assert provider.context.token_expiry_time is not None
    with pytest.raises(sdk_internals.SdkInternalMissing, match=r"_initialize"):
        sdk_internals.restore_expiry_on_load(object())
    fresh = OAuthToken(access_token="b", token_type="Bearer", expires_in=3600)
    sdk_internals.adopt_tokens(provider, fresh)  # item 8: another connection's sign-in
    assert provider.context.current_tokens == fresh and provider.context.is_token_valid()
    with pytest.raises(sdk_internals.SdkInternalMissing, match=r"current_tokens"):
        sdk_internals.adopt_tokens(object(), fresh)


async def test_a_session_manager_still_admits_and_discards_sessions_through_two_methods() -> None:
    """`hook_sessions` (item 7): each session the manager opens gets the store `opened`
    made for it (its transport stores there: the priming event and the answer), a refused
    admission is the manager's 503, and a DELETE reaches `closed`."""
    import httpx2
    from mcp.server.streamable_http import EventCallback, EventStore
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

    class Recording(EventStore):
        def __init__(self) -> None:
            self.streams: list[str] = []

        async def store_event(self, stream_id: str, message: Any) -> str:
            self.streams.append(stream_id)
            return f"{len(self.streams)}"

        async def replay_events_after(self, last_event_id: str, send: EventCallback) -> None:
            return None

    stores: dict[str, Recording] = {}
    closed: list[str] = []
    admitting = [True]
    manager = StreamableHTTPSessionManager(Server("probe"))
    sdk_internals.hook_sessions(
        manager,
        admits=lambda: admitting[0],
        opened=lambda session_id: stores.setdefault(session_id, Recording()),
        closed=closed.append,
    )
    initialize = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-11-25",
            "capabilities": {},
            "clientInfo": {"name": "probe", "version": "0"},
        },
    }
    accept = {"accept": "application/json, text/event-stream"}
    transport = httpx2.ASGITransport(app=manager.handle_request)
    with anyio.fail_after(10):
        async with manager.run(), httpx2.AsyncClient(transport=transport) as http:
            opened = await http.post("http://probe/mcp", json=initialize, headers=accept)
            session_id = opened.headers["mcp-session-id"]
            version = {"mcp-protocol-version": "2025-11-25", "mcp-session-id": session_id}
            ended = await http.delete("http://probe/mcp", headers={**accept, **version})
            admitting[0] = False
            refused = await http.post("http://probe/mcp", json=initialize, headers=accept)
    assert opened.status_code == 200 and list(stores) == [session_id]
    assert stores[session_id].streams == ["7", "7"], "the session's transport must store here"
    assert ended.status_code == 200 and closed[0] == session_id
    assert refused.status_code == 503 and len(stores) == 1
    with pytest.raises(ValueError, match="without an event_store"):
        sdk_internals.hook_sessions(
            StreamableHTTPSessionManager(Server("probe"), event_store=Recording()),
            admits=lambda: True,
            opened=lambda _: Recording(),
            closed=closed.append,
        )
    with pytest.raises(sdk_internals.SdkInternalMissing, match=r"_admit_session"):
        sdk_internals.hook_sessions(
            object(),  # type: ignore[arg-type]
            admits=lambda: True,
            opened=lambda _: Recording(),
            closed=closed.append,
        )
