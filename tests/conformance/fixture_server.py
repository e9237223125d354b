"""The server that the MCP conformance suite's server scenarios expect, written the ordinary way
on the SDK's `MCPServer`, over streamable HTTP on loopback.

No registry package ships one: the suite (npm `@modelcontextprotocol/conformance`, both its
0.1.16 and its 0.2.0 line) describes it in each scenario's requirements, naming the tools,
resources and prompts its scenarios call and the answers they check. This is what a server
author would write from those requirements, the way the SDK's documentation shows (nothing
shaped to the router):

- content tools (`test_simple_text`, ..., `test_error_handling`), logging and progress, and
  `json_schema_2020_12_tool` (a hand-written 2020-12 input schema);
- tools that ask the client mid-call with the session API (`test_sampling`:
  `ctx.session.create_message`; `test_elicitation*`: `ctx.elicit`), which the handshake
  revisions (up to 2025-11-25) allow, and one that asks through a resolver
  (`test_streaming_elicitation`: `Resolve(...)` returning `Elicit`), which the SDK turns into
  a mid-call request or, on 2026-07-28, an `InputRequiredResult`;
- the SEP-2322 tools and prompt of 2026-07-28 (`test_input_required_result_*`), which return
  an `InputRequiredResult` and read `ctx.input_responses` and `ctx.request_state` on the
  retry (the SDK signs the state, so a tampered one is refused);
- capability-gated tools (`test_missing_capability` needs the client's `sampling`;
  `test_input_required_result_capabilities` asks only what the client declared),
  `test_x_mcp_header` (an `x-mcp-header` parameter, SEP-2243), `test_logging_tool` (logs,
  which a 2026-07-28 client hears only when it asks), and the list-changed hooks
  `test_trigger_tool_change` / `test_trigger_prompt_change` (SEP-2575);
- resources `test://static-text`, `test://static-binary`, `test://template/{id}/data` and
  `test://watched-resource`, the prompts `test_simple_prompt`, ..., and completions.

An event store makes POST streams resumable, as the SSE polling scenario (SEP-1699) asks.
Subscriptions to `test://watched-resource` are kept (`resources/subscribe` up to 2025-11-25,
by HTTP session; `subscriptions/listen` on 2026-07-28, the SDK's bus), and one tool beyond the
suite's, `touch_watched_resource`, tells its subscribers that it changed, for the router's own
tests. The tasks scenarios' tools (`greet`, `slow_compute`, ...) are ordinary tools
(`tests/conformance/fixture_tasks.py`): the SDK has no tasks (SEP-2663), so a call becomes a task
only through the router. Skills (SEP-2640) are not here: the SDK does not implement them.

    python -m tests.conformance.fixture_server [--port 0]

prints `http://127.0.0.1:PORT/mcp` on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import base64
import json
import socket
import sys
import warnings
from typing import Annotated, Any, Literal

import anyio
import mcp_types as types
import uvicorn
from mcp.server import ServerRequestContext
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    MCPServer,
    Resolve,
    UserMessage,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.prompts.base import Prompt
from mcp.server.session import ServerSession
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError
from pydantic import BaseModel, Field

from tests.conformance.fixture_tasks import register as register_tasks_tools

PNG_1X1 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0g"
    "AAAABJRU5ErkJggg=="
)
WAV_EMPTY = "UklGRiQAAABXQVZFZm10IBAAAAABAAEAQB8AAIA+AAACABAAZGF0YQAAAAA="
WATCHED = "test://watched-resource"


def _embedded(uri: str, mime_type: str, text: str) -> types.EmbeddedResource:
    contents = types.TextResourceContents(uri=uri, mime_type=mime_type, text=text)
    return types.EmbeddedResource(resource=contents)


app = MCPServer("mcp-router-conformance-fixture", version="1.0.0", log_level="WARNING")


# -- tools -------------------------------------------------------------------------------


@app.tool()
def test_simple_text() -> str:
    """Returns simple text content"""
    return "This is a simple text response for testing."


@app.tool()
def test_image_content() -> list[types.ImageContent]:
    """Returns a 1x1 PNG image"""
    return [types.ImageContent(data=PNG_1X1, mime_type="image/png")]


@app.tool()
def test_audio_content() -> list[types.AudioContent]:
    """Returns a short WAV clip"""
    return [types.AudioContent(data=WAV_EMPTY, mime_type="audio/wav")]


@app.tool()
def test_embedded_resource() -> list[types.EmbeddedResource]:
    """Returns an embedded text resource"""
    text = "This is an embedded resource content."
    return [_embedded("test://embedded-resource", "text/plain", text)]


@app.tool()
def test_multiple_content_types() -> list[types.ContentBlock]:
    """Returns text, an image and an embedded resource"""
    data = json.dumps({"test": "data", "value": 123})
    return [
        types.TextContent(text="Multiple content types test:"),
        types.ImageContent(data=PNG_1X1, mime_type="image/png"),
        _embedded("test://mixed-content-resource", "application/json", data),
    ]


@app.tool()
async def test_tool_with_logging(ctx: Context) -> str:
    """Sends three log messages while it runs"""
    await ctx.info("Tool execution started")
    await anyio.sleep(0.05)
    await ctx.info("Tool processing data")
    await anyio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return "Tool with logging executed successfully"


@app.tool()
async def test_tool_with_progress(ctx: Context) -> str:
    """Reports progress 0, 50 and 100 of 100"""
    for step, progress in enumerate((0, 50, 100)):
        if step:
            await anyio.sleep(0.05)
        await ctx.report_progress(progress, 100, f"Completed step {progress} of 100")
    return "Tool with progress executed successfully"


@app.tool()
def test_error_handling() -> str:
    """Always fails"""
    raise ToolError("This tool intentionally returns an error for testing")


@app.tool()
async def test_sampling(prompt: str, ctx: Context) -> str:
    """Asks the client's LLM to answer the prompt"""
    wanted = types.ClientCapabilities(sampling=types.SamplingCapability())
    if not ctx.session.check_client_capability(wanted):
        raise ToolError("the client does not support sampling")
    message = types.SamplingMessage(role="user", content=types.TextContent(text=prompt))
    # related to this call, so the request rides the call's own response stream
    result = await ctx.session.create_message(
        messages=[message], max_tokens=100, related_request_id=ctx.request_id
    )
    content = result.content
    answer = content.text if isinstance(content, types.TextContent) else "No response"
    return f"LLM response: {answer}"


