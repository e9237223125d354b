"""The MCP conformance suite against a fixture server, directly and through the router."""
