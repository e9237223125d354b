"""An upstream on the mcp SDK whose tools ask the client mid-call through the session API, the
way the SDK's everything-server and most hand-written servers do: `ctx.session.create_message`
and `ctx.elicit`. On a 2026-07-28 connection such a server has no channel to ask on; on a
handshake-era one the questions go out on the call's stream.

Tools: `summarize(text)` samples and answers with what the model said; `pick_colour()`
elicits a form with one string field `colour`; `declared()` names the client capabilities
its request came with. `python session_asking.py` serves stdio;
`python session_asking.py streamable-http PORT` serves HTTP on 127.0.0.1:PORT at `/mcp`.
"""

import sys

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

app = MCPServer("session-asking")


class Colour(BaseModel):
    colour: str


@app.tool()
async def summarize(text: str, ctx: Context) -> str:
    """Summarize a text in one sentence, using the client's model."""
    try:
        result = await ctx.session.create_message(
            messages=[
                types.SamplingMessage(
                    role="user", content=types.TextContent(text=f"Summarize: {text}")
                )
            ],
            max_tokens=100,
        )
    except (MCPError, RuntimeError) as exc:
        return f"could not sample: {exc}"
    content = result.content
    said = content.text if isinstance(content, types.TextContent) else str(content)
    return f"model said: {said}"


@app.tool()
async def pick_colour(ctx: Context) -> str:
    """Ask the user for their favourite colour."""
    try:
        answer = await ctx.elicit("Which colour?", schema=Colour)
    except (MCPError, RuntimeError) as exc:
        return f"could not ask: {exc}"
    if answer.action == "accept":
        return f"the user picked {answer.data.colour}"
    return f"the user chose to {answer.action}"


@app.tool()
async def declared(ctx: Context) -> str:
    """Which client capabilities this request came with (sampling, elicitation, roots)."""
    capabilities = ctx.request_context.session.client_capabilities
    if capabilities is None:
        return "none"
    dumped = capabilities.model_dump(exclude_none=True)
    return ",".join(sorted(key for key in ("sampling", "elicitation", "roots") if key in dumped))


if __name__ == "__main__":
    if len(sys.argv) == 3:
        app.run("streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        app.run()
