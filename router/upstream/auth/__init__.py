"""Signing in to OAuth-protected upstreams (MCP authorization, client side).

The protocol is the SDK's (`mcp.client.auth`: discovery, registration, PKCE, refresh, step-up,
`iss` checks, client credentials); the router adds what is around it: where the tokens live
(`storage.py`), which provider an entry gets and where its tokens may go (`providers.py`), how
an authorization URL reaches a person and the redirect comes back (`signin.py`,
`callback.py`), and what `mcp-router auth status` reports (`status.py`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from router.config import RemoteServer, RouterConfig, StdioServer
from router.embedding.cache import default_cache_dir
from router.store.records import Records

if TYPE_CHECKING:
    from router.upstream.auth.upstreams import UpstreamAuth


def remote_auth(
    config: RouterConfig, name: str, server: StdioServer | RemoteServer, records: Records | None
) -> UpstreamAuth | None:
    """How the upstream `name` of `config` signs in: a remote one's `UpstreamAuth` (this
    package's modules and the SDK's OAuth client load with the first), a local one's None.
    `records`: where the credentials live (the shared store's; None: the cache folder's)."""
    if not isinstance(server, RemoteServer):
        return None
    from router.upstream.auth.upstreams import UpstreamAuth, login_hint

    cache_dir = config.router.cache_dir or default_cache_dir()
    return UpstreamAuth(name, server, cache_dir, login_hint(name, config.source), records)
