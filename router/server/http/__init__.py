"""The HTTP front: streamable HTTP and SSE for MCP, the REST routing API and their guards."""
