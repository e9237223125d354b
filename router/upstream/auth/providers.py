"""Which OAuth provider (the SDK's httpx auth flows) a remote upstream gets, and where its
tokens may go.

Every remote entry without a static `Authorization` header gets one: it does nothing until the
server answers 401 (or 403 `insufficient_scope`), then runs the specification's flow. Tokens
travel only over https, or plain http to a loopback address (tests, local servers); anywhere
else the entry gets no provider, and a 401 stays a 401.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit

import anyio
import httpx2
from mcp.client.auth import OAuthClientProvider
from mcp.shared.auth import OAuthClientInformationFull, OAuthClientMetadata, OAuthToken
from mcp.shared.auth_utils import resource_url_from_server_url
from pydantic import AnyUrl

from router.config import RemoteServer
from router.config.oauth import OAuthSettings, may_carry_tokens
from router.sdk.internals import restore_expiry_on_load
from router.store.records import Records
from router.upstream.auth.callback import free_port, redirect_uri
from router.upstream.auth.refresh import SharedRefresh
from router.upstream.auth.signin import SignIn
from router.upstream.auth.storage import TokenFiles
from router.upstream.failures import sign_in_needed

CLIENT_NAME = "mcp-router"


class _QuietSignInNeeded(logging.Filter):
    """The SDK logs every failed flow with its traceback; one that stops because a person
    must sign in is a state the router reports itself, once, in plain words."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        return error is None or sign_in_needed(error) is None


@cache
def _quiet_sdk_flow_log() -> None:
    logging.getLogger("mcp.client.auth.oauth2").addFilter(_QuietSignInNeeded())


def has_static_authorization(server: RemoteServer) -> bool:
    return any(name.lower() == "authorization" for name in server.headers)


def resource_of(server: RemoteServer) -> str:
    """The resource the upstream's tokens are issued for (RFC 8707: its URL, no fragment)."""
    return resource_url_from_server_url(server.url)


def token_files(
    cache_dir: Path, server: RemoteServer, records: Records | None = None
) -> TokenFiles:
    """The upstream's credentials record: in `records` (the shared store's) where given,
    else the cache folder's file."""
    return TokenFiles(cache_dir, resource_of(server), records)


class _ConfiguredClient:
    """The storage of an entry with a pre-registered `clientId`: that client, always (the
    specification's first choice), the tokens from the file."""

    def __init__(self, files: TokenFiles, client: OAuthClientInformationFull) -> None:
        self._files = files
        self._client = client

    async def get_tokens(self) -> OAuthToken | None:
        return await self._files.get_tokens()

    async def set_tokens(self, tokens: OAuthToken) -> None:
        await self._files.set_tokens(tokens)

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self._client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._files.set_client_info(client_info)


class _SharedClient(_ConfiguredClient):
    """A per-user record's storage: the principal's own tokens, and the one client this
    router registered for the upstream (`client`), which every principal signs in through."""

    def __init__(self, files: TokenFiles, client: TokenFiles) -> None:
        self._files = files
        self._client_files = client

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return await self._client_files.get_client_info()

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        await self._client_files.set_client_info(client_info)


@dataclass(frozen=True, slots=True)
class Redirect:
    """Where the authorization server sends the browser back: the loopback port, or the
    router's own front (`/oauth/callback`, a per-user sign-in) when `front` is set."""

    port: int
    front: str | None = None

    @property
    def uri(self) -> str:
        return self.front or redirect_uri(self.port)


async def callback_port(server: RemoteServer, files: TokenFiles) -> int:
    """The loopback port a sign-in's redirect comes back to: `oauth.callbackPort`, else the
    port the stored registration names, else a free one."""
    configured = server.oauth.callback_port if server.oauth else None
    return configured or await stored_redirect_port(files) or free_port()