async def _elicit(ctx: Context, message: str, schema: type[BaseModel], prefix: str) -> str:
    wanted = types.ClientCapabilities(elicitation=types.ElicitationCapability())
    if not ctx.session.check_client_capability(wanted):
        raise ToolError("the client does not support elicitation")
    result = await ctx.elicit(message, schema)
    content = result.data.model_dump_json() if result.action == "accept" else "{}"
    return f"{prefix}: action={result.action}, content={content}"


class UserInformation(BaseModel):
    username: str = Field(description="User's response")
    email: str = Field(description="User's email address")


@app.tool()
async def test_elicitation(message: str, ctx: Context) -> str:
    """Asks the user for a username and an email address"""
    return await _elicit(ctx, message, UserInformation, "User response")


class Defaults(BaseModel):
    """Every primitive type with a default (SEP-1034)."""

    name: str = Field(default="John Doe", description="User name")
    age: int = Field(default=30, description="User age")
    score: float = Field(default=95.5, description="User score")
    status: Literal["active", "inactive", "pending"] = Field(
        default="active", description="User status"
    )
    verified: bool = Field(default=True, description="Verification status")


@app.tool()
async def test_elicitation_sep1034_defaults(ctx: Context) -> str:
    """Elicits a form whose fields all have defaults (SEP-1034)"""
    message = "Please review your information"
    return await _elicit(ctx, message, Defaults, "Elicitation completed")


def _titled(*pairs: tuple[str, str]) -> list[Any]:
    return [{"const": value, "title": title} for value, title in pairs]


