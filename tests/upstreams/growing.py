"""An upstream on the mcp 2.3 SDK whose `grow` tool adds a tool and announces the change to
every client it has, as a server serving both eras must: on `subscriptions/listen`
(2026-07-28), and as `notifications/tools/list_changed` on a handshake-era session."""

from mcp.server.mcpserver import Context, MCPServer
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

app = MCPServer("growing")


def grown() -> str:
    """A tool that exists only after `grow` ran."""
    return "grown"


@app.tool()
async def grow(ctx: Context) -> str:
    """Add the `grown` tool and tell subscribers the tool list changed."""
    app.add_tool(grown)
    await ctx.notify_tools_changed()
    session = ctx.request_context.session
    if session.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        await session.send_tool_list_changed()
    return "added"


if __name__ == "__main__":
    app.run()
