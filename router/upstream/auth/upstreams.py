"""What one remote upstream's connections sign in with while the router serves."""

from __future__ import annotations

from pathlib import Path

import httpx2

from router.config import RemoteServer
from router.upstream.auth.callback import free_port
from router.upstream.auth.providers import (
    Redirect,
    stored_redirect_port,
    token_files,
    upstream_auth,
)
from router.upstream.auth.signin import NoSignIn, SignIn


def login_hint(name: str, config_file: Path | None) -> str:
    """The command that signs `name` in, as a person would type it."""
    where = str(config_file) if config_file is not None else "FILE"
    return f"run `mcp-router auth login {name} --config {where}`"


class UpstreamAuth:
    """A fresh provider per connection attempt, so tokens another process stored since
    (`mcp-router auth login`) are read; a redirect with nobody to ask is `SignInNeeded`."""

    def __init__(self, name: str, server: RemoteServer, cache_dir: Path, hint: str) -> None:
        self.name = name
        self.server = server
        self.files = token_files(cache_dir, server)
        self.hint = hint

    async def for_connection(self, sign_in: SignIn | None = None) -> httpx2.Auth | None:
        oauth = self.server.oauth
        port = (
            (oauth.callback_port if oauth else None)
            or await stored_redirect_port(self.files)
            or free_port()
        )
        return upstream_auth(
            self.server, self.files, sign_in or NoSignIn(self.name, self.hint), Redirect(port)
        )
