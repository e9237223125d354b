"""Each principal's own standing with the per-user upstreams: what is stored for it, and its
revocation (the principal's own sign-out, or an operator's).

`PersonalAccounts` reads and removes the sealed records `router.upstream.personal.credentials`
keeps, for `mcp-router auth status|revoke --principal` (a process of its own, over the same
store or cache folder) and `/v1/auth` (inside the serving router, which also closes the
principal's open connection). A serving replica that did not do the revoking notices at the
principal's next request: its connection checks the record is still there
(`PersonalUpstream`), so a revoked principal is asked to sign in again everywhere. Revoking
also forgets the listing the principal's connection kept.
Token-exchange upstreams keep no credentials: their state is the front's token, and revoking
closes the connection (its exchanged token with it). Before a sign-in's record is deleted,
`revoke_at_server` revokes its tokens at the authorization server where its metadata names a
`revocation_endpoint` (RFC 7009, `router.upstream.auth.revocation`; best effort, bounded).
Nothing here returns a token value.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from router.config import RemoteServer, RouterConfig, StdioServer
from router.config.personal import user_value_names
from router.embedding.cache import default_cache_dir
from router.store.records import Records
from router.upstream.auth.revocation import Revocation, revoke_at_server
from router.upstream.auth.storage import StoredCredentials
from router.upstream.listing.cache import ListingCache
from router.upstream.personal.credentials import CLIENT_OWNER, personal_files, sealed_records
from router.upstream.personal.keys import UserKeys

How = Literal["per-user sign-in", "token exchange"]


def how_personal(server: StdioServer | RemoteServer) -> How | None:
    """How a per-user upstream authenticates its principals; None for any other upstream."""
    oauth = server.oauth if isinstance(server, RemoteServer) else None
    if oauth is None or not oauth.personal:
        return None
    return "token exchange" if oauth.grant == "token-exchange" else "per-user sign-in"


@dataclass(frozen=True, slots=True)
class Standing:
    """One principal's standing with one per-user upstream."""

    server: str
    how: How
    stored: StoredCredentials | None
    """What its record holds (a per-user sign-in), never the values."""

    @property
    def signed_in(self) -> bool:
        """Whether its next request goes out without a person signing in."""
        if self.how == "token exchange":
            return True  # each request trades the front's own token
        return self.stored is not None and (self.stored.has_access or self.stored.has_refresh)


class PersonalAccounts:
    """The per-user upstreams of `config` and their records in `records` (the shared
    store's; None: the cache folder's). Every method blocks: call it in a worker thread."""

    def __init__(self, config: RouterConfig, records: Records | None) -> None:
        self._config = config
        self._cache_dir: Path = config.router.cache_dir or default_cache_dir()
        self._records = records
        self._sealed: Records | None = None

    @property
    def servers(self) -> dict[str, RemoteServer]:
        """The per-user upstreams, by name."""
        return {
            name: server
            for name, server in sorted(self._config.servers.items())
            if isinstance(server, RemoteServer) and how_personal(server) is not None
        }

    @property
    def keyed(self) -> dict[str, StdioServer | RemoteServer]:
        """The servers with per-user values (`${user:NAME}`), by name."""
        found = sorted(self._config.servers.items())
        return {name: server for name, server in found if user_value_names(server)}

    def user_keys(self) -> UserKeys:
        """The principals' sealed values for the servers in `keyed`."""
        return UserKeys(self._records_sealed())

    @property
    def issuer(self) -> str | None:
        """The front's issuer: the one principals are named by when no other is given."""
        oauth = self._config.router.http.oauth
        return None if oauth is None else oauth.issuer

    def _records_sealed(self) -> Records:
        if self._sealed is None:  # the key is read on first need: a missing one is a ConfigError
            self._sealed = sealed_records(self._config, self._records)
        return self._sealed

    def standing(self, name: str, owner: str) -> Standing:
        """`owner`'s (a principal key's) standing with the per-user upstream `name`."""
        server = self.servers[name]
        how = how_personal(server)
        assert how is not None
        if how == "token exchange":
            return Standing(name, how, None)
        files = personal_files(self._cache_dir, server, self._records_sealed(), owner)
        return Standing(name, how, files.describe())

    def revoke(self, name: str, owner: str) -> bool:
        """Forget `owner`'s credentials for `name`, and the listing its connection kept;
        whether there were credentials."""
        server = self.servers[name]
        ListingCache(None, self._records_sealed(), owner=owner).forget(name)
        if how_personal(server) == "token exchange":
            return False
        files = personal_files(self._cache_dir, server, self._records_sealed(), owner)
        return files.records.delete(files.kind, files.key)

    def revoke_at_server(self, name: str, owner: str) -> Revocation | None:
        """Revoke `owner`'s stored tokens for `name` at its authorization server (RFC 7009),
        before `revoke` forgets them here; None for a token-exchange upstream (nothing kept).
        Best effort: the outcome says what the server was told."""
        server = self.servers[name]
        if how_personal(server) == "token exchange":
            return None
        sealed = self._records_sealed()
        record = personal_files(self._cache_dir, server, sealed, owner).read()
        client = personal_files(self._cache_dir, server, sealed, CLIENT_OWNER).read()
        registered = client.get("client")
        return revoke_at_server(server, record, registered if isinstance(registered, dict) else {})
