"""Code mode's MCP face: `search_tools` and `execute`, and the runs that pause for the host."""
