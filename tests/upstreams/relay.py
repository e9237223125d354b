"""An upstream on the mcp SDK for what the router relays besides results: progress and
cancellation.

Tools: `echo(text)` answers the text; `steps(count)` reports progress 1..count, then answers;
`block(tag)` runs until it is cancelled and remembers that it was; `started(tag)` answers
once `block(tag)` is running; `outcome(tag)` answers "cancelled" once `block(tag)` was
cancelled, or "not cancelled" if that does not happen within 10 s.
"""

import anyio
from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("relay")
WAIT = 10.0
_started: dict[str, anyio.Event] = {}
_cancelled: dict[str, anyio.Event] = {}


def _event(events: dict[str, anyio.Event], tag: str) -> anyio.Event:
    return events.setdefault(tag, anyio.Event())


@app.tool()
async def echo(text: str) -> str:
    """Answer the text unchanged."""
    return text


@app.tool()
async def steps(count: int, ctx: Context) -> str:
    """Count from 1 to `count`, reporting each step as progress."""
    for step in range(1, count + 1):
        await ctx.report_progress(step, count, f"step {step}")
    return f"{count} steps"


@app.tool()
async def block(tag: str) -> str:
    """Run until cancelled."""
    _event(_started, tag).set()
    try:
        await anyio.sleep_forever()
    finally:
        _event(_cancelled, tag).set()
    return "unreachable"


@app.tool()
async def started(tag: str) -> str:
    """Answer once `block(tag)` is running."""
    with anyio.move_on_after(WAIT):
        await _event(_started, tag).wait()
    return "started" if _event(_started, tag).is_set() else "not started"


@app.tool()
async def outcome(tag: str) -> str:
    """Answer whether `block(tag)` was cancelled (waiting for it up to 10 s)."""
    with anyio.move_on_after(WAIT):
        await _event(_cancelled, tag).wait()
    return "cancelled" if _event(_cancelled, tag).is_set() else "not cancelled"


if __name__ == "__main__":
    app.run()
