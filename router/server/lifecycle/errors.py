"""Where router errors become MCP errors: one mapping for stdio, HTTP, SSE and the REST API.

| router error                 | JSON-RPC error            | `tools/call`     | HTTP       |
|------------------------------|---------------------------|------------------|------------|
| `InvalidParams`              | -32602, its `data`        | same error       | 422        |
|  + `ToolNotFound`            | -32602, suggestions       | same error       | 404        |
|  + `ArgumentsInvalid`        | -32602, problems          | same error       | 422        |
|  + `ToolHeld`                | -32602, approve command   | same error       | 422        |
|  + `CatalogChanged`          | -32602, generations       | -                | 409        |
| `UpstreamUnavailable`        | -32603, naming upstream   | `isError` result | 503        |
| `UpstreamTimeout`            | -32603, naming upstream   | `isError` result | 504        |
| other `UpstreamError`        | -32603, naming upstream   | `isError` result | 502        |
| `StillStarting`              | -32603                    | -                | 503        |
| `OverQuotaError`             | -32600, the quota         | `isError` result | 429        |
| `HttpRefusal`                | -32600 (-32603 if 5xx)    | -                | its status |
|  + `UnparsableRequest`       | -32700 (-32603 if 5xx)    | -                | its status |
| any other `RouterError`      | -32603                    | -                | 500        |

A failed upstream call is a tool result, not a protocol error: the model reads it and can
try another tool, and the host's JSON-RPC layer stays calm. Errors an upstream itself
answers with (`MCPError`) pass through with their own code (redacted where they entered,
`router.upstream.failures`).

Every message and `data` that leaves here is redacted (`router.core.redaction`): no configured
secret, URL query or userinfo, or bearer credential reaches a caller, whichever layer
wrote the text.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any, ParamSpec, TypeVar

import mcp_types as types
from mcp.shared.exceptions import MCPError

from router.core.errors import (
    CatalogChanged,
    HttpRefusal,
    InvalidParams,
    OverQuotaError,
    RouterError,
    SignInNeeded,
    StillStarting,
    ToolNotFound,
    UnparsableRequest,
    UpstreamError,
    UpstreamTimeout,
    UpstreamUnavailable,
)
from router.core.redaction import redact, redact_data

logger = logging.getLogger(__name__)

_P = ParamSpec("_P")
_R = TypeVar("_R")


def jsonrpc_code(error: RouterError) -> int:
    """The JSON-RPC error code a router error is answered with."""
    if isinstance(error, InvalidParams):
        return types.INVALID_PARAMS
    if isinstance(error, OverQuotaError):
        return types.INVALID_REQUEST
    if isinstance(error, HttpRefusal):
        if error.status >= 500:
            return types.INTERNAL_ERROR
        if isinstance(error, UnparsableRequest):
            return types.PARSE_ERROR
        return types.INVALID_REQUEST
    return types.INTERNAL_ERROR


def jsonrpc_error(error: RouterError) -> types.ErrorData:
    """The JSON-RPC `error` object for a router error."""
    data: dict[str, Any] | None = None
    if isinstance(error, InvalidParams | OverQuotaError):
        data = error.data
    elif isinstance(error, UpstreamError):
        data = {"upstream": error.upstream}
    return types.ErrorData(
        code=jsonrpc_code(error), message=redact(str(error)), data=redact_data(data)
    )


def mcp_error(error: RouterError) -> MCPError:
    """The SDK exception a handler raises so the client gets `jsonrpc_error(error)`."""
    data = jsonrpc_error(error)
    return MCPError(data.code, data.message, data.data)


def tool_error_result(error: UpstreamError) -> types.CallToolResult:
    """A failed upstream call as the tool result the model reads. A sign-in's link keeps its
    query: the caller is to open it (its state is single-use and bound to the caller)."""
    text = redact(str(error), urls=not isinstance(error, SignInNeeded))
    return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)


def http_status(error: RouterError) -> int:
    """The HTTP status for a router error answered over HTTP."""
    if isinstance(error, HttpRefusal):
        return error.status
    if isinstance(error, ToolNotFound):
        return 404
    if isinstance(error, CatalogChanged):
        return 409
    if isinstance(error, InvalidParams):
        return 422
    if isinstance(error, OverQuotaError):
        return 429
    if isinstance(error, StillStarting | UpstreamUnavailable):
        return 503
    if isinstance(error, UpstreamTimeout):
        return 504
    if isinstance(error, UpstreamError):
        return 502
    return 500


def http_body(error: RouterError, *, jsonrpc: bool) -> dict[str, Any]:
    """The JSON body over HTTP: a JSON-RPC error on the MCP endpoints (`id: null`, the request
    was not read), FastAPI's `{"detail": ...}` on the REST API."""
    if jsonrpc:
        error_object = jsonrpc_error(error).model_dump(mode="json", exclude_none=True)
        return {"jsonrpc": "2.0", "id": None, "error": error_object}
    return {"detail": redact(str(error))}


def errors_as_mcp(handler: Callable[_P, Awaitable[_R]]) -> Callable[_P, Awaitable[_R]]:
    """A lowlevel request handler whose router errors reach the client as `jsonrpc_error`."""

    @functools.wraps(handler)
    async def wrapped(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await handler(*args, **kwargs)
        except RouterError as exc:
            if not isinstance(exc, InvalidParams):
                logger.warning("%s failed: %s", handler.__name__, exc)
            raise mcp_error(exc) from None

    return wrapped
