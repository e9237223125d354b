"""A remote MCP server every user shares (no sign-in) whose work goes on after the call that
started it, and then logs and asks out of band: on the session's own channel, naming no
call, as a server that reports back later does. Written the ordinary SDK way, so it offers
2026-07-28 as well as the handshake revisions (it can ask only on a handshake-era session).

Tools: `deliberate(topic)` starts the work in the server's own task group and answers at
once; the work waits until `conclude` is called (by anyone, on any session), then logs
"deliberated TOPIC" (info) and asks the session it was started on (a form with one string
field `answer`). `conclude()` releases that work and answers with what its question got
back: "accept: ANSWER", another action, or "error CODE: MESSAGE"; it waits up to 10 s for
the work to finish.

    python shared_asking.py streamable-http PORT

serves HTTP on 127.0.0.1:PORT at `/mcp`.
"""

import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

import anyio
import anyio.abc
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

WAIT = 10.0
SCHEMA = {"type": "object", "properties": {"answer": {"type": "string"}}, "required": ["answer"]}
_events: dict[str, anyio.Event] = {}  # made in the event loop, on first use
_outcome: list[str] = []


def _event(name: str) -> anyio.Event:
    return _events.setdefault(name, anyio.Event())


@asynccontextmanager
async def _work_group(_: MCPServer) -> AsyncIterator[anyio.abc.TaskGroup]:
    """A task group that outlives every request."""
    async with anyio.create_task_group() as group:
        yield group
        group.cancel_scope.cancel()


app = MCPServer("shared-asking", lifespan=_work_group)


async def _work(session: ServerSession, topic: str) -> None:
    await _event("conclude").wait()
    try:
        await session.send_log_message("info", f"deliberated {topic}")  # no call named
        answer = await session.elicit_form(f"About {topic}: go on?", SCHEMA)
    except MCPError as exc:
        _outcome.append(f"error {exc.code}: {exc.message}")
    else:
        said = (answer.content or {}).get("answer")
        _outcome.append(f"{answer.action}: {said}" if said is not None else answer.action)
    _event("done").set()


@app.tool()
async def deliberate(topic: str, ctx: Context) -> str:
    """Think about a topic at length, and ask the user before concluding."""
    group = cast(anyio.abc.TaskGroup, ctx.request_context.lifespan_context)
    group.start_soon(_work, ctx.session, topic)
    return "deliberating"


@app.tool()
async def conclude() -> str:
    """Let the pending deliberation ask its question; answer with what it got back."""
    _event("conclude").set()
    with anyio.move_on_after(WAIT):
        await _event("done").wait()
    return _outcome[0] if _outcome else "no deliberation finished"


if __name__ == "__main__":
    if len(sys.argv) == 3:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
