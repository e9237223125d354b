"""An upstream on the mcp SDK whose jobs end when they are told to, for the tests of calls run
as tasks: it says which jobs ran to the end and which were cut.

Usage: `gated.py LOG`. Tools: `job(key)` appends `started KEY` to LOG and waits until
`release(key)` is called (then appends `released KEY` and answers `done KEY`) or until it is
cancelled (then appends `cancelled KEY`); `release(key)` lets that job end; `big(size)`
answers `size` characters; `broken()` fails as a tool (an `isError` result). Each line is
flushed before anything else happens.
"""

import sys
from pathlib import Path

import anyio
from mcp.server.mcpserver import MCPServer

app = MCPServer("gated")
LOG = Path(sys.argv[1])
_gates: dict[str, anyio.Event] = {}


def _log(line: str) -> None:
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\n")


def _gate(key: str) -> anyio.Event:
    return _gates.setdefault(key, anyio.Event())


@app.tool()
async def job(key: str) -> str:
    """Run the job `key` until it is released."""
    _log(f"started {key}")
    try:
        await _gate(key).wait()
    except anyio.get_cancelled_exc_class():
        _log(f"cancelled {key}")
        raise
    _log(f"released {key}")
    return f"done {key}"


@app.tool()
async def release(key: str) -> str:
    """Let the job `key` end."""
    _gate(key).set()
    return f"released {key}"


@app.tool()
async def big(size: int) -> str:
    """A result of `size` characters."""
    return "x" * size


@app.tool()
async def broken() -> str:
    """Fail, as a tool."""
    raise ValueError("the job broke")


if __name__ == "__main__":
    app.run()
