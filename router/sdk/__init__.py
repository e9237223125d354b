"""The MCP SDK's seam outside the two edges.

Only `router/server/` (the MCP server the host talks to), `router/upstream/` (the clients
of the upstream servers) and this package import the SDK (`mcp`, `mcp_types`);
`tests/project/test_layers.py` holds every other module to it. Here live what both edges share and
what the pure core needs of the SDK as plain data:

- `internals`: every use of the SDK's private surface, each with its reason;
- `read_stream`: the base of the wrappers both edges put around a transport's read stream;
- `versions`: the protocol revisions the SDK speaks, as strings, for the config's checks.
"""
