"""What one principal's connection to a per-user upstream signs in with, and where its
tokens live.

Each principal's tokens are a record of their own (kind `user-auth`, keyed by a hash of the
upstream's resource and the principal's key), sealed (`router.store.sealed_records`) in the
shared store where there is one, so every replica uses them, else in the cache folder. The
client the router registered with the upstream's authorization server is one sealed record
for all principals. Refreshes take the principal's record's lock (`SharedRefresh`), so a
rotating refresh token is spent once across replicas. A token-exchange upstream keeps no
record: its exchanged tokens live in memory, per connection.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import anyio
import httpx2

from router.config import RemoteServer, RouterConfig
from router.embedding.cache import default_cache_dir
from router.store.records import FileRecords, Records
from router.store.sealed_records import SealedRecords, Sealer, secrets_key_material
from router.upstream.auth.providers import Redirect, resource_of, upstream_auth
from router.upstream.auth.storage import StoredCredentials, TokenFiles
from router.upstream.connection.host_requests import HostRequests
from router.upstream.personal.acting import Acting
from router.upstream.personal.exchange import TokenExchange
from router.upstream.personal.pending import CALLBACK_ROUTE, FrontSignIn, PendingSignIns

PERSONAL_KIND = "user-auth"
CLIENT_OWNER = "\x1eclient"
"""The owner key of the one client record every principal signs in through."""


def front_callback(config: RouterConfig) -> str | None:
    """The front's `/oauth/callback` URL, at the origin clients reach (`router.http.oauth`'s
    audience); None without identities."""
    oauth = config.router.http.oauth
    if oauth is None:
        return None
    parts = urlsplit(oauth.audience)
    return f"{parts.scheme}://{parts.netloc}{CALLBACK_ROUTE}"


def sealed_records(config: RouterConfig, records: Records | None) -> Records:
    """`records` (the shared store's; None: the cache folder's files), sealed with the key
    `router.secrets_key` names.

    Raises:
        ConfigError: the key is missing or too short.
    """
    cache_dir = config.router.cache_dir or default_cache_dir()
    base = records if records is not None else FileRecords(cache_dir)
    return SealedRecords(base, Sealer(secrets_key_material(config.router.secrets_key, cache_dir)))


def personal_files(
    cache_dir: Path, server: RemoteServer, records: Records, owner: str
) -> TokenFiles:
    """The sealed record of `owner`'s (a principal key's) credentials for `server`."""
    return TokenFiles(cache_dir, resource_of(server), records, kind=PERSONAL_KIND, owner=owner)


def describe_personal(
    cache_dir: Path, server: RemoteServer, records: Records, owner: str
) -> StoredCredentials | None:
    """What is stored for `owner` (blocking; for `auth status`), never the values."""
    return personal_files(cache_dir, server, records, owner).describe()


@dataclass(frozen=True, slots=True)
class PersonalPlace:
    """Where one per-user upstream's credentials live and its sign-ins come back."""

    cache_dir: Path
    records: Records
    """Sealed records: the shared store's, or the cache folder's."""
    pending: PendingSignIns
    redirect_uri: str
    issuer: str
    """The front's issuer (the subject tokens' issuer, where token exchange goes)."""


class PersonalAuth:
    """The `ConnectionAuth` of one principal's connection."""

    def __init__(
        self,
        name: str,
        server: RemoteServer,
        place: PersonalPlace,
        acting: Acting,
        hint: str,
        on_url: Callable[[str | None], None],
        subject_token: Callable[[], str | None],
    ) -> None:
        assert server.oauth is not None
        self.name = name
        self.server = server
        self.hint = hint
        self._place = place
        self._owner = acting.key
        self._on_url = on_url
        self.files = personal_files(place.cache_dir, server, place.records, acting.key)
        self._client = personal_files(place.cache_dir, server, place.records, CLIENT_OWNER)
        self._exchange = (
            TokenExchange(name, server.oauth, place.issuer, resource_of(server), subject_token)
            if server.oauth.grant == "token-exchange"
            else None
        )
        self._gate = anyio.Lock()  # this principal's sign-ins, one at a time

    async def for_connection(
        self,
        host: HostRequests | None,
        connected: Callable[[], bool],
        extend: Callable[[float], None],
    ) -> httpx2.Auth | None:
        if self._exchange is not None:
            return self._exchange
        sign_in = FrontSignIn(
            self.name,
            self._owner,
            self._place.pending,
            self.hint,
            self._on_url,
            extend,
            self._place.redirect_uri,
        )
        redirect = Redirect(0, front=self._place.redirect_uri)
        client = None if self.server.oauth and self.server.oauth.client_id else self._client
        return upstream_auth(self.server, self.files, sign_in, redirect, client, self._gate)
