"""How an authorization URL reaches a person, and how its redirect comes back.

`BrowserSignIn` is `mcp-router auth login`: it opens the URL with Python's `webbrowser` (so the
standard `BROWSER` variable picks the program; `--no-browser` prints it instead) and takes the
redirect on a loopback listener. `NoSignIn` is a router serving with nobody to ask: the first
redirect ends the connection attempt with `SignInNeeded`, naming the command that fixes it.
"""

from __future__ import annotations

import logging
import webbrowser
from collections.abc import Callable
from typing import Protocol

import anyio
import anyio.to_thread
from mcp.shared.auth import AuthorizationCodeResult

from router.errors import SignInNeeded
from router.upstream.auth.callback import LoopbackCallback

logger = logging.getLogger(__name__)

SIGN_IN_TIMEOUT = 300.0
"""Seconds a person has to finish signing in once the URL is shown."""


class SignIn(Protocol):
    """The two callbacks of the SDK's authorization-code flow."""

    async def redirect(self, authorization_url: str) -> None: ...

    async def callback(self) -> AuthorizationCodeResult: ...


class NoSignIn:
    """Serving with nobody who can sign in: say so, with the command that fixes it."""

    def __init__(self, upstream: str, hint: str) -> None:
        self.upstream = upstream
        self.hint = hint

    async def redirect(self, authorization_url: str) -> None:
        raise SignInNeeded(self.upstream, self.hint)

    async def callback(self) -> AuthorizationCodeResult:
        raise SignInNeeded(self.upstream, self.hint)


class BrowserSignIn:
    """A person at this machine signs in in a browser; the redirect comes to `callback`."""

    def __init__(
        self,
        upstream: str,
        listener: LoopbackCallback,
        *,
        open_browser: bool,
        show: Callable[[str], None],
    ) -> None:
        """`show` tells the person what to open when no browser was opened (the command
        prints it); the URL carries no secret, PKCE keeps the verifier here."""
        self.upstream = upstream
        self._listener = listener
        self._open_browser = open_browser
        self._show = show

    async def redirect(self, authorization_url: str) -> None:
        opened = False
        if self._open_browser:
            opened = await anyio.to_thread.run_sync(webbrowser.open, authorization_url)
        if not opened:
            self._show(f"Open this URL to sign in to {self.upstream}:\n{authorization_url}")
        else:
            logger.info("opened the browser to sign in to %s", self.upstream)

    async def callback(self) -> AuthorizationCodeResult:
        with anyio.fail_after(SIGN_IN_TIMEOUT):
            return await self._listener.result()
