"""An OAuth-protected upstream on the mcp SDK, written as a third party would write one: an
`MCPServer` over streamable HTTP with the SDK's own auth support, its authorization server an
in-memory `OAuthAuthorizationServerProvider` in the same process.

The authorization server registers clients dynamically (RFC 7591), grants codes with PKCE
(its authorize endpoint approves at once and redirects to the client's `redirect_uri` with the
code and state, as a person clicking "allow" would), refreshes tokens (rotating both), and
issues access tokens that live `--token-lifetime` seconds (taken up to `CLOCK_LEEWAY` seconds
longer), so refresh can be tested. The MCP endpoint is `/mcp`; the authorization server's
endpoints are the SDK's (`/register`, `/authorize`, `/token`, the metadata documents).

Tools: `whoami()` (the client and scopes of the token the call came with),
`get_forecast(city, days)` and `my_notes()` (the notes of the person the token was issued
to).

With `--login` the authorize endpoint does not approve at once: it sends the browser to
`/login?request=ID`, a page asking who signs in, and `GET /login?request=ID&user=NAME`
approves for NAME, as a person typing their name would; tokens then carry that subject.

Not part of the MCP server, for the tests only (no token needed, loopback only):
`GET /control/stats` counts what the authorization server did (registrations,
authorizations, code and refresh grants, refused refreshes, rejected tokens);
`POST /control/revoke?what=refresh|all` forgets every refresh token (or every token), as an
administrator revoking a grant would; `GET /control/revoked` lists each token revoked at the
RFC 7009 endpoint (`/revoke`, offered in the metadata with `--revocation`): its kind, the
first 16 hex digits of its sha256 and the client that authenticated (as it registered);
`GET /control/calls` lists each tool call with its token's subject and the first 16 hex
digits of its token's sha256, and `GET /control/tokens` maps those digits to the subject each
access token was issued to. Each grant is also logged on stderr, never a token.

    python -m tests.upstreams.oauth_protected [--port 0] [--token-lifetime 3600]
        [--scopes notes:read ...] [--login] [--revocation]

prints `http://127.0.0.1:PORT/mcp` on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import hashlib
import secrets
import socket
import sys
import time
from collections import Counter

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    TokenError,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions, RevocationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response

DEFAULT_SCOPES = ["notes:read"]
CODE_LIFETIME = 300
CLOCK_LEEWAY = 2
"""Seconds past its expiry an access token is still taken, as resource servers allow for
clock skew; it also covers `expires_at` being whole seconds, so a client that refreshes when
its own count of `expires_in` runs out never meets a token this server already refuses."""


def _say(text: str) -> None:
    print(f"oauth_protected: {text}", file=sys.stderr, flush=True)


class MemoryAuthorizationServer(
    OAuthAuthorizationServerProvider[AuthorizationCode, RefreshToken, AccessToken]
):
    """Everything in dictionaries; a restart forgets every client and token."""

    def __init__(self, token_lifetime: int, resource: str, *, login: bool = False) -> None:
        self.token_lifetime = token_lifetime
        self.resource = resource
        self.login = login
        self.waiting: dict[str, tuple[OAuthClientInformationFull, AuthorizationParams]] = {}
        self.issued: dict[str, str] = {}
        """Access tokens' digests -> the subject each was issued to."""
        self.calls: list[dict[str, str]] = []
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access_tokens: dict[str, AccessToken] = {}
        self.refresh_tokens: dict[str, RefreshToken] = {}
        self.counts: Counter[str] = Counter()
        self.revoked: list[dict[str, str]] = []

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None  # the registration handler assigns one
        self.clients[client_info.client_id] = client_info
        self.counts["registrations"] += 1
        _say(f"registered client {client_info.client_id}")

    async def authorize(
        self, client: OAuthClientInformationFull, params: AuthorizationParams
    ) -> str:
        """Approve at once (the redirect a person's "allow" would lead to), or with
        `login`, send the browser to the page that asks who signs in."""
        if self.login:
            request = secrets.token_urlsafe(16)
            self.waiting[request] = (client, params)
            return f"{self.resource.removesuffix('/mcp')}/login?request={request}"
        return self.approve(client, params, "test-user")

    def approve(
        self, client: OAuthClientInformationFull, params: AuthorizationParams, subject: str
    ) -> str:
        code = secrets.token_urlsafe(32)
        self.codes[code] = AuthorizationCode(
            code=code,
            scopes=params.scopes or [],
            expires_at=time.time() + CODE_LIFETIME,
            client_id=str(client.client_id),
            code_challenge=params.code_challenge,
            redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly,
            resource=params.resource,
            subject=subject,
        )
        self.counts["authorizations"] += 1
        _say(f"authorized client {client.client_id}")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: str
    ) -> AuthorizationCode | None:
        code = self.codes.get(authorization_code)
        return code if code is not None and code.client_id == client.client_id else None

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: AuthorizationCode
    ) -> OAuthToken:
        if self.codes.pop(authorization_code.code, None) is None:
            raise TokenError("invalid_grant", "authorization code already used")
        self.counts["code_grants"] += 1
        _say(f"code grant for client {client.client_id}")
        return self._issue(
            str(client.client_id),
            authorization_code.scopes,
            authorization_code.resource,
            authorization_code.subject,
        )

    async def load_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: str
    ) -> RefreshToken | None:
        token = self.refresh_tokens.get(refresh_token)
        if token is None or token.client_id != client.client_id:
            self.counts["refused_refreshes"] += 1
            _say(f"refused a refresh for client {client.client_id}")
            return None
        return token

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: RefreshToken, scopes: list[str]
    ) -> OAuthToken:
        if self.refresh_tokens.pop(refresh_token.token, None) is None:
            raise TokenError("invalid_grant", "refresh token already used")
        self.counts["refresh_grants"] += 1
        _say(f"refresh grant for client {client.client_id}")
        return self._issue(
            str(client.client_id), scopes, refresh_token.resource, refresh_token.subject
        )

    def _issue(
        self, client_id: str, scopes: list[str], resource: str | None, subject: str | None
    ) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(32), secrets.token_urlsafe(32)
        self.issued[digest(access)] = subject or ""
        self.access_tokens[access] = AccessToken(
            token=access,
            client_id=client_id,
            scopes=scopes,
            expires_at=int(time.time()) + self.token_lifetime,
            resource=resource,
            subject=subject,
        )
        self.refresh_tokens[refresh] = RefreshToken(
            token=refresh, client_id=client_id, scopes=scopes, resource=resource, subject=subject
        )
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.token_lifetime,
            refresh_token=refresh,
            scope=" ".join(scopes) or None,
        )

    async def load_access_token(self, token: str) -> AccessToken | None:
        access = self.access_tokens.get(token)
        expired = (
            access is not None
            and access.expires_at is not None
            and (time.time() > access.expires_at + CLOCK_LEEWAY)
        )
        if access is None or expired:
            self.counts["rejected_tokens"] += 1
            return None
        return access

    async def revoke_token(self, token: AccessToken | RefreshToken) -> None:
        """RFC 7009's endpoint: reached only by the client the token was issued to, which
        the SDK's handler authenticated by its registered method."""
        client = self.clients.get(token.client_id)
        self.revoked.append(
            {
                "kind": "refresh" if isinstance(token, RefreshToken) else "access",
                "token": digest(token.token),
                "client": token.client_id,
                "auth": (client.token_endpoint_auth_method or "") if client else "",
            }
        )
        self.access_tokens.pop(token.token, None)
        self.refresh_tokens.pop(token.token, None)
        _say(f"revoked a token of client {token.client_id}")

    def revoke_all(self, what: str) -> None:
        self.refresh_tokens.clear()
        if what == "all":
            self.access_tokens.clear()
        self.counts["revocations"] += 1
        _say(f"revoked every {'token' if what == 'all' else 'refresh token'}")


