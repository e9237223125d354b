"""The routed MCP server: one catalog and one retriever behind every surface."""
