"""What one remote upstream's connections sign in with while the router serves."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path
from typing import Protocol

import anyio
import httpx2

from router.config import RemoteServer
from router.store.records import Records
from router.upstream.auth.providers import (
    Redirect,
    callback_port,
    token_files,
    upstream_auth,
)
from router.upstream.auth.signin import HostSignIn, NoSignIn, SignIn
from router.upstream.connection.host_requests import HostRequests


def login_hint(name: str, config_file: Path | None) -> str:
    """The command that signs `name` in, as a person would type it."""
    where = str(config_file) if config_file is not None else "FILE"
    return f"run `mcp-router auth login {name} --config {where}`"


class ConnectionAuth(Protocol):
    """What an upstream's connection attempts sign in with."""

    hint: str
    """What a person does to sign in, for the error a call gets when no one has."""

    async def for_connection(
        self,
        host: HostRequests | None,
        connected: Callable[[], bool],
        extend: Callable[[float], None],
    ) -> httpx2.Auth | None:
        """The attempt's auth flow; `extend(seconds)` gives the attempt a sign-in's time."""
        ...


class UpstreamAuth:
    """A fresh provider per connection attempt, so tokens another process stored since
    (`mcp-router auth login`) are read. A sign-in is asked of the host where one can show a
    URL (`HostSignIn`); with nobody to ask, the attempt ends with `SignInNeeded`."""

    def __init__(
        self,
        name: str,
        server: RemoteServer,
        cache_dir: Path,
        hint: str,
        records: Records | None = None,
    ) -> None:
        """`records`: where the credentials live (the shared store's; None: the cache
        folder's file)."""
        self.name = name
        self.server = server
        self.files = token_files(cache_dir, server, records)
        self.hint = hint
        self._last_prompt = [-math.inf]
        self._gate = anyio.Lock()  # one sign-in at a time: the primary's and its twin's

    async def for_connection(
        self,
        host: HostRequests | None,
        connected: Callable[[], bool],
        extend: Callable[[float], None],
    ) -> httpx2.Auth | None:
        port = await callback_port(self.server, self.files)
        sign_in: SignIn = (
            HostSignIn(self.name, host, port, self.hint, self._last_prompt, connected)
            if host is not None
            else NoSignIn(self.name, self.hint)
        )
        return upstream_auth(self.server, self.files, sign_in, Redirect(port), gate=self._gate)
