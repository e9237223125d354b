"""The loopback end of a sign-in: `http://127.0.0.1:PORT/callback` takes the redirects the
authorization server sends back, each to the flow whose `state` it carries, and answers the
browser with a page that says so.

One listener may see several flows: the authorization server changed (SEP-2352) and the
connection signs in again, or a redirect of an abandoned flow comes late. A redirect is handed
to the flow that registered its state (`expect`), once; any other gets 400 and changes nothing,
so a second flow never reads the first one's code (the SDK would refuse it: "State parameter
mismatch").
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections import OrderedDict
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import anyio
import uvicorn
from mcp.shared.auth import AuthorizationCodeResult

CALLBACK_PATH = "/callback"
MAX_FLOWS = 16
"""Flows one listener waits for at once (the oldest is dropped past it)."""
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


def state_of(authorization_url: str) -> str | None:
    """The `state` an authorization URL carries (the SDK makes one per flow)."""
    values = parse_qs(urlsplit(authorization_url).query).get("state")
    return values[0] if values else None


@dataclass(eq=False)
class _Flow:
    arrived: anyio.Event = field(default_factory=anyio.Event)
    result: AuthorizationCodeResult | None = None
    refusal: str | None = None


class LoopbackCallback:
    """Hands each redirect to the callback path to the flow of its `state`; other paths
    get 404, unknown or spent states 400."""

    def __init__(self, port: int) -> None:
        self.port = port
        self._flows: OrderedDict[str, _Flow] = OrderedDict()

    def expect(self, state: str) -> None:
        """Wait for the redirect that carries `state` (a flow's, before its URL is shown)."""
        while len(self._flows) >= MAX_FLOWS:
            self._flows.popitem(last=False)
        self._flows[state] = _Flow()

    async def __call__(self, scope: dict, receive: object, send: object) -> None:  # type: ignore[type-arg]
        if scope["type"] != "http":
            return
        status, text = 404, b"Not found."
        if scope["path"] == CALLBACK_PATH and scope["method"] == "GET":
            query = parse_qs(scope.get("query_string", b"").decode(), keep_blank_values=True)
            first = {key: values[0] for key, values in query.items()}
            flow = self._flows.get(first.get("state") or "")
            if flow is None or flow.arrived.is_set():
                status, text = 400, b"This sign-in is unknown here, or was already finished."
            elif "code" in first:
                flow.result = AuthorizationCodeResult(
                    code=first["code"], state=first.get("state"), iss=first.get("iss")
                )
                status, text = 200, b"Signed in."
            else:
                reason = first.get("error_description") or first.get("error") or "no code"
                flow.refusal = reason
                status, text = 400, b"Sign-in failed: " + reason.encode()[:200]
            if flow is not None:
                flow.arrived.set()
        body = _PAGE % text
        headers = [(b"content-type", b"text/html; charset=utf-8"), (b"cache-control", b"no-store")]
        await send({"type": "http.response.start", "status": status, "headers": headers})  # type: ignore[operator]
        await send({"type": "http.response.body", "body": body})  # type: ignore[operator]

    async def result(self, state: str) -> AuthorizationCodeResult:
        """The code, state and `iss` of the redirect that carried `state` (registered with
        `expect`; the wait is bounded by the caller)."""
        flow = self._flows.get(state)
        if flow is None:
            raise SignInRefused("no sign-in with this state is waiting")
        try:
            await flow.arrived.wait()
        finally:
            if self._flows.get(state) is flow:
                del self._flows[state]
        if flow.result is None:
            raise SignInRefused(flow.refusal or "no authorization code")
        return flow.result


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