def digest(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()[:16]


def build(
    port: int,
    token_lifetime: int,
    scopes: list[str],
    login: bool = False,
    revocation: bool = False,
) -> MCPServer:
    base = f"http://127.0.0.1:{port}"
    provider = MemoryAuthorizationServer(token_lifetime, f"{base}/mcp", login=login)
    app = MCPServer(
        "oauth-protected",
        auth_server_provider=provider,
        # From plain strings, so the issuer keeps its exact form (no trailing slash added).
        auth=AuthSettings.model_validate(
            {
                "issuer_url": base,
                "resource_server_url": f"{base}/mcp",
                "validate_token_resource": True,
                "required_scopes": scopes,
                "client_registration_options": ClientRegistrationOptions(
                    enabled=True, valid_scopes=scopes, default_scopes=scopes
                ),
                "revocation_options": RevocationOptions(enabled=revocation),
            }
        ),
        log_level="WARNING",
    )

    @app.tool()
    async def whoami() -> str:
        """Which client this call's token was issued to, and with which scopes."""
        token = get_access_token()
        if token is None:
            return "anonymous"
        return f"client {token.client_id} with scopes {' '.join(token.scopes) or 'none'}"

    def noted(tool: str) -> str:
        token = get_access_token()
        subject = (token.subject or "") if token else ""
        provider.calls.append(
            {"tool": tool, "subject": subject, "token": digest(token.token) if token else ""}
        )
        return subject

    @app.tool()
    async def my_notes() -> str:
        """Read the notes of the signed-in person."""
        subject = noted("my_notes")
        return f"notes of {subject}: buy milk" if subject else "no one is signed in"

    @app.tool()
    async def get_forecast(city: str, days: int = 3) -> str:
        """Get the weather forecast for a city for the next days."""
        return f"{city}: sunny for {days} days"

    async def stats(request: Request) -> Response:
        return JSONResponse(dict(provider.counts))

    async def calls(request: Request) -> Response:
        return JSONResponse(provider.calls)

    async def tokens(request: Request) -> Response:
        return JSONResponse(provider.issued)

    async def revoked(request: Request) -> Response:
        return JSONResponse(provider.revoked)

    async def login_page(request: Request) -> Response:
        waiting = provider.waiting.get(request.query_params.get("request", ""))
        if waiting is None:
            return Response("unknown sign-in request", status_code=400)
        user = request.query_params.get("user")
        if not user:
            return Response("<form><input name=user></form>", media_type="text/html")
        del provider.waiting[request.query_params["request"]]
        return RedirectResponse(provider.approve(*waiting, user), status_code=302)

    async def revoke(request: Request) -> Response:
        what = request.query_params.get("what", "refresh")
        if what not in ("refresh", "all"):
            return JSONResponse({"error": "what: refresh or all"}, status_code=400)
        provider.revoke_all(what)
        return JSONResponse(dict(provider.counts))

    # Routes outside the MCP endpoint, so no token is asked for (called, not used as
    # decorators: `custom_route` is unannotated, and would make the handlers untyped).
    app.custom_route("/control/stats", methods=["GET"])(stats)
    app.custom_route("/control/revoke", methods=["POST"])(revoke)
    app.custom_route("/control/calls", methods=["GET"])(calls)
    app.custom_route("/control/tokens", methods=["GET"])(tokens)
    app.custom_route("/control/revoked", methods=["GET"])(revoked)
    app.custom_route("/login", methods=["GET"])(login_page)

    return app


async def serve(
    port: int, token_lifetime: int, scopes: list[str], login: bool, revocation: bool
) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    bound: int = sock.getsockname()[1]
    app = build(bound, token_lifetime, scopes, login, revocation).streamable_http_app(
        host="127.0.0.1"
    )
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", timeout_graceful_shutdown=1
    )
    print(f"http://127.0.0.1:{bound}/mcp", flush=True)
    await uvicorn.Server(config).serve([sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument(
        "--token-lifetime", type=int, default=3600, help="seconds an access token is valid"
    )
    parser.add_argument(
        "--scopes", nargs="+", default=DEFAULT_SCOPES, help="the scopes the MCP endpoint requires"
    )
    parser.add_argument(
        "--login", action="store_true", help="ask who signs in instead of approving at once"
    )
    parser.add_argument(
        "--revocation", action="store_true", help="offer RFC 7009 revocation at /revoke"
    )
    options = parser.parse_args(argv)
    try:
        anyio.run(
            serve,
            options.port,
            options.token_lifetime,
            options.scopes,
            options.login,
            options.revocation,
        )
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