class Enums(BaseModel):
    """Every enum shape (SEP-1330)."""

    untitledSingle: Literal["option1", "option2", "option3"]
    titledSingle: str = Field(
        json_schema_extra={
            "oneOf": _titled(("value1", "First Option"), ("value2", "Second Option"))
        }
    )
    legacyEnum: str = Field(
        json_schema_extra={
            "enum": ["opt1", "opt2", "opt3"],
            "enumNames": ["Option One", "Option Two", "Option Three"],
        }
    )
    untitledMulti: list[Literal["option1", "option2", "option3"]]
    titledMulti: list[str] = Field(
        json_schema_extra={
            "items": {"anyOf": _titled(("value1", "First Choice"), ("value2", "Second Choice"))}
        }
    )


@app.tool()
async def test_elicitation_sep1330_enums(ctx: Context) -> str:
    """Elicits a form with every enum shape (SEP-1330)"""
    return await _elicit(ctx, "Please choose your options", Enums, "Elicitation completed")


# `json_schema_2020_12_tool` takes a hand-written 2020-12 schema (the scenario's own), which no
# signature renders and `MCPServer.tool()` takes no schema: it replaces the rendered one once
# the tool is registered (as the SDK's own conformance server does).

JSON_SCHEMA_2020_12: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {
            "$anchor": "addressDef",
            "type": "object",
            "properties": {"street": {"type": "string"}, "city": {"type": "string"}},
        }
    },
    "properties": {
        "name": {"type": "string"},
        "address": {"$ref": "#/$defs/address"},
        "contactMethod": {"type": "string", "enum": ["phone", "email"]},
        "phone": {"type": "string"},
        "email": {"type": "string"},
    },
    "allOf": [{"anyOf": [{"required": ["phone"]}, {"required": ["email"]}]}],
    "if": {"properties": {"contactMethod": {"const": "phone"}}, "required": ["contactMethod"]},
    "then": {"required": ["phone"]},
    "else": {"required": ["email"]},
    "additionalProperties": False,
}


@app.tool()
def json_schema_2020_12_tool(
    name: str | None = None,
    address: dict[str, str] | None = None,
    contactMethod: str | None = None,
    phone: str | None = None,
    email: str | None = None,
) -> str:
    """Tool with JSON Schema 2020-12 features"""
    given = {"name": name, "address": address, "contactMethod": contactMethod}
    given |= {"phone": phone, "email": email}
    arguments = {key: value for key, value in given.items() if value is not None}
    return f"Received: {json.dumps(arguments, sort_keys=True)}"


_schema_tool = app._tool_manager.get_tool("json_schema_2020_12_tool")
assert _schema_tool is not None
_schema_tool.parameters = JSON_SCHEMA_2020_12


class Go(BaseModel):
    go: bool = Field(description="Carry on?")


def _ask_to_go_on() -> Elicit[Go]:
    return Elicit("Carry on?", Go)


@app.tool()
async def test_streaming_elicitation(
    answer: Annotated[ElicitationResult[Go], Resolve(_ask_to_go_on)],
) -> str:
    """Asks the user whether to carry on, through a resolver: mid-call up to 2025-11-25, in an
    InputRequiredResult on 2026-07-28"""
    if isinstance(answer, AcceptedElicitation):
        return "carrying on" if answer.data.go else "stopping"
    return f"the user chose {answer.action}"


@app.tool()
async def test_logging_tool(ctx: Context) -> str:
    """Logs a line at info (which a 2026-07-28 client hears only when it asks, by logLevel)"""
    await ctx.info("test_logging_tool ran")
    return "logged"


@app.tool()
async def test_reconnection(ctx: Context) -> str:
    """Closes its response stream mid-call; the client resumes it (SSE polling, SEP-1699)"""
    await ctx.info("Before disconnect")
    await ctx.close_sse_stream()
    await anyio.sleep(0.2)
    await ctx.info("After reconnect")
    return "Reconnection test completed"


@app.tool()
def test_x_mcp_header(
    region: Annotated[
        str,
        Field(
            description="Sent in the Mcp-Param-Region header as well",
            json_schema_extra={"x-mcp-header": "Region"},
        ),
    ] = "nowhere",
) -> str:
    """Echoes a parameter that is mirrored into a custom header (SEP-2243)"""
    return f"region={region}"


