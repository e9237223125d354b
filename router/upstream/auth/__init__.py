"""Signing in to OAuth-protected upstreams (MCP authorization, client side).

The protocol is the SDK's (`mcp.client.auth`: discovery, registration, PKCE, refresh, step-up,
`iss` checks, client credentials); the router adds what is around it: where the tokens live
(`storage.py`), which provider an entry gets and where its tokens may go (`providers.py`), how
an authorization URL reaches a person and the redirect comes back (`signin.py`,
`callback.py`), and what `mcp-router auth status` reports (`status.py`).
"""
