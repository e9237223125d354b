"""An MCP Apps upstream on the mcp SDK (`mcp.server.apps`): a sales chart whose tool renders
the `ui://widget/app.html` app, and a tool only that app calls (`visibility: ["app"]`).
`maps.py` serves its own app under the very same URI.

`CHARTS_UI_URI` moves the chart's app to another URI: the same command, a changed tool (the
`ui` block is part of what pinning approves). The chart's text says whether the client
declared MCP Apps support, as the extension asks of a UI tool: a host without it reads text.
"""

import os

from mcp.server.apps import Apps, ResourceCsp, client_supports_apps
from mcp.server.mcpserver import Context, MCPServer

WIDGET = "ui://widget/app.html"
apps = Apps()


@apps.tool(resource_uri=os.environ.get("CHARTS_UI_URI", WIDGET))
def sales_chart(quarter: str, ctx: Context) -> str:
    """Chart the sales of a quarter."""
    if client_supports_apps(ctx):
        return f"sales chart for {quarter}: shown in the app"
    return f"sales for {quarter} as text: north 10, south 20"


@apps.tool(resource_uri=WIDGET, visibility=["app"])
def refresh_chart(quarter: str) -> str:
    """Fetch fresh figures for the chart app (the app calls this, not the model)."""
    return f"refreshed {quarter}: north 11, south 21"


apps.add_html_resource(
    WIDGET,
    "<html><body>charts app</body></html>",
    csp=ResourceCsp(connect_domains=["https://charts.example"]),
)
if os.environ.get("CHARTS_UI_URI", WIDGET) != WIDGET:
    apps.add_html_resource(os.environ["CHARTS_UI_URI"], "<html><body>moved chart</body></html>")

app = MCPServer("charts", extensions=[apps])

if __name__ == "__main__":
    app.run()