@app.tool()
async def test_missing_capability(ctx: Context) -> str:
    """Needs the client's sampling capability, and says so if it is missing"""
    capabilities = ctx.client_capabilities
    if capabilities is None or capabilities.sampling is None:
        raise MCPError(
            code=types.MISSING_REQUIRED_CLIENT_CAPABILITY,
            message="This tool needs the client's sampling capability",
            data={"requiredCapabilities": {"sampling": {}}},
        )
    return "The client can sample."


def _dynamic() -> str:
    """Added and removed again by the change triggers"""
    return "dynamic"


@app.tool()
async def test_trigger_tool_change(ctx: Context) -> str:
    """Changes the tool list and says so to subscription streams (SEP-2575)"""
    app.add_tool(_dynamic, name="test_dynamic_tool")
    app.remove_tool("test_dynamic_tool")
    await ctx.notify_tools_changed()
    return "tool list changed"


@app.tool()
async def test_trigger_prompt_change(ctx: Context) -> str:
    """Changes the prompt list and says so to subscription streams (SEP-2575)"""
    app.add_prompt(Prompt.from_function(_dynamic, name="test_dynamic_prompt"))
    app.remove_prompt("test_dynamic_prompt")
    await ctx.notify_prompts_changed()
    return "prompt list changed"


# -- 2026-07-28: InputRequiredResult (SEP-2322) ------------------------------------------


def _form(message: str, **properties: str) -> types.ElicitRequest:
    schema = {
        "type": "object",
        "properties": {name: {"type": kind} for name, kind in properties.items()},
        "required": list(properties),
    }
    return types.ElicitRequest(
        params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
    )


def _sample(text: str, max_tokens: int) -> types.CreateMessageRequest:
    message = types.SamplingMessage(role="user", content=types.TextContent(text=text))
    return types.CreateMessageRequest(
        params=types.CreateMessageRequestParams(messages=[message], max_tokens=max_tokens)
    )


def _answered(ctx: Context, key: str, field: str) -> str | None:
    """The `field` of an accepted form answer to `key`, or None."""
    answer = (ctx.input_responses or {}).get(key)
    if isinstance(answer, types.ElicitResult) and answer.action == "accept" and answer.content:
        value = answer.content.get(field)
        return None if value is None else str(value)
    return None


@app.tool()
async def test_input_required_result_elicitation(ctx: Context) -> str | types.InputRequiredResult:
    """Asks the user's name, then greets them"""
    if "user_name" not in (ctx.input_responses or {}):
        return types.InputRequiredResult(
            input_requests={"user_name": _form("What is your name?", name="string")}
        )
    return f"Hello, {_answered(ctx, 'user_name', 'name') or 'stranger'}!"


@app.tool()
async def test_input_required_result_sampling(ctx: Context) -> str | types.InputRequiredResult:
    """Asks the client's model the capital of France"""
    answer = (ctx.input_responses or {}).get("capital_question")
    if answer is None:
        question = _sample("What is the capital of France?", 100)
        return types.InputRequiredResult(input_requests={"capital_question": question})
    content = answer.content if isinstance(answer, types.CreateMessageResult) else None
    return f"Model said: {content.text if isinstance(content, types.TextContent) else '?'}"


@app.tool()
async def test_input_required_result_list_roots(ctx: Context) -> str | types.InputRequiredResult:
    """Asks the client's roots, then counts them"""
    answer = (ctx.input_responses or {}).get("client_roots")
    if answer is None:
        return types.InputRequiredResult(input_requests={"client_roots": types.ListRootsRequest()})
    roots = answer.roots if isinstance(answer, types.ListRootsResult) else []
    return f"Client roots: {', '.join(str(root.uri) for root in roots) or '(none)'}"


CONFIRM_STATE = "awaiting-confirmation"


@app.tool()
async def test_input_required_result_request_state(
    ctx: Context,
) -> str | types.InputRequiredResult:
    """Asks for a confirmation, keeping where it is in requestState"""
    if "confirm" in (ctx.input_responses or {}) and ctx.request_state == CONFIRM_STATE:
        return "state-ok: confirmation received"
    return types.InputRequiredResult(
        input_requests={"confirm": _form("Please confirm", ok="boolean")},
        request_state=CONFIRM_STATE,
    )


