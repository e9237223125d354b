"""A principal entering its own values for a server's `${user:NAME}` placeholders, on a page
of the router's front: the value goes from the person's browser to the sealed store, never
through the model, the host's chat or a log.

A principal's connection without its values (`KeyedUpstream`) asks here (`PendingKeys.ask`):
it issues a single-use ticket (`router.upstream.personal.tickets`, a kind of its own, so a
sign-in's ticket does not open a key form) and shows the link `/keys/start?ticket=T` to the
caller's host (URL-mode elicitation, or the error naming it), then waits, bounded, until the
values are stored. Opening the link spends the ticket, gives that browser a cookie bound to
the flow and shows a form naming the principal and the server, carrying a CSRF token derived
from the cookie; the form's POST is taken only with both (`PendingKeys.enter`), once. The
value is stored with `UserKeys` (by the front, `router.server.http.sign_in_callback`) and the
waiting connection wakes: at once on this replica, at its next look (`POLL`) on another.
"""

from __future__ import annotations

import hmac
import json
import secrets
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import asdict, dataclass
from urllib.parse import urlencode, urlsplit

import anyio
import anyio.to_thread

from router.store.records import Records
from router.upstream.auth.signin import SIGN_IN_TIMEOUT
from router.upstream.personal.tickets import Ticket, Tickets, digest

KEYS_ROUTE = "/keys/start"
KEY_TICKET_KIND = "key-entry-ticket"
FLOW_KIND = "key-entry-flow"
MAX_FLOWS = 1024
"""Key entries waiting at once on one replica (the oldest is dropped past it)."""
POLL = 1.0
"""Seconds between two looks for values stored elsewhere (another replica, the CLI)."""


@dataclass(frozen=True, slots=True)
class KeyFlow:
    """An opened key-entry link: whose values, for which server, and the browser it is
    bound to (the digest of its cookie)."""

    state: str
    upstream: str
    owner: str
    secure: bool
    expires: float
    browser: str

    @property
    def subject(self) -> str:
        return self.owner.rpartition("\x1f")[2]

    @property
    def issuer(self) -> str:
        return self.owner.rpartition("\x1f")[0]


def csrf_of(browser: str) -> str:
    """The form's CSRF token for the browser whose cookie is `browser` (a page of another
    site can neither read the cookie nor compute this)."""
    return digest("csrf\x1f" + browser)


class PendingKeys:
    """The key entries of this replica and their opened flows (in the shared store's
    records where there is one, so the form may be posted to any replica)."""

    def __init__(self, relay: Records | None) -> None:
        self._relay = relay
        self.tickets = Tickets(relay, kind=KEY_TICKET_KIND)
        self._waiting: OrderedDict[str, anyio.Event] = OrderedDict()
        self._flows: OrderedDict[str, KeyFlow] = OrderedDict()

    async def ask(
        self,
        upstream: str,
        owner: str,
        front: str,
        on_url: Callable[[str | None], None],
        values: Callable[[], Awaitable[dict[str, str] | None]],
    ) -> dict[str, str] | None:
        """Show the principal `owner` a key-entry link (`on_url`) and wait, at most
        `SIGN_IN_TIMEOUT`, for its values; None when none came. `front`: a URL at the
        front's public origin."""
        state = secrets.token_urlsafe(24)
        where = urlsplit(front)
        expires = time.time() + SIGN_IN_TIMEOUT
        ticket = Ticket(state, "", upstream, owner, where.scheme == "https", expires)
        while len(self._waiting) >= MAX_FLOWS:
            self._waiting.popitem(last=False)  # it still finds its values by looking
        woken = self._waiting[state] = anyio.Event()
        secret = await self.tickets.issue(ticket)
        on_url(f"{where.scheme}://{where.netloc}{KEYS_ROUTE}?{urlencode({'ticket': secret})}")
        try:
            with anyio.move_on_after(SIGN_IN_TIMEOUT):
                while True:
                    found = await values()
                    if found is not None:
                        return found
                    with anyio.move_on_after(POLL):
                        await woken.wait()
                    if woken.is_set():  # stored, yet not all there (revoked meanwhile)
                        woken = self._waiting[state] = anyio.Event()
        finally:
            self._waiting.pop(state, None)
            on_url(None)
            with anyio.CancelScope(shield=True):
                await self.tickets.forget(state)
                await self._drop(state)
        return None

    async def open(self, secret: str) -> tuple[KeyFlow, str] | None:
        """Spend the ticket `secret` names and bind its flow to a new browser cookie: the
        flow and the cookie's value; None for an unknown, spent or expired ticket."""
        ticket = await self.tickets.claim(secret)
        if ticket is None:
            return None
        browser = secrets.token_urlsafe(32)
        flow = KeyFlow(
            ticket.state, ticket.upstream, ticket.owner, ticket.secure, ticket.expires,
            digest(browser),
        )  # fmt: skip
        if self._relay is None:
            while len(self._flows) >= MAX_FLOWS:
                self._flows.popitem(last=False)
            self._flows[flow.state] = flow
        else:
            body = json.dumps(asdict(flow)).encode()
            await anyio.to_thread.run_sync(self._relay.put, FLOW_KIND, _key(flow.state), body)
        return flow, browser

    async def flow(self, state: str, browser: str | None, csrf: str | None) -> KeyFlow | None:
        """The open, unexpired flow `state` names, if `browser` is the cookie its link gave
        and `csrf` the form's token for it; None otherwise (nothing is spent)."""
        if not browser or not csrf or not hmac.compare_digest(csrf, csrf_of(browser)):
            return None
        if self._relay is None:
            found = self._flows.get(state)
        else:
            raw = await anyio.to_thread.run_sync(self._relay.get, FLOW_KIND, _key(state))
            found = _parsed(raw)
        if found is None or found.expires <= time.time():
            return None
        return found if hmac.compare_digest(found.browser, digest(browser)) else None

    async def entered(self, state: str) -> None:
        """The flow's values are stored: it is spent, and its connection here wakes."""
        await self._drop(state)
        woken = self._waiting.get(state)
        if woken is not None:
            woken.set()

    async def _drop(self, state: str) -> None:
        self._flows.pop(state, None)
        if self._relay is not None:
            await anyio.to_thread.run_sync(self._relay.delete, FLOW_KIND, _key(state))


def _key(state: str) -> str:
    return digest(state)[:32]


def _parsed(raw: bytes | None) -> KeyFlow | None:
    if not raw:
        return None
    try:
        return KeyFlow(**json.loads(raw))
    except (ValueError, TypeError):
        return None
