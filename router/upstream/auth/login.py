"""Signing one upstream in from a terminal (`mcp-router auth login`): connect as the router
would, let the SDK's flow run on the server's 401, take the redirect on a loopback listener."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import anyio
from mcp import Client

from router.config import RemoteServer
from router.config.oauth import may_carry_tokens
from router.core.errors import ConfigError, UpstreamError
from router.store.records import Records
from router.upstream.auth.callback import listening
from router.upstream.auth.providers import (
    Redirect,
    callback_port,
    has_static_authorization,
    token_files,
    upstream_auth,
)
from router.upstream.auth.signin import SIGN_IN_TIMEOUT, BrowserSignIn
from router.upstream.auth.storage import StoredCredentials
from router.upstream.connection.transport import open_transport
from router.upstream.failures import describe
from router.upstream.upstream import CLIENT_INFO


async def sign_in(
    name: str,
    server: RemoteServer,
    cache_dir: Path,
    *,
    open_browser: bool,
    show: Callable[[str], None],
    connect_timeout: float,
    fresh: bool = False,
    records: Records | None = None,
) -> StoredCredentials | None:
    """Connect to `server` once, signing in if it asks; what is stored afterwards (in
    `records`, the shared store's, where given; else the cache folder's file).

    Raises:
        ConfigError: The entry cannot carry tokens (static `Authorization`, plain http
            beyond this machine).
        UpstreamError: The server or the sign-in failed (the reason, never a token).
    """
    if has_static_authorization(server):
        raise ConfigError(f"{name} sends its own Authorization header; remove it to sign in")
    if not may_carry_tokens(server.url):
        raise ConfigError(
            f"{name}'s URL is plain http beyond this machine: tokens go over https only"
        )
    files = token_files(cache_dir, server, records)
    if fresh:
        await files.forget_tokens()
    port = await callback_port(server, files)
    async with listening(port) as listener:
        flow = BrowserSignIn(name, listener, open_browser=open_browser, show=show)
        auth = upstream_auth(server, files, flow, Redirect(port))
        ended = anyio.Event()
        client = Client(
            open_transport(name, server, ended, None, auth),
            mode=server.connect_mode,
            cache=None,
            client_info=CLIENT_INFO,
        )
        try:
            with anyio.fail_after(connect_timeout + SIGN_IN_TIMEOUT):
                async with client:
                    await client.list_tools()
        except Exception as exc:
            raise UpstreamError(name, describe(exc)) from None
    return await anyio.to_thread.run_sync(files.describe)
