"""The conformance suite's client side, with the MCP Python SDK's own client and nothing of the
router: the baseline column of `benchmarks/conformance_auth.py`.

The suite (`conformance client --command "python -m benchmarks.conformance_sdk_auth_client"`)
starts a scenario's servers and runs this with the MCP server's URL as the last argument, the
scenario in `MCP_CONFORMANCE_SCENARIO` and its context (a pre-registered client, client
credentials) as JSON in `MCP_CONFORMANCE_CONTEXT`. This builds the SDK's auth provider for the
scenario, then connects over streamable HTTP with it: initialize, list the tools, call the first
one with no arguments. The authorization server's redirect is taken unattended: the
authorization URL is fetched without following redirects and the code, state and issuer are
read from its `Location`.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Mapping
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
import httpx2
from mcp import Client
from mcp.client.auth import OAuthClientProvider
from mcp.client.auth.extensions.client_credentials import (
    ClientCredentialsOAuthProvider,
    PrivateKeyJWTOAuthProvider,
    SignedJWTParameters,
)
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.auth import (
    AuthorizationCodeResult,
    OAuthClientInformationFull,
    OAuthClientMetadata,
    OAuthToken,
)
from pydantic import AnyUrl

REDIRECT_URI = "http://localhost:3000/callback"
CLIENT_METADATA_URL = "https://conformance-test.local/client-metadata.json"


class MemoryStorage:
    """Tokens and the client registration, held for this one run (the SDK's `TokenStorage`)."""

    def __init__(self, client: OAuthClientInformationFull | None = None) -> None:
        self.tokens: OAuthToken | None = None
        self.client = client

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


class HeadlessRedirect:
    """The redirect and callback handlers of an authorization-code sign-in with no person:
    request the authorization URL, read the authorization response off its redirect."""

    def __init__(self) -> None:
        self._result: AuthorizationCodeResult | None = None

    async def redirect(self, authorization_url: str) -> None:
        async with httpx2.AsyncClient(follow_redirects=False, timeout=30) as http:
            response = await http.get(authorization_url)
        location = response.headers.get("location")
        if not (response.is_redirect and location):
            raise RuntimeError(f"the authorization endpoint answered {response.status_code}")
        query = parse_qs(urlsplit(location).query)
        if "code" not in query:
            raise RuntimeError(f"no code in the authorization response: {location}")

        def one(key: str) -> str | None:
            return query[key][0] if key in query else None

        self._result = AuthorizationCodeResult(
            code=query["code"][0], state=one("state"), iss=one("iss")
        )

    async def callback(self) -> AuthorizationCodeResult:
        if self._result is None:
            raise RuntimeError("the callback came before the redirect")
        result, self._result = self._result, None
        return result


def auth_provider(url: str, scenario: str, context: Mapping[str, Any]) -> httpx2.Auth:
    """The SDK's provider for `scenario`: client credentials (a signed JWT or a secret) for
    the client-credentials scenarios, the authorization-code flow for every other one."""
    issuer = context.get("issuer")
    if scenario == "auth/client-credentials-jwt":
        assertion = SignedJWTParameters(
            issuer=context["client_id"],
            subject=context["client_id"],
            signing_key=context["private_key_pem"],
            signing_algorithm=context.get("signing_algorithm", "ES256"),
        )
        return PrivateKeyJWTOAuthProvider(
            server_url=url,
            storage=MemoryStorage(),
            client_id=context["client_id"],
            assertion_provider=assertion.create_assertion_provider(),
            issuer=issuer,
        )
    if scenario == "auth/client-credentials-basic":
        return ClientCredentialsOAuthProvider(
            server_url=url,
            storage=MemoryStorage(),
            client_id=context["client_id"],
            client_secret=context["client_secret"],
            issuer=issuer,
        )
    registered = None
    if context.get("client_id"):
        secret = context.get("client_secret")
        registered = OAuthClientInformationFull(
            client_id=context["client_id"],
            client_secret=secret,
            redirect_uris=[AnyUrl(REDIRECT_URI)],
            token_endpoint_auth_method="client_secret_basic" if secret else "none",
        )
    metadata = OAuthClientMetadata(
        client_name="sdk-conformance-client",
        redirect_uris=[AnyUrl(REDIRECT_URI)],
        grant_types=["authorization_code", "refresh_token"],
        response_types=["code"],
    )
    headless = HeadlessRedirect()
    return OAuthClientProvider(
        server_url=url,
        client_metadata=metadata,
        storage=MemoryStorage(registered),
        redirect_handler=headless.redirect,
        callback_handler=headless.callback,
        client_metadata_url=CLIENT_METADATA_URL,
    )


async def connect(url: str, scenario: str, context: Mapping[str, Any]) -> None:
    """initialize, tools/list, tools/call of the first tool with {}."""
    auth = auth_provider(url, scenario, context)
    async with (
        httpx2.AsyncClient(auth=auth, timeout=30) as http,
        Client(streamable_http_client(url, http_client=http), cache=None) as client,
    ):
        tools = (await client.list_tools()).tools
        print(f"sdk client listed {[tool.name for tool in tools]}", file=sys.stderr)
        if tools:
            result = await client.call_tool(tools[0].name, {})
            print(f"sdk client call: error={result.is_error}", file=sys.stderr)


def main() -> int:
    url = sys.argv[-1]
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    context = json.loads(os.environ.get("MCP_CONFORMANCE_CONTEXT") or "{}")
    try:
        anyio.run(connect, url, scenario, context)
    except Exception as exc:
        print(f"sdk client failed: {type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
