"""An MCP Apps upstream on the mcp SDK (`mcp.server.apps`) whose map app lives at
`ui://widget/app.html`, the URI `charts.py` uses for its own app, with another HTML, CSP
and permissions."""

from mcp.server.apps import Apps, ResourceCsp, ResourcePermissions
from mcp.server.mcpserver import MCPServer

WIDGET = "ui://widget/app.html"
apps = Apps()


@apps.tool(resource_uri=WIDGET)
def show_map(place: str) -> str:
    """Show a place on a map."""
    return f"map of {place}"


apps.add_html_resource(
    WIDGET,
    "<html><body>maps app</body></html>",
    csp=ResourceCsp(connect_domains=["https://maps.example"]),
    permissions=ResourcePermissions(geolocation={}),
)

app = MCPServer("maps", extensions=[apps])

if __name__ == "__main__":
    app.run()
