"""The server that the MCP conformance suite's server scenarios expect, on the SDK's low-level
`Server`, over streamable HTTP on loopback.

No registry package ships one: the suite (npm `@modelcontextprotocol/conformance`) describes
it in each scenario's requirements, naming the tools (`test_simple_text`, ...,
`json_schema_2020_12_tool`, `test_reconnection`), resources (`test://static-text`,
`test://static-binary`, `test://template/{id}/data`, `test://watched-resource`) and prompts
(`test_simple_prompt`, ...) its scenarios call and the answers they check. An event store
makes POST streams resumable, as the SSE polling scenario (SEP-1699) asks. Subscriptions to
`test://watched-resource` are kept (`resources/subscribe` up to 2025-11-25,
`subscriptions/listen` on 2026-07-28), and one tool beyond the suite's,
`touch_watched_resource`, tells its subscribers that it changed, for the router's own tests.

    python -m tests.conformance.fixture_server [--port 0]

prints `http://127.0.0.1:PORT/mcp` on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import json
import socket
import sys
import weakref
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import mcp_types as types
import uvicorn
from mcp.server.connection import Connection
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.server.subscriptions import InMemorySubscriptionBus, ListenHandler, ResourceUpdated
from mcp.shared.exceptions import MCPError
from mcp.shared.message import ServerMessageMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from router.sdk.internals import connection_of  # the SDK's one seam for a request's connection

Context = ServerRequestContext[Any, Any]
ToolResult = types.CallToolResult | types.InputRequiredResult
Handler = Callable[[Context, types.CallToolRequestParams], Awaitable[ToolResult]]
_Answer = TypeVar("_Answer", types.CreateMessageResult, types.ElicitResult)
ASKED = "ask"
"""The key of the one input request an asking tool sends on 2026-07-28."""

PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0g"
    "AAAABJRU5ErkJggg=="
)
WAV_EMPTY = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


def _text(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=error)


def _object(**properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(properties)}


# -- tools -------------------------------------------------------------------------------


async def simple_text(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    return _text("This is a simple text response for testing.")


async def image(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    return types.CallToolResult(content=[types.ImageContent(data=PNG_1X1, mime_type="image/png")])


async def audio(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    return types.CallToolResult(content=[types.AudioContent(data=WAV_EMPTY, mime_type="audio/wav")])


def _embedded(uri: str, mime_type: str, text: str) -> types.EmbeddedResource:
    contents = types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    return types.EmbeddedResource(resource=contents)


async def embedded_resource(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    resource = _embedded(
        "test://embedded-resource", "text/plain", "This is an embedded resource content."
    )
    return types.CallToolResult(content=[resource])


async def mixed_content(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    data = json.dumps({"test": "data", "value": 123})
    return types.CallToolResult(
        content=[
            types.TextContent(text="Multiple content types test:"),
            types.ImageContent(data=PNG_1X1, mime_type="image/png"),
            _embedded("test://mixed-content-resource", "application/json", data),
        ]
    )


async def with_logging(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    for step, message in enumerate(
        ("Tool execution started", "Tool processing data", "Tool execution completed")
    ):
        if step:
            await anyio.sleep(0.05)
        params = types.LoggingMessageNotificationParams(level="info", data=message)
        await ctx.session.send_notification(
            types.LoggingMessageNotification(params=params), related_request_id=ctx.request_id
        )
    return _text("Tool with logging executed successfully")


async def with_progress(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await anyio.sleep(0.05)
        await ctx.session.report_progress(progress, 100, f"Completed step {progress} of 100")
    return _text("Tool with progress executed successfully")


async def error_handling(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    return _text("This tool intentionally returns an error for testing", error=True)


async def _ask(
    ctx: Context,
    call: types.CallToolRequestParams,
    request: types.CreateMessageRequest | types.ElicitRequest,
    answer_type: type[_Answer],
) -> _Answer | types.InputRequiredResult:
    """Ask the client: mid-call up to 2025-11-25; on 2026-07-28 in an `InputRequiredResult`,
    answered when the client calls again with `inputResponses`."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        related = ServerMessageMetadata(related_request_id=ctx.request_id)
        return await ctx.session.send_request(request, answer_type, metadata=related)
    answer = (call.input_responses or {}).get(ASKED)
    if answer is None:
        return types.InputRequiredResult(input_requests={ASKED: request})
    if isinstance(answer, answer_type):
        return answer
    return answer_type.model_validate(answer.model_dump(by_alias=True, exclude_none=True))


