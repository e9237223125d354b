"""The loopback end of a sign-in: `http://127.0.0.1:PORT/callback` takes the one redirect
the authorization server sends back, and answers the browser with a page that says so."""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator
from urllib.parse import parse_qs

import anyio
import uvicorn
from mcp.shared.auth import AuthorizationCodeResult

CALLBACK_PATH = "/callback"
_PAGE = (
    b"<!doctype html><meta charset=utf-8><title>mcp-router</title>"
    b"<p>%s</p><p>You can close this tab.</p>"
)


class SignInRefused(Exception):
    """The authorization server redirected back with an error instead of a code."""


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def redirect_uri(port: int) -> str:
    return f"http://127.0.0.1:{port}{CALLBACK_PATH}"


class LoopbackCallback:
    """Waits for one redirect to the callback path; other paths get 404."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._arrived = anyio.Event()
        self._result: AuthorizationCodeResult | None = None
        self._refusal: str | None = None

    async def __call__(self, scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        if scope["type"] != "http":
            return
        status, text = 404, b"Not found."
        if (
            scope["path"] == CALLBACK_PATH
            and scope["method"] == "GET"
            and not self._arrived.is_set()
        ):
            query = parse_qs(scope.get("query_string", b"").decode(), keep_blank_values=True)
            first = {key: values[0] for key, values in query.items()}
            if "code" in first:
                self._result = AuthorizationCodeResult(
                    code=first["code"], state=first.get("state"), iss=first.get("iss")
                )
                status, text = 200, b"Signed in."
            else:
                reason = first.get("error_description") or first.get("error") or "no code"
                self._refusal = reason
                status, text = 400, b"Sign-in failed: " + reason.encode()[:200]
            self._arrived.set()
        body = _PAGE % text
        headers = [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": headers})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": body})  # type: ignore[operator]

    async def result(self) -> AuthorizationCodeResult:
        """The redirect's code, state and `iss` (wait bounded by the caller)."""
        await self._arrived.wait()
        if self._result is None:
            raise SignInRefused(self._refusal or "no authorization code")
        return self._result


@contextlib.asynccontextmanager
async def listening(port: int) -> AsyncIterator[LoopbackCallback]:
    """Serve the callback on 127.0.0.1:`port` while the block runs; the port is free again
    once it ends, however it ends (the next attempt binds the same port)."""
    callback = LoopbackCallback(port)
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    config = uvicorn.Config(callback, log_level="warning", lifespan="off", access_log=False)
    server = uvicorn.Server(config)
    try:
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("127.0.0.1", port))
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.serve, [listener])
            try:
                yield callback
            finally:
                server.should_exit = True
    finally:
        # A block that raised cancels uvicorn before its own shutdown, maybe inside its
        # `create_server`, after the socket was registered with the event loop: unregister
        # it before closing it, or the next socket given the same descriptor number is
        # never watched (its connections hang), and the port stays bound.
        for serving in getattr(server, "servers", ()):
            serving.close()
        if listener.fileno() != -1:
            asyncio.get_running_loop().remove_reader(listener.fileno())
        listener.close()
