"""One mapping from router errors to MCP errors (`router.server.lifecycle.errors`), on every
surface.

The table is checked directly, then the same failing requests are sent over stdio and over
streamable HTTP: each surface must answer them with the same code, message and data.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp.client import Client
from mcp.shared.exceptions import MCPError

from router.core.errors import (
    ArgumentsInvalid,
    ConfigError,
    HttpRefusal,
    InvalidParams,
    StillStarting,
    ToolNotFound,
    UnparsableRequest,
    UpstreamProtocolError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from router.server.http.auth.security import SecurityPolicy
from router.server.lifecycle.errors import http_body, http_status, jsonrpc_error, tool_error_result
from tests.support.http_serving import SCRIPTS, config, http_front, streamable_client, until_ready
from tests.support.serving import raw_router, write_config

TABLE = [
    (ToolNotFound("x", ("a__x",)), types.INVALID_PARAMS, 404, {"suggestions": ["a__x"]}),
    (ArgumentsInvalid("t", ["'a' is required"]), types.INVALID_PARAMS, 422, None),
    (InvalidParams("bad k"), types.INVALID_PARAMS, 422, None),
    (UpstreamUnavailable("git", "down"), types.INTERNAL_ERROR, 503, {"upstream": "git"}),
    (UpstreamTimeout("git", "slow"), types.INTERNAL_ERROR, 504, {"upstream": "git"}),
    (UpstreamProtocolError("git", "junk"), types.INTERNAL_ERROR, 502, {"upstream": "git"}),
    (StillStarting("wait"), types.INTERNAL_ERROR, 503, None),
    (HttpRefusal(413, "too big"), types.INVALID_REQUEST, 413, None),
    (UnparsableRequest(400, "Parse error: bad JSON"), types.PARSE_ERROR, 400, None),
    (HttpRefusal(400, "Parse error in the text alone"), types.INVALID_REQUEST, 400, None),
    (HttpRefusal(502, "gateway"), types.INTERNAL_ERROR, 502, None),
    (ConfigError("unexpected"), types.INTERNAL_ERROR, 500, None),
]


@pytest.mark.parametrize(("error", "code", "status", "data"), TABLE)
def test_each_router_error_has_one_code_and_one_status(
    error: Any, code: int, status: int, data: dict[str, Any] | None
) -> None:
    answer = jsonrpc_error(error)
    assert (answer.code, answer.message) == (code, str(error))
    if data is not None:
        assert answer.data == data
    assert http_status(error) == status
    assert http_body(error, jsonrpc=False) == {"detail": str(error)}
    body = http_body(error, jsonrpc=True)
    assert body["id"] is None and body["error"]["code"] == code


def test_arguments_invalid_carries_every_problem() -> None:
    problems = [f"'f{i}' is required" for i in range(7)]
    answer = jsonrpc_error(ArgumentsInvalid("t", problems))
    assert answer.data == {"problems": problems}
    assert "(and 2 more)" in answer.message


def test_an_upstream_failure_in_a_call_is_a_tool_result() -> None:
    result = tool_error_result(UpstreamUnavailable("git", "not connected"))
    assert result.is_error
    assert isinstance(result.content[0], types.TextContent)
    assert "upstream 'git'" in result.content[0].text


def _servers(log: Path) -> dict[str, Any]:
    return {
        "count": {"command": sys.executable, "args": [str(SCRIPTS / "counting.py"), str(log)]},
    }


FAILING_CALLS: list[tuple[str, dict[str, Any]]] = [
    ("tools/call", {"name": "count__tuch", "arguments": {}}),
    ("tools/call", {"name": "call_tool", "arguments": {"arguments": {}}}),
    ("tools/call", {"name": "search_tools", "arguments": {"query": "x", "k": 0}}),
    ("resources/read", {"uri": "file:///nowhere"}),
    ("prompts/get", {"name": "nothing"}),
]


def _shape(error: dict[str, Any]) -> tuple[int, str, Any]:
    return error["code"], error["message"], error.get("data")


@pytest.mark.processes
async def test_stdio_and_http_answer_the_same_failures_alike(tmp_path: Path) -> None:
    servers = _servers(tmp_path / "count.log")
    stdio_answers: list[tuple[int, str, Any]] = []
    with anyio.fail_after(60):
        async with raw_router(write_config(tmp_path, servers)) as router:
            await router.initialize()
            for method, params in FAILING_CALLS:
                response = await router.request(method, params)
                assert "error" in response, (method, params, response)
                stdio_answers.append(_shape(response["error"]))

        http_answers: list[tuple[int, str, Any]] = []
        async with http_front(config(servers)) as front, streamable_client(front.mcp) as client:
            await until_ready(front.state)
            for method, params in FAILING_CALLS:
                with pytest.raises(MCPError) as caught:
                    await _send(client, method, params)
                error = caught.value.error
                http_answers.append((error.code, error.message, error.data))

    assert stdio_answers == http_answers
    codes = {code for code, _, _ in stdio_answers}
    assert codes == {types.INVALID_PARAMS}
    assert stdio_answers[0][2] == {"suggestions": ["count__touch"]}


async def _send(client: Client, method: str, params: dict[str, Any]) -> object:
    """One of `FAILING_CALLS` through the SDK client's public methods."""
    if method == "tools/call":
        return await client.call_tool(params["name"], params["arguments"])
    if method == "resources/read":
        return await client.read_resource(params["uri"])
    return await client.get_prompt(params["name"])


@pytest.mark.processes
async def test_rest_refusals_use_the_same_mapping(tmp_path: Path) -> None:
    servers = _servers(tmp_path / "count.log")
    policy = SecurityPolicy(max_body_bytes=1000)
    async with http_front(config(servers), policy) as front, httpx2.AsyncClient() as http:
        with anyio.fail_after(30):
            await until_ready(front.state)
            too_big = await http.post(
                f"{front.url}/v1/route", content=b"x" * 2000, headers={"content-type": "a/b"}
            )
            mcp_too_big = await http.post(front.mcp, content=b"x" * 2000)
    assert too_big.status_code == mcp_too_big.status_code == 413
    assert set(too_big.json()) == {"detail"}
    assert mcp_too_big.json()["error"]["code"] == types.INVALID_REQUEST
    assert mcp_too_big.json()["error"]["message"] == too_big.json()["detail"]
