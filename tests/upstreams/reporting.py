"""An upstream on the mcp SDK whose long job reports progress as it goes, the way a build or
an export tool does, and one that works as long without a word."""

import anyio
from mcp.server.mcpserver import Context, MCPServer

app = MCPServer("reporting")


@app.tool()
async def long_job(seconds: float, every: float, ctx: Context) -> str:
    """Run for `seconds`, reporting progress every `every` seconds."""
    steps = max(1, int(seconds / every))
    for step in range(steps):
        await anyio.sleep(every)
        await ctx.report_progress(step + 1, steps, f"step {step + 1} of {steps}")
    return f"done after {steps} steps"


@app.tool()
async def quiet_job(seconds: float) -> str:
    """Run for `seconds` and say nothing meanwhile."""
    await anyio.sleep(seconds)
    return "done"


if __name__ == "__main__":
    app.run()
