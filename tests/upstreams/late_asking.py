"""An upstream on the mcp SDK that keeps working on a call after its client gives up, and asks
its question when the work is done: a server that ignores `notifications/cancelled`, as many
do. It asks out of band (stdio, a handshake-era session), so its question names no call the
router could tie it to.

Tools: `deliberate(topic)` reports progress once, then works in the server's own task group
(a cancelled or timed-out call ends its wait, not its work); the work asks the user about the
topic (a form with one string field `answer`) once `conclude` is called. `conclude()`
releases that work and answers with what its question got back: "accept: ANSWER", another
action, or "error CODE: MESSAGE"; it waits up to 10 s for the work to be there and to finish.
"""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

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


_work_groups: list[anyio.abc.TaskGroup] = []


@asynccontextmanager
async def _work_group(_: MCPServer) -> AsyncIterator[None]:
    """The server's own task group, which outlives every request."""
    async with anyio.create_task_group() as group:
        _work_groups.append(group)
        yield
        group.cancel_scope.cancel()


app = MCPServer("late-asking", lifespan=_work_group)


async def _work(session: ServerSession, topic: str) -> None:
    await _event("conclude").wait()
    try:
        # on the session's own channel: the call's is gone once its client gave up
        answer = await session.elicit_form(f"About {topic}: go on?", SCHEMA)
    except MCPError as exc:
        _outcome.append(f"error {exc.code}: {exc.message}")
    else:
        said = (answer.content or {}).get("answer")
        _outcome.append(f"{answer.action}: {said}" if said is not None else answer.action)
    _event("done").set()


@app.tool()
async def deliberate(topic: str, ctx: Context) -> str:
    """Think about a topic at length, asking the user before concluding."""
    _work_groups[0].start_soon(_work, ctx.session, topic)
    await ctx.report_progress(0, 1, "deliberating")
    await _event("done").wait()  # a cancellation ends this wait; the work goes on
    return _outcome[0]


@app.tool()
async def conclude() -> str:
    """Let the pending deliberation ask its question; answer with what it got back."""
    _event("conclude").set()
    with anyio.move_on_after(WAIT):
        await _event("done").wait()
    return _outcome[0] if _outcome else "no deliberation finished"


if __name__ == "__main__":
    app.run()
