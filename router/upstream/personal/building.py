"""How the pool makes a per-user upstream and each principal's connection to it.

A per-user upstream starts from no listing (never the shared one a cache folder or store
keeps under its name, which it deletes: older versions kept it there in clear). Each
principal's connection keeps its own listing in the sealed records, under that principal's
key (`ListingCache(owner=...)`), and reads it back when the principal's connection opens.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import anyio.to_thread

from router.config import RemoteServer, RouterConfig, StdioServer
from router.config.personal import is_personal, user_value_names
from router.embedding.cache import default_cache_dir
from router.store.records import Records
from router.upstream.listing.cache import CachedListing, ListingCache
from router.upstream.personal.accounts import how_personal
from router.upstream.personal.acting import Acting
from router.upstream.personal.child import ChildHooks, Kept, OwnHost, SignedIn
from router.upstream.personal.credentials import (
    PersonalAuth,
    PersonalPlace,
    front_callback,
    personal_files,
    sealed_records,
)
from router.upstream.personal.keyed import KeyedUpstream, Values
from router.upstream.personal.keys import UserKeys
from router.upstream.personal.pending import PendingSignIns
from router.upstream.personal.upstream import PersonalUpstream
from router.upstream.state import UpstreamStatus
from router.upstream.upstream import ToolsChanged, Upstream

SIGN_IN_HINT = "call one of its tools from a host that can open URLs, and sign in there"
KEYS_HINT = (
    "no key of yours is stored for it: ask an operator to run "
    "`mcp-router secrets set {name} --principal {subject}`"
)


class PersonalBuilder:
    """The per-user upstreams of one pool: their sealed records, made once, on first need
    (a missing or short key is a `ConfigError` then, at start)."""

    def __init__(self, sign_ins: PendingSignIns, credentials: Records | None) -> None:
        self._sign_ins = sign_ins
        self._credentials = credentials
        self._sealed: dict[str, Records] = {}

    def applies(self, server: StdioServer | RemoteServer) -> bool:
        return is_personal(server)

    def place(self, config: RouterConfig) -> PersonalPlace:
        cache_dir = config.router.cache_dir or default_cache_dir()
        key = str(cache_dir)
        if key not in self._sealed:
            self._sealed[key] = sealed_records(config, self._credentials)
        front = config.router.http.oauth
        redirect = front_callback(config)
        assert front is not None and redirect is not None  # the config requires identities
        return PersonalPlace(cache_dir, self._sealed[key], self._sign_ins, redirect, front.issuer)

    def build(
        self,
        config: RouterConfig,
        name: str,
        server: StdioServer | RemoteServer,
        options: dict[str, Any],
        *,
        on_tools: ToolsChanged | None,
        on_status_changed: Callable[[UpstreamStatus], None] | None,
    ) -> PersonalUpstream:
        """`options`: what its principals' connections share with an ordinary upstream
        (`listings`: whether listings are kept at all)."""
        self.place(config)  # the key is checked at start, not at the first principal's call

        def make_child(acting: Acting, hooks: ChildHooks) -> Upstream:
            host = options.get("host")  # what it asks goes to its principal's calls only
            own = {**options, "host": OwnHost(host, acting.key) if host is not None else None}
            if user_value_names(server):
                return self.keyed_child(config, name, server, acting, hooks, own)
            assert isinstance(server, RemoteServer)
            return self.child(config, name, server, acting, hooks, own)

        return PersonalUpstream(
            name,
            server,
            make_child,
            config.router.personal,
            SIGN_IN_HINT,
            signed_in=self._signed_in(config, name, server),
            kept=self._kept(config, name, server, options),
            on_tools=on_tools,
            on_status_changed=on_status_changed,
            **{**options, "listings": None},
        )

    def _listings(
        self, config: RouterConfig, acting: Acting, options: dict[str, Any]
    ) -> ListingCache | None:
        """Where `acting`'s own listings are kept: sealed, under its key; None where the
        pool keeps no listings."""
        if options.get("listings") is None:
            return None
        return ListingCache(None, self.place(config).records, owner=acting.key)

    def _kept(
        self,
        config: RouterConfig,
        name: str,
        server: StdioServer | RemoteServer,
        options: dict[str, Any],
    ) -> Kept | None:
        """The reader of a principal's own kept listing of `name`."""
        if options.get("listings") is None:
            return None

        def load(acting: Acting) -> CachedListing | None:
            listings = self._listings(config, acting, options)
            return listings.load(name, server) if listings is not None else None

        async def kept(acting: Acting) -> CachedListing | None:
            return await anyio.to_thread.run_sync(load, acting)

        return kept

    def keys(self, config: RouterConfig) -> UserKeys:
        """The principals' sealed values for `${user:NAME}` placeholders."""
        return UserKeys(self.place(config).records)

    def _signed_in(
        self, config: RouterConfig, name: str, server: StdioServer | RemoteServer
    ) -> SignedIn | None:
        """The check that a principal's record still holds credentials or values (none
        for token exchange, which keeps no record)."""
        if user_value_names(server):
            keys = self.keys(config)

            async def entered(acting: Acting) -> bool:
                found = await anyio.to_thread.run_sync(keys.values, name, server, acting.key)
                return found is not None

            return entered
        if how_personal(server) != "per-user sign-in":
            return None
        assert isinstance(server, RemoteServer)
        place = self.place(config)

        def stored(acting: Acting) -> bool:
            files = personal_files(place.cache_dir, server, place.records, acting.key)
            found = files.describe()
            return found is not None and (found.has_access or found.has_refresh)

        async def signed_in(acting: Acting) -> bool:
            return await anyio.to_thread.run_sync(stored, acting)

        return signed_in

    def child(
        self,
        config: RouterConfig,
        name: str,
        server: RemoteServer,
        acting: Acting,
        hooks: ChildHooks,
        options: dict[str, Any],
    ) -> Upstream:
        auth = PersonalAuth(
            name,
            server,
            self.place(config),
            acting,
            SIGN_IN_HINT,
            hooks.on_url,
            hooks.subject_token,
        )
        return Upstream(
            name,
            server,
            on_tools_changed=hooks.on_tools,
            on_status_changed=hooks.on_status,
            auth=auth,
            **{**options, "listings": self._listings(config, acting, options)},
        )

    def keyed_child(
        self,
        config: RouterConfig,
        name: str,
        server: StdioServer | RemoteServer,
        acting: Acting,
        hooks: ChildHooks,
        options: dict[str, Any],
    ) -> Upstream:
        """`acting`'s own connection to a server with per-user values: no OAuth, its entry
        filled with `acting`'s values at each attempt."""
        keys = self.keys(config)

        async def values() -> dict[str, str] | None:
            return await anyio.to_thread.run_sync(keys.values, name, server, acting.key)

        place = self.place(config)

        async def ask(values: Values) -> dict[str, str] | None:
            keys = place.pending.keys
            return await keys.ask(name, acting.key, place.redirect_uri, hooks.on_url, values)

        return KeyedUpstream(
            name,
            server,
            values,
            KEYS_HINT.format(name=name, subject=acting.subject),
            ask=ask,
            on_tools_changed=hooks.on_tools,
            on_status_changed=hooks.on_status,
            **{**options, "listings": self._listings(config, acting, options)},
        )
