"""An upstream on the mcp SDK that writes junk to its stderr while serving tools normally.

At start: log lines, bytes that are not UTF-8 (and a NUL), a burst of BURST_LINES lines
(several times a pipe's buffer) ending with a line that says so, and last a line left
unfinished, which the first call finishes. On every call: a line naming the call, and binary
bytes. Tools: `chat(text)` answers the text; `burst(lines)` writes that many lines to stderr
in one go, then a line saying it is done, and answers how many it wrote.
"""

import sys

from mcp.server.mcpserver import MCPServer

BURST_LINES = 10_000
err = sys.stderr.buffer


def burst(lines: int, tag: str) -> None:
    err.write(
        b"".join(
            b"chatty burst %s line %06d %s\n" % (tag.encode(), n, b"x" * 40) for n in range(lines)
        )
    )
    err.write(b"chatty burst %s done after %d lines\n" % (tag.encode(), lines))
    err.flush()


app = MCPServer("chatty")
calls = 0


@app.tool()
async def chat(text: str) -> str:
    """Answer the text, chattering on stderr."""
    global calls
    calls += 1
    if calls == 1:
        err.write(b" finished by the first call\n")
    err.write(b"chatty call %d: chat(%s)\n" % (calls, text.encode()))
    err.write(b"\xff\xfe binary \x00 junk \x1b[31m red \x1b[0m\n")
    err.flush()
    return text


@app.tool(name="burst")
async def burst_tool(lines: int) -> str:
    """Write `lines` lines to stderr at once (a log flood)."""
    burst(lines, "on call")
    return f"wrote {lines} lines"


if __name__ == "__main__":
    err.write(b"chatty: INFO starting up\nchatty: WARNING a log line\n")
    err.write(b"chatty: \x80\x81 not utf-8 \x00\n")
    burst(BURST_LINES, "at start")
    err.write(b"chatty: a line left unfinished,")
    err.flush()
    app.run()
