"""A small OAuth authorization server for the front's identity tests, written the way a
team's identity provider behaves: RFC 8414 metadata, a JWKS of RSA and EC keys, RS256/ES256
access tokens, RFC 7662 introspection of opaque tokens for one registered resource
server, and RFC 8693 token exchange at `/token` for one registered client (an access token
it issued, traded for one of the same subject whose audience is the one asked for, with an
`act` claim naming the client). It runs on uvicorn inside the test's event loop, on loopback.
"""

from __future__ import annotations

import base64
import secrets
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio
import jwt
import pytest
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

INTROSPECTION_CLIENT = ("router-resource", "introspection-secret")
EXCHANGE_CLIENT = ("router-exchange", "exchange-secret")
TOKEN_EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange"


def _rsa() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@dataclass
class IdentityProvider:
    """Issues tokens; `url` is its issuer once `running` has started it."""

    url: str = ""
    signing: rsa.RSAPrivateKey = field(default_factory=_rsa)
    ec_signing: ec.EllipticCurvePrivateKey = field(
        default_factory=lambda: ec.generate_private_key(ec.SECP256R1())
    )
    jwks_fetches: int = 0
    introspections: int = 0
    opaque: dict[str, dict[str, Any]] = field(default_factory=dict)
    exchanges: list[dict[str, str]] = field(default_factory=list)
    """Each token exchange granted: the subject, the subject token's audience, the one asked."""

    def oauth(self, audience: str) -> dict[str, Any]:
        """The router's `http.oauth` settings for this provider: tokens for `audience` with
        the `mcp` scope, opaque ones introspected as the registered resource server."""
        client_id, secret = INTROSPECTION_CLIENT
        return {
            "issuer": self.url,
            "audience": audience,
            "scopes": ["mcp"],
            "introspection_endpoint": f"{self.url}/introspect",
            "client_id": client_id,
            "client_secret": secret,
        }

    def jwks(self) -> dict[str, Any]:
        rsa_jwk = jwt.algorithms.RSAAlgorithm.to_jwk(self.signing.public_key(), as_dict=True)
        ec_jwk = jwt.algorithms.ECAlgorithm.to_jwk(self.ec_signing.public_key(), as_dict=True)
        return {
            "keys": [
                {**rsa_jwk, "kid": "rsa-1", "use": "sig", "alg": "RS256"},
                {**ec_jwk, "kid": "ec-1", "use": "sig", "alg": "ES256"},
            ]
        }

    def claims(
        self, subject: str, audience: str, *, groups: list[str] | None = None, **extra: Any
    ) -> dict[str, Any]:
        now = int(time.time())
        claims: dict[str, Any] = {
            "iss": self.url,
            "sub": subject,
            "aud": audience,
            "iat": now,
            "exp": now + 300,
            "client_id": "team-client",
            "scope": "mcp",
        }
        if groups is not None:
            claims["groups"] = groups
        claims.update(extra)
        return claims

    def token(
        self, subject: str, audience: str, *, groups: list[str] | None = None, **extra: Any
    ) -> str:
        """An RS256 access token for `subject`, as the provider issues them."""
        claims = self.claims(subject, audience, groups=groups, **extra)
        return jwt.encode(claims, self.signing, algorithm="RS256", headers={"kid": "rsa-1"})

    def opaque_token(self, subject: str, audience: str, *, active: bool = True) -> str:
        token = secrets.token_urlsafe(24)
        self.opaque[token] = {
            "active": active,
            **self.claims(subject, audience, groups=["finance"]),
        }
        return token

    def app(self) -> Starlette:
        async def metadata(_: Request) -> JSONResponse:
            return JSONResponse(
                {
                    "issuer": self.url,
                    "authorization_endpoint": f"{self.url}/authorize",
                    "token_endpoint": f"{self.url}/token",
                    "jwks_uri": f"{self.url}/jwks",
                    "introspection_endpoint": f"{self.url}/introspect",
                    "response_types_supported": ["code"],
                    "code_challenge_methods_supported": ["S256"],
                }
            )

        async def keys(_: Request) -> JSONResponse:
            self.jwks_fetches += 1
            return JSONResponse(self.jwks())

        async def introspect(request: Request) -> JSONResponse:
            self.introspections += 1
            expected = base64.b64encode(":".join(INTROSPECTION_CLIENT).encode()).decode()
            if request.headers.get("authorization") != f"Basic {expected}":
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            form = await request.form()
            answer = self.opaque.get(str(form.get("token", "")), {"active": False})
            return JSONResponse(answer if answer["active"] else {"active": False})

        async def exchange(request: Request) -> JSONResponse:
            expected = base64.b64encode(":".join(EXCHANGE_CLIENT).encode()).decode()
            if request.headers.get("authorization") != f"Basic {expected}":
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            form = await request.form()
            if form.get("grant_type") != TOKEN_EXCHANGE:
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            try:
                subject = jwt.decode(
                    str(form.get("subject_token", "")),
                    self.signing.public_key(),
                    algorithms=["RS256"],
                    issuer=self.url,
                    options={"verify_aud": False},
                )
            except jwt.InvalidTokenError:
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            audience = str(form.get("audience") or form.get("resource") or "")
            self.exchanges.append(
                {"sub": subject["sub"], "from": str(subject.get("aud")), "audience": audience}
            )
            token = self.token(subject["sub"], audience, act={"sub": EXCHANGE_CLIENT[0]})
            return JSONResponse(
                {
                    "access_token": token,
                    "issued_token_type": "urn:ietf:params:oauth:token-type:access_token",
                    "token_type": "Bearer",
                    "expires_in": 300,
                }
            )

        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", metadata),
                Route("/token", exchange, methods=["POST"]),
                Route("/jwks", keys),
                Route("/introspect", introspect, methods=["POST"]),
            ]
        )


@asynccontextmanager
async def running_provider() -> AsyncIterator[IdentityProvider]:
    provider = IdentityProvider()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    provider.url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    server = uvicorn.Server(
        uvicorn.Config(provider.app(), log_config=None, access_log=False, ws="none")
    )
    try:
        async with anyio.create_task_group() as group:
            # The socket listens already: requests queue until uvicorn serves them.
            group.start_soon(server.serve, [sock])
            try:
                yield provider
            finally:
                server.should_exit = True
    finally:
        sock.close()


@pytest.fixture(scope="module", name="provider")
async def module_provider() -> AsyncIterator[IdentityProvider]:
    """One running provider for the test module. Import it into the module that asks for
    `provider`."""
    async with running_provider() as running:
        yield running


def bearer(token: str) -> dict[str, str]:
    """The `Authorization` header that presents `token`."""
    return {"Authorization": f"Bearer {token}"}
