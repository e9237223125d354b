"""An upstream on the mcp SDK whose writes take as long as their caller lets them, for the
tests of calls a client cancels or abandons: it says what ran to the end and what was cut.

Usage: `slow.py LOG`. Tools: `write(key)` appends `started KEY` to LOG, reports progress 0
(so a client knows the call reached the upstream), then waits until it is cancelled, and
appends `cancelled KEY`; `settled()` waits (at most 30 s) until every write that started
has ended, then answers the lines written to LOG. Each line is flushed before anything else happens.
"""

import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("slow")
LOG = Path(sys.argv[1])
_running = 0
_lines: list[str] = []
_ended: list[anyio.Event] = []  # made in the event loop, on first use


def _log(line: str) -> None:
    _lines.append(line)
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\n")


@app.tool()
async def write(key: str, ctx: Context) -> str:
    """Write a record under `key` (slowly: until the caller gives up)."""
    global _running
    _running += 1
    _log(f"started {key}")
    try:
        await ctx.report_progress(0.0, 1.0, "writing")
        await anyio.sleep_forever()
    finally:
        _log(f"cancelled {key}")
        _running -= 1
        if _ended:
            _ended.pop().set()
    return "written"  # never reached


@app.tool()
async def settled() -> str:
    """Wait until no write runs, then answer every line of the log."""
    with anyio.fail_after(30):
        while _running:
            _ended.append(anyio.Event())
            await _ended[-1].wait()
    return "\n".join(_lines)


if __name__ == "__main__":
    app.run()
