"""The first hop of a per-user sign-in: the link a person opens binds the sign-in to a browser.

The login-CSRF shape this closes: a principal B starts a sign-in for its own connection and
sends the link to A; A signs in at the upstream's authorization server; A's tokens would land
in B's record, and B would act upstream as A. The `state` alone cannot tell B's browser from
A's, since whoever holds the URL holds the state.

So the link shown to a principal is not the authorization server's URL but
`/oauth/start?ticket=T` on the router's own front. `T` is unguessable, names the flow (its
`state`, the authorization URL, the upstream and the principal), expires with the sign-in,
and is spent once (`claim`: with a shared store, under its record's lock, so once across
replicas). Opening it shows whose sign-in it is; going on spends it, gives that browser a
cookie (HttpOnly, SameSite=Lax, `__Host-` and Secure when the front is https) whose digest
is kept with the flow, and only then redirects to the authorization server. The callback
hands a code to the flow only with that cookie (`PendingSignIns.arrive`): an authorization
URL forwarded to another browser, a replayed ticket or a forged cookie stores nothing.

What it cannot tell: a browser that opens a ticket nobody opened yet. Front identities are
bearer tokens a browser does not hold, so the page names the principal the sign-in is for,
and the person decides.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
import time
from collections import OrderedDict
from dataclasses import asdict, dataclass

import anyio.to_thread

from router.store.records import Records

START_ROUTE = "/oauth/start"
TICKET_KIND = "sign-in-ticket"
BROWSER_KIND = "sign-in-browser"
MAX_TICKETS = 1024
"""Unopened tickets one replica keeps at once (the oldest is dropped past it)."""
_COOKIE = "mcp-router-sign-in-"


@dataclass(frozen=True, slots=True)
class Ticket:
    """What a first-hop link stands for; never shown whole to a browser."""

    state: str
    url: str
    """The authorization server's URL the browser goes on to."""
    upstream: str
    owner: str
    """The principal's key (`issuer` and `sub`, separated by \\x1f)."""
    secure: bool
    """Whether the front is https (the cookie is then `__Host-` and Secure)."""
    expires: float
    """Wall-clock time (replicas compare it)."""

    @property
    def subject(self) -> str:
        return self.owner.rpartition("\x1f")[2]

    @property
    def issuer(self) -> str:
        return self.owner.rpartition("\x1f")[0]


def digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def cookie_names(state: str) -> tuple[str, str]:
    """The names a flow's cookie has: on an https front, then on a plain http one."""
    name = _COOKIE + digest(state)[:16]
    return "__Host-" + name, name


def same_browser(expected: str | None, presented: str | None) -> bool:
    """Whether the cookie `presented` is the one the flow's first hop gave (`expected`: its
    digest), compared in constant time."""
    if expected is None or not presented:
        return False
    return hmac.compare_digest(expected, digest(presented))


class Tickets:
    """First-hop tickets: in memory on one replica, in the shared store's records (under
    each one's lock) where there is one, so that any replica opens them."""

    def __init__(self, relay: Records | None, kind: str = TICKET_KIND) -> None:
        """`kind`: the records' kind (a key entry's tickets are not a sign-in's)."""
        self._relay = relay
        self._kind = kind
        self._local: OrderedDict[str, Ticket] = OrderedDict()
        self._issued: OrderedDict[str, str] = OrderedDict()
        """The key of the ticket issued for each state, to delete it once the flow ends."""

    async def issue(self, ticket: Ticket) -> str:
        """The link's secret for `ticket` (its digest is the key, never the secret)."""
        secret = secrets.token_urlsafe(32)
        key = digest(secret)[:40]
        while len(self._issued) >= MAX_TICKETS:
            self._issued.popitem(last=False)
        self._issued[ticket.state] = key
        if self._relay is not None:
            body = json.dumps(asdict(ticket)).encode()
            await anyio.to_thread.run_sync(self._relay.put, self._kind, key, body)
            return secret
        now = time.time()
        for old in [k for k, t in self._local.items() if t.expires <= now]:
            del self._local[old]
        while len(self._local) >= MAX_TICKETS:
            self._local.popitem(last=False)
        self._local[key] = ticket
        return secret

    async def peek(self, secret: str) -> Ticket | None:
        """The unspent, unexpired ticket `secret` names (not spent by looking)."""
        key = digest(secret)[:40]
        if self._relay is None:
            found = self._local.get(key)
        else:
            found = _parsed(await anyio.to_thread.run_sync(self._relay.get, self._kind, key))
        return found if found is not None and found.expires > time.time() else None

    async def claim(self, secret: str) -> Ticket | None:
        """Spend the ticket `secret` names: the first caller gets it, every later one None."""
        key = digest(secret)[:40]
        relay = self._relay
        if relay is None:
            found = self._local.pop(key, None)
        else:

            def spend() -> Ticket | None:
                with relay.locked(self._kind, key) as held:
                    ticket = _parsed(held.get())
                    if ticket is not None:
                        held.put(b"")  # spent: a second claim, here or elsewhere, finds none
                relay.delete(self._kind, key)
                return ticket

            found = await anyio.to_thread.run_sync(spend)
        return found if found is not None and found.expires > time.time() else None

    async def bind(self, ticket: Ticket, browser: str) -> None:
        """Where a shared store is, keep the digest of the browser's cookie for the replica
        whose flow waits (it may not be this one)."""
        if self._relay is not None:
            key = digest(ticket.state)[:32]
            await anyio.to_thread.run_sync(
                self._relay.put, BROWSER_KIND, key, digest(browser).encode()
            )

    async def bound(self, state: str) -> str | None:
        """The digest of the cookie bound to the flow of `state` on any replica."""
        if self._relay is None:
            return None
        raw = await anyio.to_thread.run_sync(self._relay.get, BROWSER_KIND, digest(state)[:32])
        return raw.decode() if raw else None

    async def forget(self, state: str) -> None:
        """The flow of `state` is over: its ticket, if unopened, and its cookie's digest go."""
        key = self._issued.pop(state, None)
        if key is not None:
            self._local.pop(key, None)
        relay = self._relay
        if relay is not None:

            def delete() -> None:
                if key is not None:
                    relay.delete(self._kind, key)
                relay.delete(BROWSER_KIND, digest(state)[:32])

            await anyio.to_thread.run_sync(delete)


def _parsed(raw: bytes | None) -> Ticket | None:
    if not raw:
        return None
    try:
        return Ticket(**json.loads(raw))
    except (ValueError, TypeError):
        return None
