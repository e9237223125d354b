"""An upstream on the mcp SDK whose tools carry annotations, for the policy tests; it keeps
a record of every call that ran, so a test can prove that a refused call never did.

Tools: `read_note(name)` (readOnlyHint), `delete_note(name)` (destructiveHint),
`reset_all()` (no annotations), `ran()` (the calls that ran, one a line).
"""

import mcp_types as types
from mcp.server.mcpserver import MCPServer

app = MCPServer("guarded")
_ran: list[str] = []


@app.tool(annotations=types.ToolAnnotations(read_only_hint=True))
async def read_note(name: str) -> str:
    """Read a note by name."""
    _ran.append(f"read_note {name}")
    return f"note {name}"


@app.tool(annotations=types.ToolAnnotations(destructive_hint=True, read_only_hint=False))
async def delete_note(name: str) -> str:
    """Delete a note by name, for good."""
    _ran.append(f"delete_note {name}")
    return f"deleted {name}"


@app.tool()
async def reset_all() -> str:
    """Reset every note."""
    _ran.append("reset_all")
    return "reset"


@app.tool()
async def ran() -> str:
    """The calls that ran so far, one a line."""
    return "\n".join(_ran)


if __name__ == "__main__":
    app.run()
