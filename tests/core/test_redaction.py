"""Secrets never leave the router (`router.core.redaction`), tried as an attacker would: an
upstream URL with `?api_key=SECRET` that cannot be reached, one that answers 500 (httpx names
the URL it failed on), and a hostile upstream (tests/upstreams/echoing.py) whose JSON-RPC
error echoes the header values and the URL it was sent. The router is `mcp-router serve
--http` as a child process; the caller's error text, its down reasons in search, `/v1/tools`
and `/healthz`, the router's stderr and `/metrics` hold no secret.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
import uvicorn
from mcp.shared.exceptions import MCPError
from pydantic import SecretStr

from router.config import parse_config
from router.core.errors import UpstreamUnavailable
from router.core.redaction import MASK, redact, redact_url, remember, secrets_of
from router.server.lifecycle.errors import http_body, jsonrpc_error, tool_error_result
from router.upstream.failures import describe, redacted_error
from tests.support.http_serving import http_child, streamable_client, terminated, until_healthy
from tests.support.ports import free_port
from tests.support.serving import write_config
from tests.upstreams import echoing


def test_a_url_loses_its_userinfo_query_and_fragment() -> None:
    assert redact_url("https://user:pw@host/p?key=SECRET") == "https://host/p"
    assert redact_url("http://127.0.0.1:9/mcp?api_key=x#frag") == "http://127.0.0.1:9/mcp"
    assert redact_url("https://host") == "https://host"
    said = "Server error '500' for url 'https://a:b@h.test/x?k=SECRET' (see https://h.test/doc)."
    assert redact(said) == "Server error '500' for url 'https://h.test/x' (see https://h.test/doc)."
    remember(["SECRET-in-a-query"])
    assert redact("at https://h.test/x?k=SECRET-in-a-query]; then") == "at https://h.test/x]; then"


def test_configured_secrets_and_bearer_credentials_are_masked() -> None:
    key, bearer, client, query = (f"SECRET-{name}-{secrets.token_hex(4)}" for name in "abcd")
    config = parse_config(
        {
            "mcpServers": {
                "api": {
                    "url": f"https://api.test/mcp?api_key={query}",
                    "headers": {"Authorization": f"Bearer {bearer}"},
                },
                "local": {"command": "x", "env": {"API_KEY": "${KEY}", "PORT": "3000"}},
            },
            "router": {
                "http": {
                    "oauth": {
                        "issuer": "https://idp.test",
                        "audience": "https://router.test/mcp",
                        "introspection_endpoint": "https://idp.test/introspect",
                        "client_id": "router",
                        "client_secret": client,
                    }
                }
            },
        },
        environ={"KEY": key},
    )
    found = secrets_of(config)
    assert {key, bearer, f"Bearer {bearer}", client, query} <= found
    assert "3000" in found  # found, but too short to be masked
    for secret in (key, bearer, client, query):
        assert redact(f"upstream said: {secret}!") == f"upstream said: {MASK}!"
    assert redact("port 3000") == "port 3000"
    # an upstream's OAuth token is no config value: its header form is masked all the same
    assert redact("got Authorization: Bearer eyJhbGciOiJSUzI1NiJ9.abc") == (
        f"got Authorization: Bearer {MASK}"
    )
    for prose in ("needs a Bearer token", "the token introspection_endpoint_is_unset"):
        assert redact(prose) == prose


def test_every_error_answer_is_redacted_where_it_leaves() -> None:
    secret = f"SECRET-{secrets.token_hex(6)}"
    remember([secret])
    error = UpstreamUnavailable("api", f"failed at https://h.test/p?key=1 with {secret}")
    texts = [
        jsonrpc_error(error).message,
        str(http_body(error, jsonrpc=False)),
        str(http_body(error, jsonrpc=True)),
        str(tool_error_result(error).content),
        describe(RuntimeError(f"boom {secret} https://u:p@h.test/x?y=2")),
    ]
    assert all("SECRET" not in text and "key=1" not in text for text in texts), texts


def test_an_upstreams_error_keeps_its_code_and_a_sign_in_url_its_query() -> None:
    secret = f"SECRET-{secrets.token_hex(6)}"
    remember([secret])
    plain = MCPError(types.INVALID_REQUEST, "no secret here")
    leaking = MCPError(-32001, f"bad key {secret}", {"url": "https://h.test/p?api_key=x"})
    sign_in = MCPError(
        types.URL_ELICITATION_REQUIRED,
        "sign in first",
        {"elicitations": [{"url": f"https://idp.test/authorize?state=abc&k={secret}"}]},
    )

    assert redacted_error(plain) is plain  # nothing to redact: the very same error
    clean = redacted_error(leaking)
    assert (clean.code, clean.error.message) == (-32001, f"bad key {MASK}")
    assert clean.error.data == {"url": "https://h.test/p"}
    kept = redacted_error(sign_in).error.data
    assert kept == {"elicitations": [{"url": f"https://idp.test/authorize?state=abc&k={MASK}"}]}


def test_log_records_are_redacted_whatever_shows_them(caplog: pytest.LogCaptureFixture) -> None:
    secret = f"SECRET-{secrets.token_hex(6)}"
    remember([secret])
    logger = logging.getLogger("router.test_redaction")
    with caplog.at_level(logging.INFO):
        logger.info("connecting with %s to %s", secret, "https://h.test/p?api_key=x")
        try:
            raise ValueError(f"refused {SecretStr(secret).get_secret_value()}")
        except ValueError:
            logger.exception("failed")
    text = caplog.text
    assert "SECRET" not in text and "api_key" not in text
    assert "connecting with [redacted] to https://h.test/p" in text
    assert "ValueError: refused [redacted]" in text


@asynccontextmanager
async def hostile_upstream() -> AsyncIterator[str]:
    """tests/upstreams/echoing.py on loopback; its base URL."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    server = uvicorn.Server(
        uvicorn.Config(echoing.app(), log_config=None, access_log=False, ws="none")
    )
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [sock])
            try:
                yield f"http://127.0.0.1:{sock.getsockname()[1]}"
            finally:
                server.should_exit = True
    finally:
        sock.close()


