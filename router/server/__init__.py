"""The MCP server: the lowlevel SDK server, its handlers, the live index and the stdio front."""
