"""Access tokens at the front (`router.http.oauth`): a JWT the issuer signed for this
audience, or an opaque token the issuer's introspection endpoint says is active.

A JWT's header must name one of the configured asymmetric algorithms before anything else
is read (`none` and HS* never verify: a shared secret or no signature proves nothing about
who issued it); its key must be one the issuer publishes, chosen by `kid`; then PyJWT checks
the signature, `iss`, `aud`, `exp`, `nbf` and `iat` with the configured leeway. The issuer's
keys are fetched at first use and again when a token names a key not among them, at most
once per `REFRESH_FLOOR` seconds, so made-up key ids cannot make the router hammer the
issuer. Introspection answers are kept until the token expires (at most `INTROSPECTION_TTL`
seconds, `MAX_INTROSPECTED` of them), by the token's hash; so are refusals (a token the
issuer says is inactive, or whose answer fails a check: `REFUSED_TTL` seconds,
`MAX_REFUSED` of them), so a client retrying a dead token asks the issuer once. The
introspection requests themselves go through a token bucket (`INTROSPECTION_BURST`,
refilled at `INTROSPECTION_RATE` a second): a burst of made-up opaque tokens costs the issuer
at most the bucket, and a token that finds it empty gets `IntrospectionThrottled` (503 with
`Retry-After`, not 401: the token may be good, and a 401 would send its client to sign in
again), while cached answers are still served. A rejection's reason goes back in
`WWW-Authenticate` and the log; the token itself never does.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import anyio
import httpx2
import jwt
from mcp.server.auth.provider import AccessToken

from router.config.identity import FrontOAuth
from router.core.errors import RouterError

logger = logging.getLogger(__name__)

REFRESH_FLOOR = 30.0
"""The fewest seconds between two fetches of the issuer's keys."""
KEYS_LIFETIME = 3600.0
"""Seconds the issuer's keys are trusted before they are fetched again at the next token."""
FETCH_TIMEOUT = 10.0
MAX_DOCUMENT_BYTES = 1 << 20
"""The largest metadata, key set or introspection answer read from the issuer."""
INTROSPECTION_TTL = 60.0
MAX_INTROSPECTED = 1024
REFUSED_TTL = 60.0
"""Seconds a token the issuer refused stays refused without asking again."""
MAX_REFUSED = 1024
INTROSPECTION_BURST = 32
"""Introspection requests the issuer gets at once, at most, from one front."""
INTROSPECTION_RATE = MAX_INTROSPECTED / INTROSPECTION_TTL
"""Introspection requests a second in the long run: enough to keep every cached token's
answer fresh (about 17), so only a flood of tokens nobody holds finds the bucket empty."""
RETRY_AFTER = 30
"""Seconds a client is told to wait when the issuer cannot be reached."""


class TokenRejected(RouterError):
    """The token does not authorize this request; `reason` says why (never the token)."""

    def __init__(self, reason: str, *, error: str = "invalid_token") -> None:
        super().__init__(reason)
        self.reason = reason
        self.error = error


class IssuerUnreachable(RouterError):
    """The issuer's metadata, keys or introspection endpoint did not answer usefully;
    `retry_after` is the seconds a client should wait (503 with `Retry-After`)."""

    retry_after: int = RETRY_AFTER


class IntrospectionThrottled(IssuerUnreachable):
    """The introspection bucket is empty: the token is not refused, only not asked about."""

    def __init__(self, wait: float) -> None:
        super().__init__("too many unknown tokens to introspect; try again shortly")
        self.retry_after = max(1, math.ceil(wait))


class TokenBucket:
    """`size` requests at once, refilled at `rate` a second; `take` says how long to wait
    (0: taken). Not thread-safe: one event loop takes from it."""

    def __init__(self, size: int, rate: float, clock: Callable[[], float] = time.monotonic) -> None:
        self.size = size
        self.rate = rate
        self.clock = clock
        self._tokens = float(size)
        self._at = clock()

    def take(self) -> float:
        now = self.clock()
        self._tokens = min(self.size, self._tokens + (now - self._at) * self.rate)
        self._at = now
        if self._tokens >= 1:
            self._tokens -= 1
            return 0.0
        return (1 - self._tokens) / self.rate


def looks_like_jwt(token: str) -> bool:
    return token.count(".") == 2


async def _fetch_json(
    method: str, url: str, *, data: Mapping[str, str] | None = None, auth: Any = None
) -> dict[str, Any]:
    """A bounded JSON document from the issuer (no redirects: the configured URLs are
    where the issuer's documents live)."""
    try:
        async with (
            httpx2.AsyncClient(timeout=FETCH_TIMEOUT, follow_redirects=False) as client,
            client.stream(method, url, data=data, auth=auth) as response,
        ):
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_DOCUMENT_BYTES:
                    raise IssuerUnreachable(f"{url} answered over {MAX_DOCUMENT_BYTES} bytes")
            status = response.status_code
    except httpx2.HTTPError as exc:
        raise IssuerUnreachable(f"{url}: {type(exc).__name__}") from None
    if status != 200:
        raise IssuerUnreachable(f"{url} answered HTTP {status}")
    try:
        document = json.loads(body)
    except ValueError:
        raise IssuerUnreachable(f"{url} did not answer JSON") from None
    if not isinstance(document, dict):
        raise IssuerUnreachable(f"{url} did not answer a JSON object")
    return document


