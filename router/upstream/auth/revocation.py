"""Revoking a principal's tokens at its upstream's authorization server (RFC 7009).

When a principal's sign-in to a per-user upstream is revoked (`mcp-router auth revoke
--principal`, `DELETE /v1/auth/{server}`), forgetting the local copy stops this router using
it, but the tokens stay valid at the authorization server until they expire (a refresh
token, for months). Where the server's metadata (RFC 8414, else OpenID Connect discovery)
names a `revocation_endpoint`, `revoke_at_server` posts each stored token to it, the refresh
token first (RFC 7009 2.1: revoking it should end the grant's access tokens too), with the
client's own authentication: `client_secret_basic` (HTTP Basic, form-encoded id and secret),
`client_secret_post` (both in the body) or, for a public client, its `client_id` alone.

Best effort, bounded: every request has `TIMEOUT` seconds, and the caller deletes the local
copy whatever the outcome; the outcome (`Revocation`) goes on the audit trail. Tokens go only
where the router sends tokens at all (`may_carry_tokens`: https, or plain http on loopback).
Blocking: call it in a worker thread. Nothing here logs or returns a token.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import quote_plus, urlsplit

import httpx2

from router.config import RemoteServer
from router.config.oauth import OAuthSettings, may_carry_tokens

logger = logging.getLogger(__name__)

TIMEOUT = 5.0
"""Seconds for each request to the authorization server (discovery and revocation)."""

Outcome = Literal["revoked", "no-endpoint", "failed", "nothing"]
"""`revoked`: the server accepted every token; `no-endpoint`: its metadata names none;
`failed`: it could not be reached, or refused; `nothing`: no token was stored."""


@dataclass(frozen=True, slots=True)
class Revocation:
    """What the authorization server was told; `detail` never holds a token."""

    outcome: Outcome
    detail: str | None = None


def _metadata_urls(issuer: str) -> list[str]:
    """RFC 8414 3.1's well-known URLs of `issuer` (the path inserted), then OpenID's."""
    parts = urlsplit(issuer)
    base, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    return [
        f"{base}/.well-known/oauth-authorization-server{path}",
        f"{base}/.well-known/openid-configuration{path}",
        f"{issuer.rstrip('/')}/.well-known/openid-configuration",
    ]


def _json(http: httpx2.Client, url: str) -> dict[str, Any] | None:
    try:
        answer = http.get(url)
        body = answer.json() if answer.status_code == 200 else None
    except (httpx2.HTTPError, ValueError):
        return None
    return body if isinstance(body, dict) else None


def _issuer(http: httpx2.Client, server: RemoteServer, stored: str | None) -> str | None:
    """The authorization server's issuer: the one the record was signed in with, else the
    first one the upstream's protected resource metadata names (RFC 9728)."""
    if stored:
        return stored
    parts = urlsplit(server.url)
    base, path = f"{parts.scheme}://{parts.netloc}", parts.path.rstrip("/")
    for url in (f"{base}/.well-known/oauth-protected-resource{path}",
                f"{base}/.well-known/oauth-protected-resource"):  # fmt: skip
        found = _json(http, url)
        servers = found.get("authorization_servers") if found else None
        if isinstance(servers, list) and servers and isinstance(servers[0], str):
            return servers[0]
    return None


def revocation_endpoint(http: httpx2.Client, issuer: str) -> str | None:
    """The `revocation_endpoint` of `issuer`'s metadata; None where it names none."""
    for url in _metadata_urls(issuer):
        found = _json(http, url)
        if found is not None:
            endpoint = found.get("revocation_endpoint")
            return endpoint if isinstance(endpoint, str) and endpoint else None
    return None


def _client_auth(
    client: dict[str, Any], oauth: OAuthSettings
) -> tuple[dict[str, str], httpx2.BasicAuth | None]:
    """The body fields and Basic credentials that authenticate the router's client."""
    client_id = oauth.client_id or client.get("client_id")
    secret = (
        oauth.client_secret.get_secret_value()
        if oauth.client_id is not None and oauth.client_secret is not None
        else client.get("client_secret")
    )
    method = (
        oauth.token_endpoint_auth_method
        if oauth.client_id is not None
        else client.get("token_endpoint_auth_method")
    ) or ("client_secret_basic" if secret else "none")
    fields = {"client_id": str(client_id)} if client_id else {}
    if method == "client_secret_post" and secret:
        return {**fields, "client_secret": str(secret)}, None
    if method == "client_secret_basic" and secret and client_id:
        # RFC 6749 2.3.1: each form-encoded; the body names the client too (RFC 7009 2.1)
        return fields, httpx2.BasicAuth(quote_plus(str(client_id)), quote_plus(str(secret)))
    return fields, None


def revoke_at_server(
    server: RemoteServer, record: dict[str, Any], client: dict[str, Any], timeout: float = TIMEOUT
) -> Revocation:
    """Revoke the tokens of `record` (a principal's credentials) at `server`'s authorization
    server, authenticating as `client` (the registered client record, or the config's).
    Never raises for the server's sake: its failures are the outcome."""
    tokens = record.get("tokens")
    if not isinstance(tokens, dict):
        tokens = {}
    held = [
        (hint, str(tokens[hint]))
        for hint in ("refresh_token", "access_token")
        if isinstance(tokens.get(hint), str) and tokens[hint]
    ]
    if not held:
        return Revocation("nothing")
    oauth = server.oauth or OAuthSettings()
    stored = record.get("issuer") or client.get("issuer")
    with httpx2.Client(timeout=timeout, follow_redirects=False) as http:
        issuer = _issuer(http, server, stored if isinstance(stored, str) else None)
        endpoint = revocation_endpoint(http, issuer) if issuer else None
        if endpoint is None:
            return Revocation("no-endpoint", issuer and f"{issuer} names no revocation_endpoint")
        if not may_carry_tokens(endpoint):
            return Revocation("failed", f"{endpoint}: tokens go over https only")
        fields, basic = _client_auth(client, oauth)
        for hint, token in held:
            body = {**fields, "token": token, "token_type_hint": hint}
            try:
                status = _post(http, endpoint, body, basic)
                if status == 400 and "client_secret" not in body:
                    # the MCP SDK's authorization server takes no request without the field:
                    # an empty one adds no authentication (RFC 6749 2.3: only one method)
                    status = _post(http, endpoint, {**body, "client_secret": ""}, basic)
            except httpx2.HTTPError as exc:
                logger.warning("revoking at %s: %s", endpoint, type(exc).__name__)
                return Revocation("failed", f"{endpoint}: {type(exc).__name__}")
            if status != 200:  # RFC 7009 2.2: 200 whether or not the token was known
                return Revocation("failed", f"{endpoint}: HTTP {status}")
    return Revocation("revoked", endpoint)


def _post(
    http: httpx2.Client, endpoint: str, body: dict[str, str], basic: httpx2.BasicAuth | None
) -> int:
    return http.post(endpoint, data=body, auth=basic or httpx2.USE_CLIENT_DEFAULT).status_code
