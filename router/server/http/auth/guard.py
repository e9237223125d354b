"""The ASGI middleware in front of every HTTP endpoint: it applies the `SecurityPolicy`
before any route runs, so a refused request reaches neither the MCP session nor an upstream.

Checks run cheapest first and before the body is read, so an unauthenticated client cannot
make the router buffer a large body: Host (421), Origin (403), token (401), then the body
size (413: a declared `Content-Length` over the limit at once, a streamed body once it
passes the limit). The body is then replayed to the app. A GET or HEAD of a public path (the
playground's page and files, which hold no data) needs no token, nor a POST of a public form
(a per-user key's, which its route checks); Host, Origin and the body limit still apply.

Why not the SDK's own checks (`mcp.server.transport_security`): its `TransportSecurityMiddleware`
and `RequestBodyLimitMiddleware` sit inside the MCP transports only, so the REST API and
`/healthz` would go unguarded; its Host/Origin matching knows exact values and `name:*` but
not `*`, so `allowed_hosts: ["*"]` could not be said; it checks no bearer token; and it
answers in plain text, where our clients get JSON (JSON-RPC on the MCP endpoints) naming the
setting to change. The transports still get the same body limit (`McpEndpoints`), so a
request that reached them some other way is bounded too.
"""

from __future__ import annotations

import logging
from collections import deque

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from router.core.errors import HttpRefusal
from router.server.access.authorization import ANONYMOUS, OPERATOR
from router.server.http.auth.resource_metadata import challenge
from router.server.http.auth.security import SecurityPolicy
from router.server.http.auth.tokens import IssuerUnreachable, TokenRejected
from router.server.http.errors import error_response, is_mcp_path

_Refusal = tuple[int, str, dict[str, str] | None]

OPERATOR_PATHS = frozenset({"/metrics", "/healthz"})
"""Where the operator token (`ROUTER_OPERATOR_TOKEN`) is accepted, and nowhere else."""
DETAIL_PATHS = frozenset({"/healthz"})
"""Public paths whose answer has more for a caller who shows a credential: one sent there
is checked like any other, so an operator's detail needs a token that verifies."""

logger = logging.getLogger(__name__)


class GuardMiddleware:
    """Refuses requests the policy does not allow; passes lifespan events through."""

    def __init__(
        self,
        app: ASGIApp,
        policy: SecurityPolicy,
        public_paths: frozenset[str] = frozenset(),
        public_forms: frozenset[str] = frozenset(),
    ) -> None:
        """`public_forms`: paths a browser POSTs a form to without a token (the route
        checks what the form carries: `/keys/start`, a flow's cookie and CSRF token)."""
        self.app = app
        self.policy = policy
        self.public_paths = public_paths
        self.public_forms = public_forms

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        path = scope["path"]
        public = scope["method"] in ("GET", "HEAD") and path in self.public_paths
        public = public or (scope["method"] == "POST" and path in self.public_forms)
        if public and path in DETAIL_PATHS and headers.get("authorization"):
            public = False
        if path in OPERATOR_PATHS and self.policy.operator_accepted(headers.get("authorization")):
            scope[OPERATOR] = public = True
        elif public and self.policy.guarded:  # an open front has no credential to show
            scope[ANONYMOUS] = True
        refusal = self._refusal(headers, public=public)
        if refusal is None and not public and self.policy.tokens is not None:
            refusal = await self._authenticate(scope, headers)
        if refusal is None:
            declared = headers.get("content-length", "")
            if declared.isdigit() and int(declared) > self.policy.max_body_bytes:
                refusal = 413, self._too_large(), None
        if refusal is None:
            replay = await self._read_body(receive)
            if replay is not None:
                await self.app(scope, replay, send)
                return
            refusal = 413, self._too_large(), None
        status, message, extra = refusal
        logger.warning("refused %s %s (%d): %s", scope["method"], scope["path"], status, message)
        response = error_response(
            HttpRefusal(status, message, extra), mcp=is_mcp_path(scope["path"])
        )
        await response(scope, receive, send)

    def _refusal(self, headers: Headers, *, public: bool) -> _Refusal | None:
        policy = self.policy
        host = headers.get("host")
        if not policy.host_allowed(host):
            return 421, f"Host {host!r} is not allowed (router.http.allowed_hosts)", None
        origin = headers.get("origin")
        if not policy.origin_allowed(origin, host):
            return 403, f"Origin {origin!r} is not allowed (router.http.allowed_origins)", None
        if not public and not policy.token_accepted(headers.get("authorization")):
            # Never echo what was sent: it may be a real credential meant for elsewhere.
            message = "missing or wrong bearer token (Authorization: Bearer ...)"
            return 401, message, {"WWW-Authenticate": "Bearer"}
        return None

    async def _authenticate(self, scope: Scope, headers: Headers) -> _Refusal | None:
        """The request's access token verified (`router.http.oauth`): its principal goes
        into `scope["user"]`, where the SDK's transports bind each session to it and
        `AuthContextMiddleware` hands it to the handlers."""
        tokens = self.policy.tokens
        assert tokens is not None
        scheme, _, credential = (headers.get("authorization") or "").partition(" ")
        credential = credential.strip()
        if scheme.lower() != "bearer" or not credential:
            message = "this router needs an OAuth access token (Authorization: Bearer ...)"
            return 401, message, {"WWW-Authenticate": challenge(tokens.settings)}
        try:
            access = await tokens.verify(credential)
        except TokenRejected as exc:
            header = challenge(tokens.settings, error=exc.error, description=exc.reason)
            return 401, f"access token refused: {exc.reason}", {"WWW-Authenticate": header}
        except IssuerUnreachable as exc:
            # The issuer's fault, not the client's: 503, so the client tries again later.
            retry = {"Retry-After": str(exc.retry_after)}
            return 503, f"cannot verify access tokens now: {exc}", retry
        missing = tokens.missing_scopes(access)
        if missing:
            reason = f"the token lacks the scope {' '.join(missing)}"
            header = challenge(tokens.settings, error="insufficient_scope", description=reason)
            return 403, reason, {"WWW-Authenticate": header}
        scope["user"] = AuthenticatedUser(access)
        scope["auth"] = AuthCredentials(access.scopes)
        return None

    def _too_large(self) -> str:
        return f"request body over {self.policy.max_body_bytes} bytes (router.http.max_body_bytes)"

    async def _read_body(self, receive: Receive) -> Receive | None:
        """Read the whole body within the limit; a `receive` that replays it, else None."""
        limit = self.policy.max_body_bytes
        size = 0
        cached: deque[Message] = deque()
        while True:
            message = await receive()
            cached.append(message)
            if message["type"] != "http.request":
                break
            size += len(message.get("body", b""))
            if size > limit:
                return None
            if not message.get("more_body", False):
                break

        async def replay() -> Message:
            return cached.popleft() if cached else await receive()

        return replay
