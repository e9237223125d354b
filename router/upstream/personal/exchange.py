"""Token exchange (RFC 8693): the caller's own front token traded for one the upstream takes.

Where the upstream trusts the front's issuer, `"grant": "token-exchange"` needs no browser:
before a request goes out on a principal's connection, the router posts the caller's
current access token (`subject_token`) to the issuer's token endpoint, as its own client
(`clientId`, `clientSecret`), asking for an access token whose `audience` and `resource`
are the upstream. The answer is kept in memory for that principal's connection until a
little before it expires; a 401 from the upstream exchanges once more. The token endpoint
is `tokenEndpoint`, else what the issuer's metadata (RFC 8414, then OpenID) names.

Nothing the exchange carries is logged; a refusal names the endpoint and the OAuth error.
"""

from __future__ import annotations

import time
from collections.abc import AsyncGenerator, Callable

import httpx2
from mcp.client.auth.utils import build_oauth_authorization_server_metadata_discovery_urls

from router.config.oauth import OAuthSettings
from router.core.errors import SignInNeeded

GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN = "urn:ietf:params:oauth:token-type:access_token"
MARGIN = 30.0
"""Seconds before its expiry an exchanged token is exchanged again."""
_OPENID = "/.well-known/openid-configuration"


class TokenExchange(httpx2.Auth):
    """The `httpx2.Auth` of one principal's connection to a token-exchange upstream."""

    def __init__(
        self,
        upstream: str,
        settings: OAuthSettings,
        issuer: str,
        resource: str,
        subject_token: Callable[[], str | None],
    ) -> None:
        """`subject_token()`: the principal's latest front access token."""
        assert settings.client_id is not None  # the config requires it for this grant
        self._upstream = upstream
        self._settings = settings
        self._issuer = issuer.rstrip("/")
        self._resource = resource
        self._subject_token = subject_token
        self._endpoint = settings.token_endpoint
        self._token: str | None = None
        self._expires = 0.0
        self.exchanges = 0

    def _fresh(self) -> bool:
        return self._token is not None and time.time() < self._expires - MARGIN

    async def async_auth_flow(
        self, request: httpx2.Request
    ) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        for attempt in range(2):
            exchanged = not self._fresh()
            if exchanged:
                steps = self._exchange()  # its requests go out on this flow, one by one
                try:
                    step = await steps.__anext__()
                    while True:
                        step = await steps.asend((yield step))
                except StopAsyncIteration:
                    pass
            request.headers["Authorization"] = f"Bearer {self._token}"
            response = yield request
            if response.status_code != 401 or exchanged or attempt:
                return
            self._token = None  # refused before it expired: exchange once more

    async def _exchange(self) -> AsyncGenerator[httpx2.Request, httpx2.Response]:
        """The requests of one exchange (discovery first, once); sets the token."""
        if self._endpoint is None:
            urls = build_oauth_authorization_server_metadata_discovery_urls(
                self._issuer, self._issuer
            )
            for url in [*urls, self._issuer + _OPENID]:
                response = yield httpx2.Request("GET", url, headers={"accept": "application/json"})
                await response.aread()
                if response.status_code == 200:
                    endpoint = _field(response, "token_endpoint")
                    if endpoint:
                        self._endpoint = endpoint
                        break
            if self._endpoint is None:
                raise SignInNeeded(
                    self._upstream,
                    f"the issuer {self._issuer} names no token endpoint; set oauth.tokenEndpoint",
                )
        subject = self._subject_token()
        if not subject:
            raise SignInNeeded(self._upstream, "no access token of the caller to exchange")
        response = yield self._grant(self._endpoint, subject)
        await response.aread()
        self.exchanges += 1
        token = _field(response, "access_token") if response.status_code == 200 else None
        if not token:
            error = _field(response, "error") or f"HTTP {response.status_code}"
            raise SignInNeeded(
                self._upstream, f"token exchange at {self._endpoint} was refused ({error})"
            )
        lifetime = _number(response, "expires_in")
        self._token = token
        self._expires = time.time() + (lifetime if lifetime is not None else 300.0)

    def _grant(self, endpoint: str, subject: str) -> httpx2.Request:
        settings = self._settings
        form = {
            "grant_type": GRANT,
            "subject_token": subject,
            "subject_token_type": ACCESS_TOKEN,
            "requested_token_type": ACCESS_TOKEN,
            "audience": settings.audience or self._resource,
            "resource": self._resource,
        }
        if settings.scope:
            form["scope"] = settings.scope
        assert settings.client_id is not None
        secret = settings.client_secret.get_secret_value() if settings.client_secret else None
        auth = None
        if secret is not None and settings.token_endpoint_auth_method != "client_secret_post":
            auth = httpx2.BasicAuth(settings.client_id, secret)
        else:
            form["client_id"] = settings.client_id
            if secret is not None:
                form["client_secret"] = secret
        request = httpx2.Request(
            "POST", endpoint, data=form, headers={"accept": "application/json"}
        )
        if auth is not None:
            request = next(auth.auth_flow(request))
        return request


def _field(response: httpx2.Response, name: str) -> str | None:
    try:
        value = response.json().get(name)
    except (ValueError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def _number(response: httpx2.Response, name: str) -> float | None:
    try:
        value = response.json().get(name)
    except (ValueError, AttributeError):
        return None
    return float(value) if isinstance(value, int | float) else None
