"""Who a request comes from, and what each principal may see: `router.http.oauth` (the HTTP
front as an OAuth 2.1 resource server) and `router.profiles`.

```json
"router": {
  "http": {"oauth": {"issuer": "https://idp.example.com/realms/team",
                     "audience": "https://router.example.com/mcp"}},
  "profiles": {
    "finance": {"groups": ["finance"], "allow": ["*"]},
    "default": {"deny": ["ledger/*"]}}}
```

A token is a JWT the issuer signed (its keys from `jwks_uri`, else the issuer's metadata), for
this `audience`, unexpired; or, with `introspection_endpoint`, whatever the issuer says is
active there (RFC 7662). Profiles match a principal by `subjects` (the `sub` claim) or
`groups` (the `groups_claim`); a principal matched by none gets the `default` profile, and so
does a request without identities (stdio, the static token). A profile's `deny` wins, then a
non-empty `allow` must name the tool; several matching profiles add up.
"""

from __future__ import annotations

from typing import Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from router.config.fields import ExpandedSecret, ExpandedText, Pattern
from router.config.oauth import may_carry_tokens

__all__ = ["DEFAULT_PROFILE", "FrontOAuth", "Operators", "Profile", "SigningAlgorithm"]

DEFAULT_PROFILE = "default"
"""The profile of a principal no other profile matches, and of requests without identities."""

SigningAlgorithm = Literal[
    "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512", "EdDSA"
]
"""Asymmetric algorithms only: a shared-secret (HS*) or unsigned (`none`) token proves
nothing about who issued it."""
DEFAULT_ALGORITHMS: tuple[SigningAlgorithm, ...] = ("RS256", "PS256", "ES256", "EdDSA")


def _token_url(field: str, value: str | None) -> str | None:
    if value is not None and not may_carry_tokens(value):
        raise PydanticCustomError(
            "oauth_url",
            "{field} '{value}' must be an https URL (plain http only on loopback)",
            {"field": field, "value": value},
        )
    return value


class FrontOAuth(BaseModel):
    """`router.http.oauth`: every request to the front carries an access token the issuer
    gave for this audience; its `sub` and groups are the request's principal."""

    model_config = ConfigDict(extra="forbid")

    issuer: ExpandedText
    """The authorization server (its `iss`); its metadata names the keys when `jwks_uri`
    is not given, and the protected resource metadata points clients to it."""
    audience: ExpandedText
    """This router's resource URL as clients reach it (`https://router.example.com/mcp`):
    tokens must name it in `aud`, and it is the `resource` of the metadata served."""
    jwks_uri: ExpandedText | None = None
    introspection_endpoint: ExpandedText | None = None
    """Tokens that are not JWTs are asked about here (RFC 7662), as this client."""
    client_id: ExpandedText | None = None
    client_secret: ExpandedSecret | None = Field(default=None, repr=False)
    scopes: list[str] = Field(default_factory=list)
    """Scopes every token must hold (403 `insufficient_scope` otherwise)."""
    groups_claim: str = Field(default="groups", min_length=1)
    """The claim that lists a principal's groups (a list, or one space-separated string)."""
    algorithms: list[SigningAlgorithm] = Field(
        default_factory=lambda: list(DEFAULT_ALGORITHMS), min_length=1
    )
    leeway: float = Field(default=30.0, ge=0, le=300)
    """Seconds of clock skew allowed on `exp`, `nbf` and `iat`."""

    @field_validator("issuer", "audience")
    @classmethod
    def _identity_url(cls, value: str, info: ValidationInfo) -> str:
        name = info.field_name or "url"
        result = _token_url(name, value)
        assert result is not None
        return result.rstrip("/") if name == "audience" else result

    @field_validator("jwks_uri", "introspection_endpoint")
    @classmethod
    def _endpoint(cls, value: str | None, info: ValidationInfo) -> str | None:
        return _token_url(info.field_name or "url", value)

    @model_validator(mode="after")
    def _introspection_client(self) -> FrontOAuth:
        if self.introspection_endpoint is not None and self.client_id is None:
            raise PydanticCustomError(
                "oauth_introspection",
                "introspection_endpoint needs client_id (and usually client_secret): the "
                "issuer answers registered resource servers only",
                {},
            )
        return self


class Profile(BaseModel):
    """One `router.profiles` entry: whom it applies to, and the tools they may see."""

    model_config = ConfigDict(extra="forbid")

    subjects: list[str] = Field(default_factory=list)
    """Principals by their `sub` claim, exactly."""
    groups: list[str] = Field(default_factory=list)
    """Principals by any of their groups."""
    allow: list[Pattern] = Field(default_factory=list)
    """`server/tool` globs or qualified names; empty: every tool `router.policy` allows."""
    deny: list[Pattern] = Field(default_factory=list)


class Operators(BaseModel):
    """`router.operators`: the principals who may approve a changed tool in a session, and
    read `/metrics` and the detailed `/healthz` (the CLI and the operator token always may)."""

    model_config = ConfigDict(extra="forbid")

    subjects: list[str] = Field(default_factory=list)
    """Principals by their `sub` claim, exactly."""
    groups: list[str] = Field(default_factory=list)
    """Principals by any of their groups."""
