"""The HTTP front refuses what its policy does not allow, before anything reaches an upstream.

The front (in-process, token set, a 2 KiB body limit) serves one upstream that writes every
request it receives to a log. Each refused request is a `tools/call` that would otherwise
reach it, sent on a valid session; the log proves none did, and one allowed call proves the
log would have shown it.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from router.server.http.auth.security import SecurityPolicy
from tests.support.http_serving import (
    MCP_ACCEPT,
    Front,
    config,
    counting_upstream,
    http_front,
    open_session,
    sse_data,
    streamable_client,
    until_indexed,
    validate,
)
from tests.support.serving import initialize_request

pytestmark = pytest.mark.processes

TOKEN = "front-token-1234"
GOOD = {"Authorization": f"Bearer {TOKEN}"}
LIMIT = 2048
TOUCH = {
    "jsonrpc": "2.0",
    "id": 7,
    "method": "tools/call",
    "params": {"name": "counting__touch", "arguments": {}},
}
BIG_TOUCH = {**TOUCH, "params": {"name": "counting__touch", "arguments": {"pad": "x" * LIMIT}}}


@pytest.fixture(scope="module")
def log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("guard") / "calls.log"


@pytest.fixture(scope="module")
async def front(log: Path) -> AsyncIterator[Front]:
    policy = SecurityPolicy(token=TOKEN, max_body_bytes=LIMIT)
    async with http_front(config({"counting": counting_upstream(log)}), policy) as running:
        with anyio.fail_after(20):
            await until_indexed(running.state)
        yield running


def calls(log: Path) -> int:
    return log.read_text().splitlines().count("tools/call touch")


async def chunks(body: dict[str, Any]) -> AsyncIterator[bytes]:
    """A body streamed in pieces, without Content-Length (chunked transfer encoding)."""
    data = json.dumps(body).encode()
    for start in range(0, len(data), 512):
        yield data[start : start + 512]


def refusals(
    headers: dict[str, str], body: dict[str, Any], big: dict[str, Any]
) -> list[tuple[str, int, dict[str, Any]]]:
    """(case, expected status, request options): `body` with each wrong header, and `big`
    (over the limit) declared and streamed."""
    without_token = {k: v for k, v in headers.items() if k != "Authorization"}
    return [
        ("wrong Origin", 403, {"headers": {**headers, "Origin": "http://evil.example"}}),
        ("wrong Host", 421, {"headers": {**headers, "Host": "evil.example"}}),
        ("no token", 401, {"headers": without_token}),
        ("wrong token", 401, {"headers": {**headers, "Authorization": "Bearer guess"}}),
        ("body too large", 413, {"headers": headers, "json": big}),
        ("streamed body too large", 413, {"headers": headers, "content": chunks(big)}),
    ]


def request_options(options: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    return options if "json" in options or "content" in options else {**options, "json": body}


def assert_jsonrpc_refusal(case: str, status: int, answer: httpx2.Response) -> None:
    assert answer.status_code == status, (case, answer.text)
    body = answer.json()
    assert body["jsonrpc"] == "2.0" and body["id"] is None, case
    assert body["error"]["code"] == types.INVALID_REQUEST, case
    if status == 401:
        assert answer.headers["www-authenticate"] == "Bearer"


async def test_refused_streamable_http_requests_never_reach_the_upstream(
    front: Front, log: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with httpx2.AsyncClient() as http:
        with anyio.fail_after(20):
            session = await open_session(http, front.mcp, GOOD)
            before = calls(log)
            for case, status, options in refusals(session, TOUCH, BIG_TOUCH):
                answer = await http.post(front.mcp, **request_options(options, TOUCH))
                assert_jsonrpc_refusal(case, status, answer)
            refused = calls(log)
            allowed = await http.post(front.mcp, json=TOUCH, headers=session)

    assert refused == before
    assert sse_data(allowed.text)[-1]["result"]["content"][0]["text"] == "touched"
    assert calls(log) == before + 1
    assert TOKEN not in caplog.text and "guess" not in caplog.text


async def test_refused_sse_messages_never_reach_the_upstream(front: Front, log: Path) -> None:
    async with (
        httpx2.AsyncClient(base_url=front.url) as http,
        http.stream("GET", "/sse", headers=GOOD) as stream,
    ):
        with anyio.fail_after(20):
            events = stream.aiter_lines()
            endpoint = await anext(line async for line in events if line.startswith("data:"))
            messages = endpoint[5:].strip()
            headers = {**GOOD, "Content-Type": "application/json"}

            async def send(message: dict[str, Any]) -> dict[str, Any] | None:
                answer = await http.post(messages, json=message, headers=headers)
                assert answer.status_code == 202, answer.text
                if "id" not in message:
                    return None
                reply = await anext(line async for line in events if line.startswith("data:"))
                response: dict[str, Any] = json.loads(reply[5:])
                return response

            await send(initialize_request("raw-sse-test", "2025-06-18"))
            await send({"jsonrpc": "2.0", "method": "notifications/initialized"})
            before = calls(log)
            for case, status, options in refusals(headers, TOUCH, BIG_TOUCH):
                answer = await http.post(messages, **request_options(options, TOUCH))
                assert_jsonrpc_refusal(case, status, answer)
            refused = calls(log)
            touched = await send(TOUCH)

    assert refused == before
    assert touched is not None and touched["result"]["content"][0]["text"] == "touched"
    assert calls(log) == before + 1


async def test_the_rest_api_refuses_with_json_details(front: Front) -> None:
    query = {"query": "touch the counter"}
    async with httpx2.AsyncClient(base_url=front.url) as http:
        with anyio.fail_after(20):
            openapi = (await http.get("/openapi.json", headers=GOOD)).json()
            answers = []
            for case, status, options in refusals(GOOD, query, {**query, "pad": "x" * LIMIT}):
                answer = await http.post("/v1/route", **request_options(options, query))
                answers.append((case, status, answer))
            unauthenticated = await http.get("/v1/tools")
            plain_health = await http.get("/healthz")
            detailed_health = await http.get("/healthz", headers=GOOD)
            allowed = await http.post("/v1/route", json=query, headers=GOOD)

    for case, status, answer in answers:
        assert answer.status_code == status, (case, answer.text)
        validate(openapi, "ErrorBody", answer.json())
    assert unauthenticated.status_code == 401
    # a load balancer's check needs no token, and learns readiness only
    assert plain_health.status_code == 200
    assert plain_health.json() == {"status": "ready"}
    assert detailed_health.json()["tools"] == 1
    assert allowed.status_code == 200
    assert allowed.json()["results"][0]["name"] == "counting__touch"
    assert openapi["components"]["securitySchemes"]["HTTPBearer"]["scheme"] == "bearer"


async def test_the_sdk_client_needs_the_token(front: Front, log: Path) -> None:
    before = calls(log)
    with anyio.fail_after(20):
        async with streamable_client(front.mcp, GOOD, mode="legacy") as client:
            result = await client.call_tool("counting__touch", {})
        # the SDK's task groups wrap the JSON-RPC error it read from the 401 answer
        refusal = pytest.RaisesExc(MCPError, check=lambda e: e.code == types.INVALID_REQUEST)
        with pytest.RaisesGroup(refusal, allow_unwrapped=True, flatten_subgroups=True):
            async with streamable_client(front.mcp, mode="legacy") as client:
                await client.call_tool("counting__touch", {})

    assert result.content[0] == types.TextContent(text="touched")
    assert calls(log) == before + 1


async def test_errors_on_mcp_endpoints_are_json_rpc_and_elsewhere_json(front: Front) -> None:
    mcp = {**GOOD, **MCP_ACCEPT, "Content-Type": "application/json"}
    unknown_session = "/messages/?session_id=" + "0" * 32
    async with httpx2.AsyncClient(base_url=front.url) as http:
        with anyio.fail_after(20):
            not_json = await http.post("/mcp", content=b"not json", headers=mcp)
            no_session = await http.post("/mcp", json=TOUCH, headers={**mcp, "mcp-session-id": "x"})
            lost = await http.post(unknown_session, json=TOUCH, headers=mcp)
            get_messages = await http.get("/messages/", headers=GOOD)
            post_sse = await http.post("/sse", json=TOUCH, headers=mcp)
            nowhere = await http.get("/nowhere", headers=GOOD)

    answers = [
        (not_json, 400),
        (no_session, 404),
        (lost, 404),
        (get_messages, 405),
        (post_sse, 405),
    ]
    for answer, status in answers:
        assert answer.status_code == status, answer.text
        body = answer.json()
        assert (body["jsonrpc"], body["id"]) == ("2.0", None)
        assert body["error"]["message"]
    assert not_json.json()["error"]["code"] == types.PARSE_ERROR
    assert lost.json()["error"] == {
        "code": types.INVALID_REQUEST,
        "message": "Could not find session",
    }
    assert get_messages.json()["error"]["message"] == "Method Not Allowed"
    assert (nowhere.status_code, nowhere.json()) == (404, {"detail": "Not Found"})
