"""Servers from the official MCP registry: its `server.json` in every published version
(`document`), the `mcpServers` entry made from one (`entries`) and the `${VAR}`
placeholders that entry reads (`placeholders`), the registry's REST API (`api`), and
installing a package into the cache folder (`installing`)."""
