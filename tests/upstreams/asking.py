"""An upstream on the mcp SDK that asks its client things, for the relay tests: whatever it
gets back (an answer, or the error's code and message) is what the tool answers.

Tools: `ask_model(prompt)` samples (`sampling/createMessage`); `ask_user(question)` elicits
a form with one string field `answer`; `ask_url(url)` elicits in URL mode (the handshake
revisions only); `roots()` lists the client's roots; `say(text)` logs the text at info and
at warning; `roots_changes(at_least)` counts the `notifications/roots/list_changed` it got,
and `roots_heard()` gives the roots it listed on its own after the last one. The prompt
`greeting` asks the user whose greeting it is and the resources `asking://secret/{name}` a password
(forms, like `ask_user`), on 2026-07-28 as an `InputRequiredResult`.

`python asking.py` serves stdio; `python asking.py streamable-http PORT` or
`python asking.py sse PORT` serves HTTP on 127.0.0.1:PORT (`/mcp` or `/sse`).
"""

import sys
from typing import Annotated, Any

import anyio
import mcp_types as types
from mcp.server.mcpserver import (
    AcceptedElicitation,
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

app = MCPServer("asking")
WAIT = 10.0
_changes = 0
_heard: list[str] = []
_changed: list[anyio.Event] = []  # made in the event loop, on first use


def _next_change() -> anyio.Event:
    if not _changed:
        _changed.append(anyio.Event())
    return _changed[0]


class Answer(BaseModel):
    answer: str


def _error(exc: MCPError) -> str:
    return f"error {exc.code}: {exc.message}"


# The tools ask through resolvers, so the SDK asks the way the negotiated revision wants:
# a request mid-call up to 2025-11-25, an `InputRequiredResult` the client answers and
# retries with on 2026-07-28.


def _sample(prompt: str) -> Sample:
    message = types.SamplingMessage(role="user", content=types.TextContent(text=prompt))
    return Sample([message], max_tokens=50)


def _question(question: str) -> Elicit[Answer]:
    return Elicit(question, Answer)


def _roots() -> ListRoots:
    return ListRoots()


@app.tool()
async def ask_model(
    prompt: str, sampled: Annotated[types.CreateMessageResult, Resolve(_sample)]
) -> str:
    """Ask the client's model to complete the prompt."""
    content = sampled.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return f"{sampled.model}: {text}"


@app.tool()
async def ask_user(
    question: str, answer: Annotated[ElicitationResult[Answer], Resolve(_question)]
) -> str:
    """Ask the user a question (a form with one string field)."""
    if isinstance(answer, AcceptedElicitation):
        return f"accept: {answer.data.answer}"
    return answer.action


@app.tool()
async def roots(listed: Annotated[types.ListRootsResult, Resolve(_roots)]) -> str:
    """The client's roots, one URI a line."""
    return "\n".join(str(root.uri) for root in listed.roots) or "(no roots)"


@app.prompt()
async def greeting(ctx: Context) -> str | types.InputRequiredResult:
    """A greeting for someone the user names: on 2026-07-28 the prompt asks first (an
    `InputRequiredResult` with a form), then writes it from the answer of the retry."""
    answer = (ctx.input_responses or {}).get("name")
    if answer is None:
        form = types.ElicitRequestFormParams(
            message="Whose greeting?",
            requested_schema={
                "type": "object",
                "properties": {"answer": {"type": "string"}},
                "required": ["answer"],
            },
        )
        return types.InputRequiredResult(input_requests={"name": types.ElicitRequest(params=form)})
    if isinstance(answer, types.ElicitResult) and answer.action == "accept" and answer.content:
        return f"Write a warm greeting for {answer.content['answer']}."
    return "Write a greeting for nobody in particular."


@app.resource("asking://secret/{name}")
async def secret(name: str, ctx: Context) -> str | types.InputRequiredResult:
    """A note read only once the user says the password (on 2026-07-28, asked first)."""
    answer = (ctx.input_responses or {}).get("password")
    if answer is None:
        form = types.ElicitRequestFormParams(
            message="Password?",
            requested_schema={"type": "object", "properties": {"answer": {"type": "string"}}},
        )
        return types.InputRequiredResult(
            input_requests={"password": types.ElicitRequest(params=form)}
        )
    said = answer.content if isinstance(answer, types.ElicitResult) else None
    return f"the {name} secret, for {(said or {}).get('answer', 'nobody')}"


@app.tool()
async def ask_url(url: str, ctx: Context) -> str:
    """Send the user to a URL (URL-mode elicitation)."""
    try:
        result = await ctx.elicit_url("Sign in, please", url, "signin-1")
    except MCPError as exc:
        return _error(exc)
    return result.action


@app.tool()
async def say(text: str, ctx: Context) -> str:
    """Log the text at info and at warning, then answer "said"."""
    await ctx.info(f"info: {text}")
    await ctx.warning(f"warning: {text}")
    return "said"


@app.tool()
async def roots_changes(at_least: int = 0) -> str:
    """How many `notifications/roots/list_changed` this server has received, once there
    are at least `at_least` of them (waiting up to 10 s)."""
    with anyio.move_on_after(WAIT):
        while _changes < at_least:
            await _next_change().wait()
    return str(_changes)


@app.tool()
async def roots_heard() -> str:
    """The roots this server listed on its own after the last roots change (outside any
    call), one URI a line, or the error it got."""
    return _heard[0] if _heard else "(none)"


async def _on_roots_changed(ctx: Any, params: Any) -> None:
    """Ask for the roots again, as a server that watches them would, then count the change."""
    global _changes
    try:
        listed = await ctx.session.list_roots()
        _heard[:] = ["\n".join(str(root.uri) for root in listed.roots)]
    except MCPError as exc:
        _heard[:] = [_error(exc)]
    _changes += 1
    _next_change().set()
    _changed[0] = anyio.Event()


# The lowlevel server is where notification handlers go; MCPServer has no public hook for it.
app._lowlevel_server.add_notification_handler(
    "notifications/roots/list_changed", types.NotificationParams, _on_roots_changed
)


if __name__ == "__main__":
    if len(sys.argv) == 3:
        transport, port = sys.argv[1], int(sys.argv[2])
        if transport == "sse":
            app.run("sse", host="127.0.0.1", port=port)
        else:
            app.run("streamable-http", host="127.0.0.1", port=port)
    else:
        app.run()
