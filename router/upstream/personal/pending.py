"""Per-user sign-ins whose browser comes back to the router's own front.

A per-user upstream's sign-in redirects to `/oauth/callback` on the HTTP front (not to a
loopback port: the person's browser may be on another machine). The SDK's authorization
URL carries an unguessable `state`; `FrontSignIn.redirect` registers it here for the one
principal's connection attempt that made it, and the front's callback route hands the
code to exactly that attempt (`PendingSignIns.arrive`), once, and only from the browser that
opened the attempt's first-hop link (`router.upstream.personal.tickets`: the principal is
shown that link, never the authorization URL). The code is useless without the PKCE
verifier, which never leaves the attempt.

Behind a load balancer the browser may reach another replica. There `arrive` finds no
waiter and, with a shared store, writes the code as a sealed record under a hash of the
state; the replica that waits reads it (every `RELAY_POLL` seconds) and deletes it. The
table is bounded (`MAX_PENDING`) and every entry expires with the sign-in's timeout.
"""

from __future__ import annotations

import hashlib
import json
import logging
import secrets
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import urlencode, urlsplit

import anyio
import anyio.to_thread
from mcp.shared.auth import AuthorizationCodeResult

from router.core.errors import SignInNeeded
from router.store.records import Records
from router.upstream.auth.callback import SignInRefused, state_of
from router.upstream.auth.signin import SIGN_IN_TIMEOUT
from router.upstream.personal.key_entry import PendingKeys
from router.upstream.personal.tickets import START_ROUTE, Ticket, Tickets, digest, same_browser

logger = logging.getLogger(__name__)

CALLBACK_ROUTE = "/oauth/callback"
MAX_PENDING = 1024
"""Sign-ins waiting for their browser at once, on one replica."""
RELAY_KIND = "sign-in"
RELAY_POLL = 0.5
"""Seconds between two looks for a code another replica received."""

Arrival = Literal["delivered", "relayed", "unknown", "refused"]
"""`refused`: the flow waits, but the browser is not the one that opened its link."""


@dataclass(eq=False)
class _Waiting:
    owner: str
    expires: float
    arrived: anyio.Event = field(default_factory=anyio.Event)
    result: AuthorizationCodeResult | None = None
    refusal: str | None = None
    browser: str | None = None
    """The digest of the cookie its first hop gave a browser, once one opened it."""


def _relay_key(state: str) -> str:
    return hashlib.sha256(state.encode()).hexdigest()[:32]