@pytest.mark.processes
async def test_no_secret_reaches_a_caller_the_log_or_the_metrics(tmp_path: Path) -> None:
    mark = secrets.token_hex(4)
    key, bearer, query, broken = (f"SECRET{n}{mark}" for n in "khqb")
    token, operator = "caller-token-1234", "operator-token-1234"
    headers = {"X-Api-Key": "${HOSTILE_KEY}", "Authorization": f"Bearer {bearer}"}
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    caller = {"Authorization": f"Bearer {token}"}
    async with hostile_upstream() as hostile:
        servers: dict[str, dict[str, Any]] = {
            "hostile": {"url": f"{hostile}/mcp?api_key={query}", "headers": headers},
            "broken": {"url": f"{hostile}/broken?api_key={broken}", "headers": headers},
            "gone": {"url": f"http://127.0.0.1:{free_port()}/mcp?api_key={query}"},
        }
        config = write_config(tmp_path, servers)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("ROUTER_")},
            "HOSTILE_KEY": key,
            "ROUTER_TOKEN": token,
            "ROUTER_OPERATOR_TOKEN": operator,
        }
        command = [sys.executable, "-m", "router", "-v", "serve", "--http", "--config", str(config)]
        command += ["--port", str(port), "--bm25-only"]
        async with http_child(command, tmp_path / "router.log", env) as process:
            async with httpx2.AsyncClient(base_url=url, timeout=30) as http:
                with anyio.fail_after(60):
                    await until_healthy(http, caller)
                    async with streamable_client(f"{url}/mcp", caller) as client:
                        with pytest.raises(MCPError) as leaked:
                            await client.call_tool("hostile__leak", {})
                        found = await client.call_tool("search_tools", {"query": "hello"})
                        direct = await client.call_tool("hostile__hello", {})
                    answers = [
                        await http.get("/v1/tools", headers=caller),
                        await http.get("/healthz", headers={"Authorization": f"Bearer {operator}"}),
                        await http.get("/metrics", headers={"Authorization": f"Bearer {operator}"}),
                    ]
            await terminated(process)

    error = leaked.value.error
    assert error.code == types.INVALID_REQUEST  # the upstream's own code, kept
    assert error.message == (
        f"key {MASK} with {MASK} is not welcome at {hostile}/mcp; try again at {hostile}/mcp"
    )
    assert not direct.is_error
    texts = {
        "error": f"{error.message} {error.data}",
        "search": str(found.content) + str(found.structured_content),
        **{answer.url.path: answer.text for answer in answers},
        "log": (tmp_path / "router.log").read_text(),
    }
    assert all(answer.status_code == 200 for answer in answers), texts
    assert "broken" in texts["/v1/tools"] and "gone" in texts["/v1/tools"]  # named, down
    for where, text in texts.items():
        for secret in (key, bearer, query, broken):
            assert secret not in text, (where, secret)
        assert "api_key=" not in text, where
