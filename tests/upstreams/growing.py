"""An upstream on the mcp 2.3 SDK whose `grow` tool adds a tool and announces the change."""

from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("growing")


def grown() -> str:
    """A tool that exists only after `grow` ran."""
    return "grown"


@app.tool()
async def grow(ctx: Context) -> str:
    """Add the `grown` tool and tell subscribers the tool list changed."""
    app.add_tool(grown)
    await ctx.notify_tools_changed()
    return "added"


if __name__ == "__main__":
    app.run()
