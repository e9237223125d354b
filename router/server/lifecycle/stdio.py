"""Serving the router over stdio: stdout carries JSON-RPC and nothing else.

The SDK's stdio transport hands a line that is not a JSON-RPC message to the server as an
exception, which the server only logs: the client would wait forever for an answer. Here
such a line is answered as JSON-RPC 2.0 requires: -32700 for text that is not JSON,
-32600 for JSON that is not a valid message (with the request's id when it has one).
"""

from __future__ import annotations

import logging
from collections.abc import Callable

import mcp_types as types
from mcp.server.lowlevel import NotificationOptions
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from router.config import RouterConfig
from router.embedding.base import Embedder
from router.sdk.internals import ReadStream, WriteStream
from router.sdk.read_stream import ReadStreamWrapper
from router.server.lifecycle.app import build_server
from router.server.lifecycle.stdio_pipes import loop_stdio

logger = logging.getLogger(__name__)


def rejection(error: Exception) -> types.JSONRPCError:
    """The error response for an inbound line the transport could not read as a message."""
    if isinstance(error, ValidationError) and any(
        e["type"] == "json_invalid" for e in error.errors()
    ):
        return types.JSONRPCError(
            jsonrpc="2.0",
            id=None,
            error=types.ErrorData(code=types.PARSE_ERROR, message="Parse error: not JSON"),
        )
    return types.JSONRPCError(
        jsonrpc="2.0",
        id=_request_id(error),
        error=types.ErrorData(
            code=types.INVALID_REQUEST,
            message="Invalid request: not a JSON-RPC 2.0 request, notification or response",
        ),
    )


def _request_id(error: Exception) -> types.RequestId | None:
    if not isinstance(error, ValidationError):
        return None
    for detail in error.errors():
        message = detail.get("input")
        if isinstance(message, dict):
            request_id = message.get("id")
            if isinstance(request_id, str) or (
                isinstance(request_id, int) and not isinstance(request_id, bool)
            ):
                return request_id
    return None


class _RejectingReadStream(ReadStreamWrapper):
    """Passes messages through; answers unreadable lines on the write stream instead."""

    def __init__(
        self,
        inner: ReadStream[SessionMessage | Exception],
        write_stream: WriteStream[SessionMessage],
    ) -> None:
        super().__init__(inner)
        self._write_stream = write_stream

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item
            logger.warning("rejected an unreadable message: %s", str(item).splitlines()[0])
            await self._write_stream.send(SessionMessage(rejection(item)))


async def serve_stdio(
    config: RouterConfig,
    embedder: Embedder | None,
    read_config: Callable[[], RouterConfig] | None = None,
) -> None:
    """Serve on stdin/stdout until the host closes stdin; with `read_config`, the config
    file is applied while serving (`router.server.lifecycle.reload`)."""
    # fd 1 points at stderr while serving, so a stray print, a library's progress bar or a
    # child that inherited stdout cannot corrupt the protocol stream (`loop_stdio`, or the
    # SDK's `stdio_server` itself where the streams are regular files).
    server = build_server(config, embedder, read_config=read_config)
    async with loop_stdio() as pipes, stdio_server(*(pipes or ())) as (read_stream, write_stream):
        # tools.listChanged in every mode (`build_server`)
        await server.run(
            _RejectingReadStream(read_stream, write_stream),
            write_stream,
            server.create_initialization_options(NotificationOptions(tools_changed=True)),
        )
