"""The HTTP front: streamable HTTP and SSE for MCP, the REST routing API, and the guards before them."""
