"""The commands that write a router config from what is elsewhere: other hosts' configs
(`import_config`, `mcp-router import`) and the MCP registry (`add`, `mcp-router add`)."""