class IssuerMetadata:
    """The issuer's endpoints: configured, else discovered once (RFC 8414, then OpenID
    Connect discovery), and only from metadata whose `issuer` is the configured one."""

    def __init__(self, settings: FrontOAuth) -> None:
        self._issuer = settings.issuer
        self._document: dict[str, Any] | None = None
        self._failure: tuple[float, IssuerUnreachable] | None = None
        self._lock = anyio.Lock()

    async def endpoint(self, name: str) -> str | None:
        async with self._lock:
            if self._document is None:
                failure = self._failure
                if failure is not None and time.monotonic() - failure[0] < REFRESH_FLOOR:
                    raise failure[1]  # not asked again before the floor is out
                try:
                    self._document = await self._discover()
                except IssuerUnreachable as exc:
                    self._failure = (time.monotonic(), exc)
                    raise
        value = self._document.get(name)
        return value if isinstance(value, str) else None

    async def _discover(self) -> dict[str, Any]:
        issuer = self._issuer.rstrip("/")
        scheme, _, rest = issuer.partition("://")
        authority, _, path = rest.partition("/")
        path = f"/{path}" if path else ""
        candidates = [
            f"{scheme}://{authority}/.well-known/oauth-authorization-server{path}",
            f"{issuer}/.well-known/openid-configuration",
        ]
        failures = []
        for url in candidates:
            try:
                document = await _fetch_json("GET", url)
            except IssuerUnreachable as exc:
                failures.append(str(exc))
                continue
            if str(document.get("issuer", "")).rstrip("/") != issuer:
                failures.append(f"{url} names another issuer")
                continue
            return document
        raise IssuerUnreachable("no usable issuer metadata: " + "; ".join(failures))


class KeySet:
    """The issuer's signing keys, by `kid`."""

    def __init__(self, settings: FrontOAuth, metadata: IssuerMetadata) -> None:
        self._configured = settings.jwks_uri
        self._metadata = metadata
        self._keys: dict[str | None, jwt.PyJWK] = {}
        self._fetched_at = -REFRESH_FLOOR
        self._lock = anyio.Lock()

    async def key_for(self, kid: str | None) -> jwt.PyJWK:
        key = self._find(kid) if self._fresh() else None
        if key is None:
            async with self._lock:
                key = self._find(kid) if self._fresh() else None
                if key is None and time.monotonic() - self._fetched_at >= REFRESH_FLOOR:
                    await self._fetch()
                    key = self._find(kid)
        if key is None:
            raise TokenRejected("signed by a key the issuer does not publish")
        return key

    def _fresh(self) -> bool:
        return time.monotonic() - self._fetched_at < KEYS_LIFETIME

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if kid is not None:
            return self._keys.get(kid)
        # A token without `kid` is only unambiguous when the issuer publishes one key.
        return next(iter(self._keys.values())) if len(self._keys) == 1 else None

    async def _fetch(self) -> None:
        self._fetched_at = time.monotonic()  # a failed fetch waits the floor out as well
        uri = self._configured or await self._metadata.endpoint("jwks_uri")
        if uri is None:
            raise IssuerUnreachable("the issuer's metadata names no jwks_uri")
        document = await _fetch_json("GET", uri)
        keys: dict[str | None, jwt.PyJWK] = {}
        for entry in document.get("keys", []):
            if not isinstance(entry, dict) or entry.get("use", "sig") != "sig":
                continue
            try:
                key = jwt.PyJWK(entry)
            except jwt.PyJWTError:
                continue  # a key type this build cannot use: others may still verify
            keys[entry.get("kid")] = key
        if not keys:
            raise IssuerUnreachable(f"{uri} holds no usable signing key")
        self._keys = keys


