"""An MCP server that trusts a team's identity provider, written as a third party would: an
`MCPServer` over streamable HTTP whose `TokenVerifier` takes the provider's RS256 JWTs (its
keys from the provider's JWKS) when their audience is this server's own URL.

Tools: `whoami()` (the subject, the audience and the `act` claim of the token the call came
with). What each caller lists is its own: a tool `payslip_<subject>`, a resource
`hr://<subject>/performance-review-2026` ("rating 2/5, PIP") and a prompt
`<subject>-private-feedback`, each listed, read or called for that subject only. Not part
of the MCP server, for the tests (no token needed, loopback only): `GET /control/calls`
lists each call's subject, audience and the first 16 hex digits of its token's sha256.

    python -m tests.upstreams.team_api --issuer URL [--port 0]

prints `http://127.0.0.1:PORT/mcp` on stdout once it accepts connections.
"""

from __future__ import annotations

import argparse
import hashlib
import socket
import sys
from typing import Any

import anyio
import httpx2
import jwt
import uvicorn
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.lowlevel.helper_types import ReadResourceContents
from mcp.server.mcpserver import MCPServer
from mcp_types import (
    CallToolResult,
    GetPromptResult,
    Prompt,
    PromptMessage,
    Resource,
    TextContent,
    Tool,
)
from starlette.requests import Request
from starlette.responses import JSONResponse, Response


class IssuerVerifier:
    """Takes the issuer's RS256 JWTs for `audience`; keys fetched once, at the first token."""

    def __init__(self, issuer: str, audience: str) -> None:
        self.issuer = issuer
        self.audience = audience
        self.claims: dict[str, dict[str, Any]] = {}
        self._keys: dict[str, Any] | None = None

    async def verify_token(self, token: str) -> AccessToken | None:
        if self._keys is None:
            async with httpx2.AsyncClient(timeout=10) as http:
                answer = await http.get(f"{self.issuer}/jwks")
                answer.raise_for_status()
                self._keys = {
                    key["kid"]: jwt.PyJWK(key).key
                    for key in answer.json()["keys"]
                    if key.get("alg") == "RS256"
                }
        try:
            kid = jwt.get_unverified_header(token).get("kid", "")
            claims = jwt.decode(
                token,
                self._keys[kid],
                algorithms=["RS256"],
                audience=self.audience,
                issuer=self.issuer,
            )
        except (jwt.InvalidTokenError, KeyError):
            return None
        self.claims[token] = claims
        return AccessToken(
            token=token,
            client_id=str(claims.get("client_id", "")),
            scopes=str(claims.get("scope", "")).split(),
            expires_at=int(claims["exp"]),
            subject=str(claims["sub"]),
        )


def _caller() -> str:
    token = get_access_token()
    assert token is not None and token.subject  # the endpoint takes no request without one
    return token.subject


class TeamServer(MCPServer):
    """Lists each caller's own items beside the shared ones."""

    async def list_tools(self) -> list[Tool]:
        who = _caller()
        schema: dict[str, Any] = {"type": "object", "properties": {}}
        own = Tool(name=f"payslip_{who}", description=f"{who}'s payslip", input_schema=schema)
        return [*await super().list_tools(), own]

    async def call_tool(self, name: str, arguments: dict[str, Any], context: Any = None) -> Any:
        who = _caller()
        if name == f"payslip_{who}":
            return CallToolResult(content=[TextContent(text=f"{who}: 4,200 net")])
        return await super().call_tool(name, arguments, context)

    async def list_resources(self) -> list[Resource]:
        who = _caller()
        own = Resource(
            uri=f"hr://{who}/performance-review-2026",
            name="performance-review-2026",
            description=f"{who}'s performance review",
            mime_type="text/plain",
        )
        return [*await super().list_resources(), own]

    async def read_resource(self, uri: Any, context: Any = None) -> Any:
        who = _caller()
        if str(uri) == f"hr://{who}/performance-review-2026":
            return [ReadResourceContents(content=f"{who}: rating 2/5, PIP", mime_type="text/plain")]
        return await super().read_resource(uri, context)

    async def list_prompts(self) -> list[Prompt]:
        who = _caller()
        own = Prompt(name=f"{who}-private-feedback", description=f"{who}'s private feedback")
        return [*await super().list_prompts(), own]

    async def get_prompt(
        self, name: str, arguments: dict[str, Any] | None = None, context: Any = None
    ) -> Any:
        who = _caller()
        if name == f"{who}-private-feedback":
            text = TextContent(text=f"{who} misses deadlines")
            return GetPromptResult(messages=[PromptMessage(role="user", content=text)])
        return await super().get_prompt(name, arguments, context)


def build(port: int, issuer: str) -> MCPServer:
    url = f"http://127.0.0.1:{port}/mcp"
    verifier = IssuerVerifier(issuer, url)
    calls: list[dict[str, str]] = []
    app = TeamServer(
        "team-api",
        token_verifier=verifier,
        auth=AuthSettings.model_validate({"issuer_url": issuer, "resource_server_url": url}),
        log_level="WARNING",
    )

    @app.tool()
    async def whoami() -> str:
        """Who this call's token speaks for, for whom it was issued, and through whom."""
        token = get_access_token()
        assert token is not None  # the endpoint takes no call without one
        claims = verifier.claims.get(token.token, {})
        acting = claims.get("act", {}).get("sub", "nobody")
        calls.append(
            {
                "subject": str(claims.get("sub")),
                "audience": str(claims.get("aud")),
                "token": hashlib.sha256(token.token.encode()).hexdigest()[:16],
            }
        )
        return f"{claims.get('sub')} for {claims.get('aud')} through {acting}"

    async def control_calls(request: Request) -> Response:
        return JSONResponse(calls)

    app.custom_route("/control/calls", methods=["GET"])(control_calls)
    return app


async def serve(port: int, issuer: str) -> None:
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", port))
    sock.listen(128)
    bound: int = sock.getsockname()[1]
    app = build(bound, issuer).streamable_http_app(host="127.0.0.1")
    config = uvicorn.Config(
        app, log_level="warning", access_log=False, ws="none", timeout_graceful_shutdown=1
    )
    print(f"http://127.0.0.1:{bound}/mcp", flush=True)
    await uvicorn.Server(config).serve([sock])


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--port", type=int, default=0, help="0: any free port (printed)")
    parser.add_argument("--issuer", required=True, help="the identity provider's issuer URL")
    options = parser.parse_args(argv)
    try:
        anyio.run(serve, options.port, options.issuer)
    except KeyboardInterrupt:
        sys.exit(0)


if __name__ == "__main__":
    main()
