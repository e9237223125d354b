"""Error responses of the HTTP front: JSON everywhere, JSON-RPC on the MCP endpoints.

The status, code and body come from `router.server.lifecycle.errors`, the mapping every surface
shares: a REST client gets `{"detail": message}` (FastAPI's shape), an MCP client a JSON-RPC
error response with `id: null` (the request was not read, so its id is unknown).
"""

from __future__ import annotations

import json
from http import HTTPStatus

from starlette.datastructures import Headers
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from router.core.errors import HttpRefusal, RouterError, UnparsableRequest
from router.server.lifecycle.errors import http_body, http_status

MCP_PATHS = ("/mcp", "/sse", "/messages")


def is_mcp_path(path: str) -> bool:
    return any(path == p or path.startswith(p + "/") for p in MCP_PATHS)


def error_response(error: RouterError, *, mcp: bool) -> Response:
    """The answer to one failed request, shaped for the endpoint it was sent to."""
    headers = error.headers if isinstance(error, HttpRefusal) else None
    return JSONResponse(
        http_body(error, jsonrpc=mcp), status_code=http_status(error), headers=headers
    )


class JsonRpcErrors:
    """Wraps an MCP endpoint so that its plain-text error answers (the SDK's SSE transport
    answers `Could not find session` and the like as text) become JSON-RPC errors."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        held: Message | None = None
        body = bytearray()

        async def rewrite(message: Message) -> None:
            nonlocal held
            if message["type"] == "http.response.start":
                content_type = Headers(raw=message.get("headers", [])).get("content-type", "")
                if message["status"] >= 400 and "json" not in content_type:
                    held = message  # answer it once the whole text is known
                    return
            elif held is not None and message["type"] == "http.response.body":
                body.extend(message.get("body", b""))
                if message.get("more_body", False):
                    return
                status = held["status"]
                text = body.decode(errors="replace").strip() or HTTPStatus(status).phrase
                payload = json.dumps(http_body(_refusal(status, text), jsonrpc=True)).encode()
                await send(_start(held, payload))
                await send({"type": "http.response.body", "body": payload})
                return
            await send(message)

        await self.app(scope, receive, rewrite)


def _refusal(status: int, text: str) -> HttpRefusal:
    """The SDK transport's plain-text answer as a router error, mapped here once: its
    unparsable-body answers ("Parse error: ...", "Could not parse message") say so only in
    their text."""
    if "parse" in text.lower():
        return UnparsableRequest(status, text)
    return HttpRefusal(status, text)


def _start(original: Message, payload: bytes) -> Message:
    keep = [
        (name, value)
        for name, value in original.get("headers", [])
        if name.lower() not in (b"content-type", b"content-length")
    ]
    headers = [
        *keep,
        (b"content-type", b"application/json"),
        (b"content-length", str(len(payload)).encode()),
    ]
    return {"type": "http.response.start", "status": original["status"], "headers": headers}
