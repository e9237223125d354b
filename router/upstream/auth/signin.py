"""How an authorization URL reaches a person, and how its redirect comes back.

`BrowserSignIn` is `mcp-router auth login`: it opens the URL with Python's `webbrowser` (so the
standard `BROWSER` variable picks the program; `--no-browser` prints it instead) and takes the
redirect on a loopback listener. `HostSignIn` is a serving router: it asks the host to open
the URL (URL-mode elicitation, what the specification made it for) and takes the redirect the
same way, so the upstream comes up without a restart. With no host that can, or one that
declines, the attempt ends with `SignInNeeded`, naming the command that fixes it (`NoSignIn`).
"""

from __future__ import annotations

import logging
import secrets
import webbrowser
from collections.abc import Callable
from typing import Protocol

import anyio
import anyio.to_thread
import mcp_types as types
from mcp.shared.auth import AuthorizationCodeResult

from router.core.errors import SignInNeeded
from router.upstream.auth.callback import LoopbackCallback, listening, state_of
from router.upstream.connection.host_requests import HostRequests

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
        self._state: str | None = None

    async def redirect(self, authorization_url: str) -> None:
        self._state = _expected_state(self.upstream, authorization_url)
        self._listener.expect(self._state)
        opened = False
        if self._open_browser:
            opened = await anyio.to_thread.run_sync(webbrowser.open, authorization_url)
        if not opened:
            self._show(f"Open this URL to sign in to {self.upstream}:\n{authorization_url}")
        else:
            logger.info("opened the browser to sign in to %s", self.upstream)

    async def callback(self) -> AuthorizationCodeResult:
        if self._state is None:
            raise SignInNeeded(self.upstream, "no authorization URL was shown")
        with anyio.fail_after(SIGN_IN_TIMEOUT):
            return await self._listener.result(self._state)


def _expected_state(upstream: str, authorization_url: str) -> str:
    """The state the redirect of this flow must carry (the SDK puts one in every URL)."""
    state = state_of(authorization_url)
    if state is None:
        raise SignInNeeded(upstream, "the authorization URL carries no state")
    return state


OUT_OF_CALL_PROMPT_INTERVAL = 600.0
"""Seconds between two sign-in prompts for one upstream that no call is waiting on (its
reconnection attempts), so a person who declined is not asked at every retry."""


class HostSignIn:
    """Serving: the host opens the authorization URL (URL-mode elicitation) and the redirect
    comes back to a loopback listener that runs only while the sign-in waits for it."""

    def __init__(
        self,
        upstream: str,
        host: HostRequests,
        port: int,
        hint: str,
        last_prompt: list[float],
        connected: Callable[[], bool],
    ) -> None:
        """`last_prompt` is the upstream's own one-item record of when a prompt last went
        out (anyio clock), shared by its connection attempts; `connected()` says whether the
        upstream is up (a step-up during a call) rather than still trying to connect."""
        self.upstream = upstream
        self._host = host
        self._port = port
        self._hint = hint
        self._last_prompt = last_prompt
        self._connected = connected
        self._url: str | None = None

    async def redirect(self, authorization_url: str) -> None:
        self._url = authorization_url  # asked for in `callback`, once the listener runs

    async def callback(self) -> AuthorizationCodeResult:
        url = self._url
        now = anyio.current_time()
        recently = now - self._last_prompt[0] < OUT_OF_CALL_PROMPT_INTERVAL
        if url is None or (recently and not self._connected()):
            raise SignInNeeded(self.upstream, self._hint)
        before, self._last_prompt[0] = self._last_prompt[0], now
        request = types.ElicitRequest(
            params=types.ElicitRequestURLParams(
                message=f"Sign in to {self.upstream} so that its tools can be used.",
                url=url,
                elicitation_id=secrets.token_urlsafe(16),
            )
        )
        state = _expected_state(self.upstream, url)
        async with listening(self._port) as listener:
            listener.expect(state)
            answer = await self._host.ask(
                self.upstream, request, types.ElicitResult, SIGN_IN_TIMEOUT
            )
            if isinstance(answer, types.ErrorData):
                # No person saw a prompt (no client connected yet, or one without URL
                # elicitation): the next attempt may ask again, e.g. a host that connects
                # after the first attempt.
                self._last_prompt[0] = before
                logger.info("upstream %s: sign-in not asked: %s", self.upstream, answer.message)
                raise SignInNeeded(self.upstream, self._hint)
            if answer.action != "accept":
                outcome = "declined" if answer.action == "decline" else "cancelled"
                raise SignInNeeded(self.upstream, f"the sign-in was {outcome}; {self._hint}")
            with anyio.fail_after(SIGN_IN_TIMEOUT):
                return await listener.result(state)