class FrontTokens:
    """Verifies the bearer tokens of the front; `verify` returns the SDK's `AccessToken`
    (`subject` is `sub`, `claims` every claim) or raises `TokenRejected`."""

    def __init__(self, settings: FrontOAuth) -> None:
        self.settings = settings
        self._metadata = IssuerMetadata(settings)
        self._keys = KeySet(settings, self._metadata)
        self._introspected: OrderedDict[bytes, tuple[float, AccessToken]] = OrderedDict()
        self._refused: OrderedDict[bytes, tuple[float, str]] = OrderedDict()
        self.introspection_bucket = TokenBucket(INTROSPECTION_BURST, INTROSPECTION_RATE)
        self._audiences = [settings.audience, settings.audience + "/"]

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's `TokenVerifier` protocol."""
        try:
            return await self.verify(token)
        except (TokenRejected, IssuerUnreachable):
            return None

    async def verify(self, token: str) -> AccessToken:
        if looks_like_jwt(token):
            claims = await self._jwt_claims(token)
        elif self.settings.introspection_endpoint is not None:
            return await self._introspect(token)
        else:
            raise TokenRejected("not a JWT, and no introspection_endpoint is configured")
        return self._access_token(token, claims)

    async def _jwt_claims(self, token: str) -> dict[str, Any]:
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise TokenRejected("malformed token") from None
        algorithm = header.get("alg")
        if algorithm not in self.settings.algorithms:
            raise TokenRejected(f"signing algorithm {str(algorithm)[:20]!r} is not accepted")
        kid = header.get("kid")
        key = await self._keys.key_for(kid if isinstance(kid, str) else None)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key.key,
                algorithms=[algorithm],
                audience=self._audiences,
                issuer=self.settings.issuer,
                leeway=self.settings.leeway,
                options={"require": ["exp", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError:
            raise TokenRejected("token expired") from None
        except jwt.InvalidAudienceError:
            raise TokenRejected(f"token not issued for {self.settings.audience}") from None
        except jwt.InvalidIssuerError:
            raise TokenRejected(f"token not issued by {self.settings.issuer}") from None
        except jwt.InvalidSignatureError:
            raise TokenRejected("signature does not verify") from None
        except jwt.PyJWTError as exc:
            raise TokenRejected(f"invalid token ({type(exc).__name__})") from None
        return claims

    async def _introspect(self, token: str) -> AccessToken:
        digest = hashlib.sha256(token.encode()).digest()
        now = time.time()
        kept = self._introspected.get(digest)
        if kept is not None and kept[0] > now:
            self._introspected.move_to_end(digest)
            return kept[1]
        refused = self._refused.get(digest)
        if refused is not None and refused[0] > now:
            raise TokenRejected(refused[1])
        wait = self.introspection_bucket.take()
        if wait > 0:
            raise IntrospectionThrottled(wait)
        settings = self.settings
        assert settings.introspection_endpoint is not None and settings.client_id is not None
        secret = settings.client_secret.get_secret_value() if settings.client_secret else ""
        answer = await _fetch_json(
            "POST",
            settings.introspection_endpoint,
            data={"token": token, "token_type_hint": "access_token"},
            auth=(settings.client_id, secret),
        )
        try:
            access, until = self._accepted(token, answer, now)
        except TokenRejected as exc:
            self._refused.pop(digest, None)
            self._refused[digest] = (now + REFUSED_TTL, exc.reason)
            while len(self._refused) > MAX_REFUSED:
                self._refused.popitem(last=False)
            raise
        self._introspected[digest] = (until, access)
        while len(self._introspected) > MAX_INTROSPECTED:
            self._introspected.popitem(last=False)
        return access

    def _accepted(
        self, token: str, answer: dict[str, Any], now: float
    ) -> tuple[AccessToken, float]:
        """The access token an introspection answer grants, and until when it is kept."""
        settings = self.settings
        if answer.get("active") is not True:
            raise TokenRejected("token not active")
        if "iss" in answer and str(answer["iss"]).rstrip("/") != settings.issuer.rstrip("/"):
            raise TokenRejected(f"token not issued by {settings.issuer}")
        audience = answer.get("aud")
        audiences = audience if isinstance(audience, list) else [audience]
        if not any(a in self._audiences for a in audiences):
            raise TokenRejected(f"token not issued for {settings.audience}")
        expires = answer.get("exp")
        if isinstance(expires, int | float) and expires + settings.leeway < now:
            raise TokenRejected("token expired")
        if not isinstance(answer.get("sub"), str):
            raise TokenRejected("the introspection answer names no subject (sub)")
        access = self._access_token(token, answer)
        until = now + INTROSPECTION_TTL
        if isinstance(expires, int | float):
            until = min(until, float(expires))
        return access, until

    def _access_token(self, token: str, claims: dict[str, Any]) -> AccessToken:
        scope = claims.get("scope", claims.get("scp", ""))
        scopes = scope.split() if isinstance(scope, str) else [str(s) for s in scope or []]
        client = claims.get("client_id", claims.get("azp", ""))
        expires = claims.get("exp")
        return AccessToken(
            token=token,
            client_id=str(client),
            scopes=scopes,
            expires_at=int(expires) if isinstance(expires, int | float) else None,
            resource=self.settings.audience,
            subject=str(claims["sub"]),
            claims=claims,
        )

    def missing_scopes(self, access: AccessToken) -> list[str]:
        return [scope for scope in self.settings.scopes if scope not in access.scopes]
