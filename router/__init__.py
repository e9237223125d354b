"""mcp-router: one MCP server in front of many, listing only the tools a query needs."""

__version__ = "0.1.0"