async def stored_redirect_port(files: TokenFiles) -> int | None:
    """The port a stored registration's redirect URI names: a new sign-in must come back
    there, since the authorization server knows only that one."""
    client = await files.get_client_info()
    for uri in (client.redirect_uris or []) if client else []:
        parts = urlsplit(str(uri))
        if parts.hostname in ("127.0.0.1", "localhost") and parts.port:
            return parts.port
    return None


def upstream_auth(
    server: RemoteServer,
    files: TokenFiles,
    sign_in: SignIn,
    redirect: Redirect,
    client_files: TokenFiles | None = None,
    gate: anyio.Lock | None = None,
) -> httpx2.Auth | None:
    """The auth flow for `server`'s HTTP client; None where tokens must not be sent. Its
    refreshes take the credentials record's lock (`SharedRefresh`), its sign-ins `gate`
    (shared by the connections of one upstream, or of one principal's: one at a time).
    `client_files`: where the registered client is kept when it is not `files` (a per-user
    record's)."""
    if has_static_authorization(server) or not may_carry_tokens(server.url):
        return None
    _quiet_sdk_flow_log()
    oauth = server.oauth or OAuthSettings()
    if oauth.grant == "client_credentials":
        return SharedRefresh(_client_credentials(server, files, oauth), files, gate)
    method = oauth.token_endpoint_auth_method or (
        "client_secret_basic" if oauth.client_secret else "none"
    )
    storage: TokenFiles | _ConfiguredClient = (
        files if client_files is None else _SharedClient(files, client_files)
    )
    secret = oauth.client_secret.get_secret_value() if oauth.client_secret else None
    if oauth.client_id is not None:
        storage = _ConfiguredClient(
            files,
            OAuthClientInformationFull(
                client_id=oauth.client_id,
                client_secret=secret,
                redirect_uris=[AnyUrl(redirect.uri)],
                token_endpoint_auth_method=method,
            ),
        )
    metadata = OAuthClientMetadata(
        client_name=CLIENT_NAME,
        redirect_uris=[AnyUrl(redirect.uri)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
        scope=oauth.scope,
        token_endpoint_auth_method="none",
    )
    provider = OAuthClientProvider(
        server.url,
        metadata,
        storage,
        redirect_handler=sign_in.redirect,
        callback_handler=sign_in.callback,
        client_metadata_url=oauth.client_metadata_url,
    )
    return SharedRefresh(restore_expiry_on_load(provider), files, gate)


def _client_credentials(
    server: RemoteServer, files: TokenFiles, oauth: OAuthSettings
) -> httpx2.Auth:
    # PyJWT and cryptography's x509 come with these: only a client-credentials upstream pays
    from mcp.client.auth.extensions.client_credentials import (
        ClientCredentialsOAuthProvider,
        PrivateKeyJWTOAuthProvider,
        SignedJWTParameters,
    )

    assert oauth.client_id is not None  # the config requires it for this grant
    if oauth.private_key is not None:
        assertion = SignedJWTParameters(
            issuer=oauth.client_id,
            subject=oauth.client_id,
            signing_algorithm=oauth.signing_algorithm,
            signing_key=oauth.private_key.get_secret_value(),
        )
        return restore_expiry_on_load(
            PrivateKeyJWTOAuthProvider(
                server_url=server.url,
                storage=files,
                client_id=oauth.client_id,
                assertion_provider=assertion.create_assertion_provider(),
                scope=oauth.scope,
            )
        )
    assert oauth.client_secret is not None
    method: Literal["client_secret_basic", "client_secret_post"] = (
        "client_secret_post"
        if oauth.token_endpoint_auth_method == "client_secret_post"
        else "client_secret_basic"
    )
    return restore_expiry_on_load(
        ClientCredentialsOAuthProvider(
            server_url=server.url,
            storage=files,
            client_id=oauth.client_id,
            client_secret=oauth.client_secret.get_secret_value(),
            token_endpoint_auth_method=method,
            scope=oauth.scope,
        )
    )