@app.tool()
async def test_input_required_result_multiple_inputs(
    ctx: Context,
) -> str | types.InputRequiredResult:
    """Asks a form, a sample and the roots at once"""
    wanted = {"user_name", "greeting", "client_roots"}
    if wanted <= set(ctx.input_responses or {}):
        return "All inputs received."
    return types.InputRequiredResult(
        input_requests={
            "user_name": _form("What is your name?", name="string"),
            "greeting": _sample("Generate a greeting", 50),
            "client_roots": types.ListRootsRequest(),
        },
        request_state="multiple-inputs",
    )


@app.tool()
async def test_input_required_result_multi_round(ctx: Context) -> str | types.InputRequiredResult:
    """Asks a name, then a colour, carrying the name in requestState"""
    state = json.loads(ctx.request_state) if ctx.request_state else {"round": 0}
    if state.get("round") == 2 and "step2" in (ctx.input_responses or {}):
        return f"{state.get('name')} likes {_answered(ctx, 'step2', 'color')}."
    if state.get("round") == 1 and "step1" in (ctx.input_responses or {}):
        return types.InputRequiredResult(
            input_requests={"step2": _form("Step 2: What is your favorite color?", color="string")},
            request_state=json.dumps({"round": 2, "name": _answered(ctx, "step1", "name")}),
        )
    return types.InputRequiredResult(  # the first round, or an answer out of turn: start over
        input_requests={"step1": _form("Step 1: What is your name?", name="string")},
        request_state=json.dumps({"round": 1}),
    )


@app.tool()
async def test_input_required_result_tampered_state(
    ctx: Context,
) -> str | types.InputRequiredResult:
    """Asks for a confirmation; the SDK refuses a requestState it did not sign"""
    if ctx.request_state is None:
        return types.InputRequiredResult(
            input_requests={"confirm": _form("Please confirm", ok="boolean")},
            request_state="round-1",
        )
    return f"state-ok: {ctx.request_state}"


@app.tool()
async def test_input_required_result_capabilities(ctx: Context) -> types.InputRequiredResult:
    """Asks only what the client declared it can answer"""
    declared = ctx.client_capabilities or types.ClientCapabilities()
    requests: dict[str, types.InputRequest] = {}
    if declared.sampling is not None:
        requests["sample"] = _sample("Say hello", 50)
    if declared.elicitation is not None:
        requests["ask"] = _form("What is your name?", name="string")
    if declared.roots is not None:
        requests["roots"] = types.ListRootsRequest()
    return types.InputRequiredResult(input_requests=requests, request_state="capability-gated")


# -- the watched resource ----------------------------------------------------------------

_subscribers: dict[str | None, ServerSession] = {}
"""Handshake-era subscribers to the watched resource, by HTTP session (its `Mcp-Session-Id`):
the session of their `resources/subscribe`, whose connection hears of changes."""
_version = 0


def _http_session(ctx: ServerRequestContext[Any, Any]) -> str | None:
    headers = getattr(ctx.request, "headers", None)
    return None if headers is None else headers.get("mcp-session-id")


async def subscribe(
    ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
) -> types.EmptyResult:
    if str(params.uri) == WATCHED:
        _subscribers[_http_session(ctx)] = ctx.session
    return types.EmptyResult()


async def unsubscribe(
    ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
) -> types.EmptyResult:
    if str(params.uri) == WATCHED:
        _subscribers.pop(_http_session(ctx), None)
    return types.EmptyResult()


@app.tool()
async def touch_watched_resource(ctx: Context) -> str:
    """Not one of the suite's: tells the subscribers of test://watched-resource that it changed"""
    global _version
    _version += 1
    told = 0
    for key, session in list(_subscribers.items()):
        try:
            await session.send_resource_updated(WATCHED)
            told += 1
        except Exception:  # the client went away: forget it
            _subscribers.pop(key, None)
    await ctx.notify_resource_updated(WATCHED)  # subscriptions/listen streams (2026-07-28)
    return f"{WATCHED} is now version {_version}; told {told} subscribers"


