"""A remote entry's `oauth` section: how the router signs in to an OAuth-protected upstream.

Claude Code's own fields read as they are (`clientId`, `callbackPort`, `scopes` as one
space-separated string, `authServerMetadataUrl`); the router adds `clientSecret`,
`clientMetadataUrl` (a Client ID Metadata Document), `tokenEndpointAuthMethod`, and
`grant: "client_credentials"` with `clientSecret` or `privateKey` for machine-to-machine
upstreams, `perUser: true` for a sign-in per principal at the front, and
`grant: "token-exchange"` (RFC 8693: the caller's own access token exchanged at the front's
issuer for one whose audience is the upstream; per principal too). Secrets are `SecretStr`
and usually `${VAR}`. A remote entry without the section still signs in when its server asks
(a 401): discovery, then a CIMD or dynamic registration.
"""

from __future__ import annotations

import ipaddress
from typing import Any, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel
from pydantic_core import PydanticCustomError

from router.config.fields import ExpandedSecret, ExpandedText

__all__ = ["OAuthSettings", "may_carry_tokens"]


class OAuthSettings(BaseModel):
    """Sign-in to one remote upstream (keys in camelCase as Claude Code writes them, or
    snake_case)."""

    model_config = ConfigDict(extra="forbid", alias_generator=to_camel, populate_by_name=True)

    client_id: ExpandedText | None = None
    """A client registered with the authorization server beforehand (skips registration)."""
    client_secret: ExpandedSecret | None = Field(default=None, repr=False)
    callback_port: int | None = Field(default=None, ge=1, le=65535)
    """The loopback port of the redirect (`http://127.0.0.1:PORT/callback`); else a free one,
    kept for the next sign-in since a registered redirect URI names its port."""
    scopes: list[str] | None = None
    """Scopes to ask for instead of those the server advertises (a list, or one
    space-separated string as Claude Code writes it)."""
    client_metadata_url: str | None = None
    """An https URL of this client's metadata document (CIMD), used as its client id where
    the authorization server supports it."""
    auth_server_metadata_url: str | None = None
    """Claude Code's discovery override; read and kept, but discovery runs as the
    specification says (protected resource metadata first)."""
    token_endpoint_auth_method: (
        Literal["none", "client_secret_basic", "client_secret_post"] | None
    ) = None
    """How a pre-registered client authenticates at the token endpoint (default: basic
    with a secret, none without)."""
    grant: Literal["authorization_code", "client_credentials", "token-exchange"] = (
        "authorization_code"
    )
    per_user: bool = False
    """Each principal at the front signs in to this upstream itself, and its calls carry
    that principal's own token (`router.upstream.personal`); needs `router.http.oauth`."""
    token_endpoint: str | None = None
    """Token exchange: where to exchange (default: the front issuer's metadata says)."""
    audience: str | None = None
    """Token exchange: the audience asked for (default: the upstream's URL, its resource)."""
    private_key: ExpandedSecret | None = Field(default=None, repr=False)
    """Client credentials with `private_key_jwt`: the PEM key that signs the assertion."""
    signing_algorithm: str = "ES256"

    @field_validator("scopes", mode="before")
    @classmethod
    def _split_scopes(cls, value: Any) -> Any:
        return value.split() if isinstance(value, str) else value

    @field_validator("client_metadata_url", "auth_server_metadata_url")
    @classmethod
    def _https_url(cls, value: str | None) -> str | None:
        if value is None:
            return None
        parts = urlsplit(value)
        if parts.scheme != "https" or not parts.netloc or parts.path in ("", "/"):
            raise PydanticCustomError(
                "oauth_url",
                "'{value}' is not an https URL with a path",
                {"value": value},
            )
        return value

    @field_validator("token_endpoint")
    @classmethod
    def _exchange_endpoint(cls, value: str | None) -> str | None:
        if value is not None and not may_carry_tokens(value):
            raise PydanticCustomError(
                "oauth_url",
                "tokenEndpoint '{value}' must be an https URL (plain http only on loopback)",
                {"value": value},
            )
        return value

    @model_validator(mode="after")
    def _grant_needs(self) -> OAuthSettings:
        if self.grant == "token-exchange" and self.client_id is None:
            raise PydanticCustomError(
                "oauth_grant",
                "grant token-exchange needs clientId: the router's own client at the issuer",
                {},
            )
        if self.grant == "client_credentials" and self.per_user:
            raise PydanticCustomError(
                "oauth_grant",
                "perUser does not go with grant client_credentials, which signs in as the "
                "router itself",
                {},
            )
        if self.grant == "client_credentials":
            if self.client_id is None:
                raise PydanticCustomError(
                    "oauth_grant", "grant client_credentials needs clientId", {}
                )
            if (self.client_secret is None) == (self.private_key is None):
                raise PydanticCustomError(
                    "oauth_grant",
                    "grant client_credentials needs either clientSecret or privateKey",
                    {},
                )
        elif self.private_key is not None:
            raise PydanticCustomError(
                "oauth_grant", "privateKey is for grant client_credentials only", {}
            )
        return self

    @property
    def personal(self) -> bool:
        """Whether each principal has its own credentials here (token exchange always)."""
        return self.per_user or self.grant == "token-exchange"

    @property
    def scope(self) -> str | None:
        """The scopes as one OAuth `scope` string."""
        return " ".join(self.scopes) if self.scopes else None


def may_carry_tokens(url: str) -> bool:
    """Whether the router sends tokens to `url` at all: https anywhere, plain http only to
    this machine (tests, local servers)."""
    parts = urlsplit(url)
    if parts.scheme == "https":
        return True
    host = (parts.hostname or "").strip("[]")
    if parts.scheme != "http" or not host:
        return False
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False