class PendingSignIns:
    """The sign-ins of this replica that wait for their browser, by `state`."""

    def __init__(self, relay: Records | None = None) -> None:
        """`relay`: sealed records every replica reads (a shared store's), for a browser
        that comes back to another replica; None: one replica."""
        self._waiting: OrderedDict[str, _Waiting] = OrderedDict()
        self._relay = relay if relay is not None and relay.shared else None
        self.tickets = Tickets(self._relay)
        self.keys = PendingKeys(self._relay)
        """Per-user values entered on the front's page (`router.upstream.personal.key_entry`)."""

    def __len__(self) -> int:
        return len(self._waiting)

    def expect(self, state: str, owner: str) -> _Waiting:
        now = anyio.current_time()
        for old in [s for s, w in self._waiting.items() if w.expires <= now]:
            del self._waiting[old]
        while len(self._waiting) >= MAX_PENDING:
            self._waiting.popitem(last=False)
        waiting = self._waiting[state] = _Waiting(owner, now + SIGN_IN_TIMEOUT)
        return waiting

    def forget(self, state: str) -> None:
        self._waiting.pop(state, None)

    async def open_ticket(self, secret: str) -> tuple[Ticket, str] | None:
        """Spend the first-hop ticket `secret` names and bind its flow to the browser that
        spent it: the cookie value it is to get; None for an unknown, spent or expired one."""
        ticket = await self.tickets.claim(secret)
        if ticket is None:
            return None
        browser = secrets.token_urlsafe(32)
        waiting = self._waiting.get(ticket.state)
        if waiting is not None:
            waiting.browser = digest(browser)
        await self.tickets.bind(ticket, browser)
        return ticket, browser

    async def arrive(
        self,
        state: str,
        code: str | None,
        iss: str | None,
        error: str | None,
        browser: str | None,
    ) -> Arrival:
        """The browser came back with `state` and the cookie `browser`: hand its code (or its
        error) to the waiting attempt, or relay it to the replica that waits. An unknown
        state, or a browser other than the one that opened the flow's link, changes nothing
        (the flow goes on waiting for its own browser)."""
        waiting = self._waiting.get(state)
        expected = waiting.browser if waiting is not None else None
        if expected is None:
            expected = await self.tickets.bound(state)
        if not same_browser(expected, browser):
            known = waiting is not None or expected is not None
            return "refused" if known else "unknown"
        waiting = self._waiting.pop(state, None)
        if waiting is not None and waiting.expires > anyio.current_time():
            if code is not None:
                waiting.result = AuthorizationCodeResult(code=code, state=state, iss=iss)
            else:
                waiting.refusal = error or "no authorization code"
            waiting.arrived.set()
            return "delivered"
        relay = self._relay
        if relay is None:
            return "unknown"
        body = json.dumps({"code": code, "iss": iss, "error": error}).encode()
        await anyio.to_thread.run_sync(relay.put, RELAY_KIND, _relay_key(state), body)
        return "relayed"

    async def wait(self, state: str, waiting: _Waiting) -> AuthorizationCodeResult:
        """The code for `state` (bounded by the caller); `SignInRefused` for an error."""
        while not waiting.arrived.is_set():
            if self._relay is None:
                await waiting.arrived.wait()
                break
            with anyio.move_on_after(RELAY_POLL):
                await waiting.arrived.wait()
            if not waiting.arrived.is_set():
                await self._relayed(state, waiting)
        if waiting.result is None:
            raise SignInRefused(waiting.refusal or "no authorization code")
        return waiting.result

    async def _relayed(self, state: str, waiting: _Waiting) -> None:
        relay = self._relay
        assert relay is not None

        def take() -> bytes | None:
            key = _relay_key(state)
            raw = relay.get(RELAY_KIND, key)
            if raw is not None:
                relay.delete(RELAY_KIND, key)
            return raw

        raw = await anyio.to_thread.run_sync(take)
        if raw is None:
            return
        try:
            data = json.loads(raw)
        except ValueError:
            data = {}
        code, error = data.get("code"), data.get("error")
        if isinstance(code, str):
            iss = data.get("iss")
            waiting.result = AuthorizationCodeResult(
                code=code, state=state, iss=iss if isinstance(iss, str) else None
            )
        else:
            waiting.refusal = str(error or "no authorization code")
        self.forget(state)
        waiting.arrived.set()


class FrontSignIn:
    """One per-user connection attempt's sign-in: its first-hop link is shown by the
    caller's own request (`PersonalUpstream`), the redirect comes back through
    `PendingSignIns`."""

    def __init__(
        self,
        upstream: str,
        owner: str,
        pending: PendingSignIns,
        hint: str,
        on_url: Callable[[str | None], None],
        extend: Callable[[float], None],
        front: str,
    ) -> None:
        """`on_url` tells the per-user upstream the link a person must open (None: no
        longer); `extend` gives the connection attempt the sign-in's time; `front` is the
        front's callback URL (the first hop is at its origin)."""
        self.upstream = upstream
        self._owner = owner
        self._front = urlsplit(front)
        self._pending = pending
        self._hint = hint
        self._on_url = on_url
        self._extend = extend
        self._state: str | None = None
        self._waiting: _Waiting | None = None

    async def redirect(self, authorization_url: str) -> None:
        state = state_of(authorization_url)
        if state is None:
            raise SignInNeeded(self.upstream, "the authorization URL carries no state")
        self._state, self._waiting = state, self._pending.expect(state, self._owner)
        self._extend(SIGN_IN_TIMEOUT + 5.0)
        ticket = Ticket(
            state,
            authorization_url,
            self.upstream,
            self._owner,
            secure=self._front.scheme == "https",
            expires=time.time() + SIGN_IN_TIMEOUT,
        )
        secret = await self._pending.tickets.issue(ticket)
        query = urlencode({"ticket": secret})
        self._on_url(f"{self._front.scheme}://{self._front.netloc}{START_ROUTE}?{query}")

    async def callback(self) -> AuthorizationCodeResult:
        state, waiting = self._state, self._waiting
        if state is None or waiting is None:
            raise SignInNeeded(self.upstream, self._hint)
        try:
            with anyio.fail_after(SIGN_IN_TIMEOUT):
                return await self._pending.wait(state, waiting)
        except TimeoutError:
            raise SignInNeeded(self.upstream, "the sign-in was not finished in time") from None
        finally:
            self._pending.forget(state)
            self._on_url(None)
            with anyio.CancelScope(shield=True):
                await self._pending.tickets.forget(state)