# -- resources ---------------------------------------------------------------------------


@app.resource("test://static-text", name="static-text", mime_type="text/plain")
def static_text() -> str:
    """A static text resource"""
    return "This is the content of the static text resource."


@app.resource("test://static-binary", name="static-binary", mime_type="image/png")
def static_binary() -> bytes:
    """A static binary resource (a PNG image)"""
    return base64.b64decode(PNG_1X1)


@app.resource(WATCHED, name="watched-resource", mime_type="text/plain")
def watched_resource() -> str:
    """A resource that can be subscribed to"""
    return "Watched resource content"


@app.resource("test://template/{id}/data", name="template", mime_type="application/json")
def template(id: str) -> str:
    """A resource template with one parameter"""
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


# -- prompts -----------------------------------------------------------------------------


@app.prompt()
def test_simple_prompt() -> list[UserMessage]:
    """A prompt without arguments"""
    return [UserMessage("This is a simple prompt for testing.")]


@app.prompt()
def test_prompt_with_arguments(arg1: str, arg2: str) -> list[UserMessage]:
    """A prompt with two required arguments"""
    return [UserMessage(f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'")]


@app.prompt()
def test_prompt_with_embedded_resource(resourceUri: str) -> list[UserMessage]:
    """A prompt that embeds a resource"""
    text = "Embedded resource content for testing."
    return [
        UserMessage(_embedded(resourceUri, "text/plain", text)),
        UserMessage("Please process the embedded resource above."),
    ]


@app.prompt()
def test_prompt_with_image() -> list[UserMessage]:
    """A prompt with an image"""
    return [
        UserMessage(types.ImageContent(data=PNG_1X1, mime_type="image/png")),
        UserMessage("Please analyze the image above."),
    ]


@app.prompt()
async def test_input_required_result_prompt(
    ctx: Context,
) -> list[UserMessage] | types.InputRequiredResult:
    """A prompt that asks the user for its context first (2026-07-28)"""
    if "user_context" not in (ctx.input_responses or {}):
        question = _form("What context should the prompt use?", context="string")
        return types.InputRequiredResult(input_requests={"user_context": question})
    context = _answered(ctx, "user_context", "context") or "none given"
    return [UserMessage(f"Use the following context: {context}")]


# -- utilities ---------------------------------------------------------------------------


async def complete(
    ref: types.PromptReference | types.ResourceTemplateReference,
    argument: types.CompletionArgument,
    context: types.CompletionContext | None,
) -> types.Completion:
    """Suggestions for `test_prompt_with_arguments`'s arguments, by prefix."""
    values = [word for word in ("paris", "park", "party") if word.startswith(argument.value)]
    return types.Completion(values=values, total=len(values), has_more=False)


app.completion()(complete)  # type: ignore[no-untyped-call]  # the SDK leaves it unannotated


async def set_level(
    ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
) -> types.EmptyResult:
    return types.EmptyResult()


# MCPServer has no public hooks for these (the SDK's own conformance server registers them
# the same way): logging/setLevel, and resources/subscribe, which up to 2025-11-25 say that
# a client wants to hear of a resource's changes.
_lowlevel = app._lowlevel_server
_lowlevel.add_request_handler("logging/setLevel", types.SetLevelRequestParams, set_level)
_lowlevel.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
_lowlevel.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


# the tasks scenarios' tools, after the others: the header scenario calls the first listed tool
# with no arguments
register_tasks_tools(app)


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


async def serve(port: int) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    http = app.streamable_http_app(
        event_store=MemoryEventStore(), retry_interval=100, host="127.0.0.1"
    )
    config = uvicorn.Config(http, log_level="warning", ws="none", timeout_graceful_shutdown=1)
    print(f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", flush=True)
    await uvicorn.Server(config).serve([sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    options = parser.parse_args(argv)
    # logging, sampling and elicitation are deprecated at 2026-07-28; the suite tests the
    # handshake revisions too, so they stay, without a warning on every call
    warnings.simplefilter("ignore", MCPDeprecationWarning)
    try:
        anyio.run(serve, options.port)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
