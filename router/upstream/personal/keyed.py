"""One principal's connection to a server with per-user values (`${user:NAME}`,
`router.config.personal`): a local server's own process started with that principal's
environment, or a remote one's connection sending that principal's headers.

Each connection attempt reads the principal's values afresh (sealed,
`router.upstream.personal.keys`), so a value set or revoked meanwhile counts at the next
one. The entry is filled for an attempt's life only (`server` is the entry as configured
between attempts), and what the connection keeps (its sealed listing) is keyed by the
entry as configured, never by a value. Without its values the attempt asks
the principal to enter them on the front's page (`router.upstream.personal.key_entry`) and
waits; none entered in time, it ends as a `SignInNeeded` naming how to enter them.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from router.config import RemoteServer, StdioServer
from router.config.personal import with_user_values
from router.core.errors import SignInNeeded
from router.upstream.listing.cache import CachedListing, ListingCache
from router.upstream.upstream import Upstream

Values = Callable[[], Awaitable[dict[str, str] | None]]
"""The acting principal's values for the server; None while any is missing."""
Ask = Callable[[Values], Awaitable[dict[str, str] | None]]
"""Ask the principal to enter its values on the front's page (`PendingKeys.ask`), and wait
for them; None when none came in time."""


class EntryListings(ListingCache):
    """A principal's own listings, kept under the entry as configured (not the filled one:
    a listing's key is a hash of the entry, and must not be one of a secret)."""

    def __init__(self, inner: ListingCache, entry: StdioServer | RemoteServer) -> None:
        self.__dict__.update(inner.__dict__)
        self._entry = entry

    async def save(
        self, name: str, server: StdioServer | RemoteServer, cached: CachedListing
    ) -> None:
        await super().save(name, self._entry, cached)


class KeyedUpstream(Upstream):
    """An `Upstream` whose entry is filled with one principal's values at each attempt."""

    def __init__(
        self,
        name: str,
        entry: StdioServer | RemoteServer,
        values: Values,
        hint: str,
        *,
        ask: Ask | None = None,
        listings: ListingCache | None = None,
        **upstream: object,
    ) -> None:
        """`hint`: how the principal enters its values (the error's words without them);
        `ask`: the front's key-entry page, where there is one."""
        kept = EntryListings(listings, entry) if listings is not None else None
        super().__init__(name, entry, listings=kept, **upstream)  # type: ignore[arg-type]
        self._entry = entry
        self._values = values
        self._hint = hint
        self._ask = ask

    async def _connect_and_serve(self) -> Exception | None:
        values = await self._values()
        if values is None and self._ask is not None:
            values = await self._ask(self._values)  # before the connect deadline starts
        if values is None:
            return SignInNeeded(self.name, self._hint)
        self.server = with_user_values(self._entry, values)
        try:
            return await super()._connect_and_serve()
        finally:
            self.server = self._entry