async def sampling(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    if not ctx.session.check_client_capability(
        types.ClientCapabilities(sampling=types.SamplingCapability())
    ):
        return _text("the client does not support sampling", error=True)
    prompt = str((call.arguments or {}).get("prompt", ""))
    message = types.SamplingMessage(role="user", content=types.TextContent(text=prompt))
    request = types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=100)
    )
    result = await _ask(ctx, call, request, types.CreateMessageResult)
    if isinstance(result, types.InputRequiredResult):
        return result
    content = result.content
    answer = content.text if isinstance(content, types.TextContent) else "No response"
    return _text(f"LLM response: {answer}")


async def _elicit(
    ctx: Context,
    call: types.CallToolRequestParams,
    prefix: str,
    message: str,
    schema: dict[str, Any],
) -> ToolResult:
    if not ctx.session.check_client_capability(
        types.ClientCapabilities(elicitation=types.ElicitationCapability())
    ):
        return _text("the client does not support elicitation", error=True)
    request = types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )
    result = await _ask(ctx, call, request, types.ElicitResult)
    if isinstance(result, types.InputRequiredResult):
        return result
    content = json.dumps(result.content or {})
    return _text(f"{prefix}: action={result.action}, content={content}")


async def elicitation(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    schema = _object(
        username={"type": "string", "description": "User's response"},
        email={"type": "string", "description": "User's email address"},
    )
    message = str((call.arguments or {}).get("message", ""))
    return await _elicit(ctx, call, "User response", message, schema)


SEP1034_SCHEMA = _object(
    name={"type": "string", "description": "User name", "default": "John Doe"},
    age={"type": "integer", "description": "User age", "default": 30},
    score={"type": "number", "description": "User score", "default": 95.5},
    status={
        "type": "string",
        "description": "User status",
        "enum": ["active", "inactive", "pending"],
        "default": "active",
    },
    verified={"type": "boolean", "description": "Verification status", "default": True},
)


async def elicitation_defaults(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    message = "Please review your information"
    return await _elicit(ctx, call, "Elicitation completed", message, SEP1034_SCHEMA)


def _titled(*pairs: tuple[str, str]) -> list[dict[str, str]]:
    return [{"const": value, "title": title} for value, title in pairs]


SEP1330_SCHEMA = _object(
    untitledSingle={"type": "string", "enum": ["option1", "option2", "option3"]},
    titledSingle={
        "type": "string",
        "oneOf": _titled(("value1", "First Option"), ("value2", "Second Option")),
    },
    legacyEnum={
        "type": "string",
        "enum": ["opt1", "opt2", "opt3"],
        "enumNames": ["Option One", "Option Two", "Option Three"],
    },
    untitledMulti={
        "type": "array",
        "items": {"type": "string", "enum": ["option1", "option2", "option3"]},
    },
    titledMulti={
        "type": "array",
        "items": {"anyOf": _titled(("value1", "First Choice"), ("value2", "Second Choice"))},
    },
)


async def elicitation_enums(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    message = "Please choose your options"
    return await _elicit(ctx, call, "Elicitation completed", message, SEP1330_SCHEMA)


async def json_schema_tool(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    return _text(f"Received: {json.dumps(call.arguments or {}, sort_keys=True)}")


JSON_SCHEMA_2020_12 = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


async def reconnection(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    """Closes the POST stream mid-call; the client resumes it with `Last-Event-ID`."""
    if ctx.close_sse_stream is not None:
        await ctx.close_sse_stream()
    await anyio.sleep(0.2)
    return _text("Reconnection test completed")


WATCHED = "test://watched-resource"


class Watchers:
    """Who is subscribed to the watched resource: handshake connections, and the listen
    streams of 2026-07-28 clients (through the bus)."""

    def __init__(self) -> None:
        self.bus = InMemorySubscriptionBus()
        self.connections: weakref.WeakSet[Connection] = weakref.WeakSet()
        self.version = 0

    async def touch(self) -> int:
        """The resource changed: tell every subscriber; how many connections were told."""
        self.version += 1
        connections = list(self.connections)
        for connection in connections:
            await connection.notify("notifications/resources/updated", {"uri": WATCHED})
        await self.bus.publish(ResourceUpdated(uri=WATCHED))
        return len(connections)


async def touch_watched(ctx: Context, call: types.CallToolRequestParams) -> ToolResult:
    watchers: Watchers = ctx.lifespan_context
    told = await watchers.touch()
    return _text(f"{WATCHED} is now version {watchers.version}; told {told} subscribers")


@dataclass(frozen=True)
class FixtureTool:
    description: str
    input_schema: dict[str, Any]
    handler: Handler


TOOLS: dict[str, FixtureTool] = {
    "test_simple_text": FixtureTool("Returns simple text content", NO_ARGUMENTS, simple_text),
    "test_image_content": FixtureTool("Returns a 1x1 PNG image", NO_ARGUMENTS, image),
    "test_audio_content": FixtureTool("Returns a short WAV clip", NO_ARGUMENTS, audio),
    "test_embedded_resource": FixtureTool(
        "Returns an embedded text resource", NO_ARGUMENTS, embedded_resource
    ),
    "test_multiple_content_types": FixtureTool(
        "Returns text, an image and an embedded resource", NO_ARGUMENTS, mixed_content
    ),
    "test_tool_with_logging": FixtureTool(
        "Sends three log messages while it runs", NO_ARGUMENTS, with_logging
    ),
    "test_tool_with_progress": FixtureTool(
        "Reports progress 0, 50 and 100 of 100", NO_ARGUMENTS, with_progress
    ),
    "test_error_handling": FixtureTool("Always returns an error", NO_ARGUMENTS, error_handling),
    "test_sampling": FixtureTool(
        "Asks the client's LLM to answer a prompt",
        _object(prompt={"type": "string", "description": "The prompt to send to the LLM"}),
        sampling,
    ),
    "test_elicitation": FixtureTool(
        "Asks the user for a username and an email address",
        _object(message={"type": "string", "description": "The message to show the user"}),
        elicitation,
    ),
    "test_elicitation_sep1034_defaults": FixtureTool(
        "Elicits a form whose fields all have defaults (SEP-1034)",
        NO_ARGUMENTS,
        elicitation_defaults,
    ),
    "test_elicitation_sep1330_enums": FixtureTool(
        "Elicits a form with every enum shape (SEP-1330)", NO_ARGUMENTS, elicitation_enums
    ),
    "json_schema_2020_12_tool": FixtureTool(
        "Tool with JSON Schema 2020-12 features", JSON_SCHEMA_2020_12, json_schema_tool
    ),
    "test_reconnection": FixtureTool(
        "Closes its response stream mid-call (SSE polling, SEP-1699)", NO_ARGUMENTS, reconnection
    ),
    "touch_watched_resource": FixtureTool(
        f"Not one of the suite's: tells the subscribers of {WATCHED} that it changed",
        NO_ARGUMENTS,
        touch_watched,
    ),
}


async def list_tools(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=tool.description, input_schema=tool.input_schema)
            for name, tool in TOOLS.items()
        ]
    )


async def call_tool(ctx: Context, params: types.CallToolRequestParams) -> ToolResult:
    tool = TOOLS.get(params.name)
    if tool is None:
        return _text(f"unknown tool {params.name!r}", error=True)
    return await tool.handler(ctx, params)


# -- resources and prompts ---------------------------------------------------------------

RESOURCES = [
    types.Resource(
        uri="test://static-text",
        name="static-text",
        description="A static text resource",
        mime_type="text/plain",
    ),
    types.Resource(
        uri="test://static-binary",
        name="static-binary",
        description="A static binary resource (a PNG image)",
        mime_type="image/png",
    ),
    types.Resource(
        uri="test://watched-resource",
        name="watched-resource",
        description="A resource that can be subscribed to",
        mime_type="text/plain",
    ),
]
TEMPLATE_PREFIX, TEMPLATE_SUFFIX = "test://template/", "/data"


async def list_resources(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourcesResult:
    return types.ListResourcesResult(resources=RESOURCES)


async def list_templates(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListResourceTemplatesResult:
    template = types.ResourceTemplate(
        uri_template=f"{TEMPLATE_PREFIX}{{id}}{TEMPLATE_SUFFIX}",
        name="template",
        description="A resource template with one parameter",
        mime_type="application/json",
    )
    return types.ListResourceTemplatesResult(resource_templates=[template])


def _contents(uri: str) -> types.TextResourceContents | types.BlobResourceContents | None:
    if uri == "test://static-text":
        text = "This is the content of the static text resource."
        return types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)
    if uri == "test://static-binary":
        return types.BlobResourceContents(uri=uri, mime_type="image/png", blob=PNG_1X1)
    if uri == "test://watched-resource":
        text = "Watched resource content"
        return types.TextResourceContents(uri=uri, mime_type="text/plain", text=text)
    if uri.startswith(TEMPLATE_PREFIX) and uri.endswith(TEMPLATE_SUFFIX):
        item = uri[len(TEMPLATE_PREFIX) : -len(TEMPLATE_SUFFIX)]
        data = json.dumps({"id": item, "templateTest": True, "data": f"Data for ID: {item}"})
        return types.TextResourceContents(uri=uri, mime_type="application/json", text=data)
    return None


async def read_resource(
    ctx: Context, params: types.ReadResourceRequestParams
) -> types.ReadResourceResult:
    contents = _contents(str(params.uri))
    if contents is None:
        raise MCPError(types.INVALID_PARAMS, f"unknown resource {params.uri}")
    return types.ReadResourceResult(contents=[contents])


async def subscribe(ctx: Context, params: types.SubscribeRequestParams) -> types.EmptyResult:
    if str(params.uri) == WATCHED:
        ctx.lifespan_context.connections.add(connection_of(ctx.session))
    return types.EmptyResult()


async def unsubscribe(ctx: Context, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    if str(params.uri) == WATCHED:
        ctx.lifespan_context.connections.discard(connection_of(ctx.session))
    return types.EmptyResult()


def _argument(name: str, description: str) -> types.PromptArgument:
    return types.PromptArgument(name=name, description=description, required=True)


PROMPTS = [
    types.Prompt(name="test_simple_prompt", description="A prompt without arguments"),
    types.Prompt(
        name="test_prompt_with_arguments",
        description="A prompt with two required arguments",
        arguments=[_argument("arg1", "First test argument"), _argument("arg2", "Second one")],
    ),
    types.Prompt(
        name="test_prompt_with_embedded_resource",
        description="A prompt that embeds a resource",
        arguments=[_argument("resourceUri", "URI of the resource to embed")],
    ),
    types.Prompt(name="test_prompt_with_image", description="A prompt with an image"),
]


async def list_prompts(
    ctx: Context, params: types.PaginatedRequestParams | None
) -> types.ListPromptsResult:
    return types.ListPromptsResult(prompts=PROMPTS)


def _user(content: types.ContentBlock) -> types.PromptMessage:
    return types.PromptMessage(role="user", content=content)


async def get_prompt(ctx: Context, params: types.GetPromptRequestParams) -> types.GetPromptResult:
    arguments = params.arguments or {}
    if params.name == "test_simple_prompt":
        messages = [_user(types.TextContent(text="This is a simple prompt for testing."))]
    elif params.name == "test_prompt_with_arguments":
        text = (
            f"Prompt with arguments: arg1='{arguments.get('arg1', '')}', "
            f"arg2='{arguments.get('arg2', '')}'"
        )
        messages = [_user(types.TextContent(text=text))]
    elif params.name == "test_prompt_with_embedded_resource":
        uri = arguments.get("resourceUri", "test://example-resource")
        messages = [
            _user(_embedded(uri, "text/plain", "Embedded resource content for testing.")),
            _user(types.TextContent(text="Please process the embedded resource above.")),
        ]
    elif params.name == "test_prompt_with_image":
        messages = [
            _user(types.ImageContent(data=PNG_1X1, mime_type="image/png")),
            _user(types.TextContent(text="Please analyze the image above.")),
        ]
    else:
        raise MCPError(types.INVALID_PARAMS, f"unknown prompt {params.name!r}")
    return types.GetPromptResult(messages=messages)


# -- utilities ---------------------------------------------------------------------------


async def set_level(ctx: Context, params: types.SetLevelRequestParams) -> types.EmptyResult:
    return types.EmptyResult()


async def complete(ctx: Context, params: types.CompleteRequestParams) -> types.CompleteResult:
    """Suggestions for `test_prompt_with_arguments`'s arguments, by prefix."""
    words = ["paris", "park", "party"]
    values = [word for word in words if word.startswith(params.argument.value)]
    return types.CompleteResult(
        completion=types.Completion(values=values, total=len(values), has_more=False)
    )


class MemoryEventStore(EventStore):
    """Every event of every stream, in memory: enough to resume a stream mid-call."""

    def __init__(self) -> None:
        self._events: list[tuple[str, str, types.JSONRPCMessage | None]] = []

    async def store_event(self, stream_id: str, message: types.JSONRPCMessage | None) -> str:
        event_id = str(len(self._events) + 1)
        self._events.append((stream_id, event_id, message))
        return event_id

    async def replay_events_after(
        self, last_event_id: str, send_callback: EventCallback
    ) -> str | None:
        stream = next((s for s, e, _ in self._events if e == last_event_id), None)
        if stream is None:
            return None
        for stream_id, event_id, message in self._events[int(last_event_id) :]:
            if stream_id == stream and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream


def build_server() -> Server[Watchers]:
    watchers = Watchers()

    @asynccontextmanager
    async def lifespan(_: Server[Watchers]) -> AsyncIterator[Watchers]:
        yield watchers

    server: Server[Watchers] = Server(
        "mcp-router-conformance-fixture",
        version="1.0.0",
        lifespan=lifespan,
        on_subscriptions_listen=ListenHandler(watchers.bus),
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_list_resource_templates=list_templates,
        on_read_resource=read_resource,
        on_subscribe_resource=subscribe,
        on_unsubscribe_resource=unsubscribe,
        on_list_prompts=list_prompts,
        on_get_prompt=get_prompt,
        on_completion=complete,
    )
    # Registered by method: the constructor's `on_set_logging_level` warns that logging
    # is deprecated at 2026-07-28, and the suite tests the handshake revisions.
    server.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
    return server


async def serve(port: int) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    app = build_server().streamable_http_app(
        event_store=MemoryEventStore(), retry_interval=100, host="127.0.0.1"
    )
    config = uvicorn.Config(app, log_level="warning", ws="none", timeout_graceful_shutdown=1)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    await uvicorn.Server(config).serve([sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    options = parser.parse_args(argv)
    try:
        anyio.run(serve, options.port)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
