"""Transports to one upstream, each reporting the moment its connection ends.

The SDK's `Client` does not say when a stdio child dies: its dispatcher just sees the end
of the read stream. Wrapping that stream lets the owner task notice and reconnect.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
from mcp.client.sse import sse_client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.message import SessionMessage

from router.config import RemoteServer, StdioServer
from router.sdk.internals import ReadStream, TransportStreams
from router.sdk.read_stream import ReadStreamWrapper
from router.upstream.connection.environment import child_environment
from router.upstream.stderr import StderrTail, stderr_to_log


class _WatchedReadStream(ReadStreamWrapper):
    """A read stream that sets `ended` when the peer's side of the connection ends."""

    def __init__(self, inner: ReadStream[SessionMessage | Exception], ended: anyio.Event) -> None:
        super().__init__(inner)
        self._ended = ended

    async def receive(self) -> SessionMessage | Exception:
        try:
            return await self._inner.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError, anyio.BrokenResourceError):
            self._ended.set()
            raise


# The SDK's own defaults for its HTTP transports: 30 s to connect, write and wait for a pooled
# connection, 300 s between reads because a server may hold a response stream open.
HTTP_TIMEOUT = httpx2.Timeout(30.0, read=300.0)


def stdio_parameters(server: StdioServer) -> StdioServerParameters:
    return StdioServerParameters(
        command=server.command,
        args=list(server.args),
        env=child_environment(server.env),
        cwd=server.cwd,
    )


@asynccontextmanager
async def open_transport(
    name: str,
    server: StdioServer | RemoteServer,
    ended: anyio.Event,
    stderr_tail: StderrTail | None = None,
    auth: httpx2.Auth | None = None,
) -> AsyncIterator[TransportStreams]:
    """Connect to one upstream; `ended` is set when the connection drops, and a stdio
    child's last stderr lines are kept in `stderr_tail` (complete once this has exited).
    `auth` signs a remote upstream's requests (`router.upstream.auth`).

    Enter and exit it in one task: it owns a task group and, for stdio, a child process.
    """
    if isinstance(server, StdioServer):
        # stderr outlives the child: the SDK stops the child before the pipe is drained.
        async with (
            stderr_to_log(name, stderr_tail) as errlog,
            stdio_client(stdio_parameters(server), errlog=errlog) as (read, write),
        ):
            yield _WatchedReadStream(read, ended), write
    elif server.effective_transport == "sse":
        async with sse_client(server.url, headers=dict(server.headers), auth=auth) as (
            read,
            write,
        ):
            yield _WatchedReadStream(read, ended), write
    else:
        async with (
            httpx2.AsyncClient(
                headers=dict(server.headers), timeout=HTTP_TIMEOUT, auth=auth
            ) as http,
            streamable_http_client(server.url, http_client=http) as (read, write),
        ):
            yield _WatchedReadStream(read, ended), write


def transport_name(server: StdioServer | RemoteServer) -> str:
    return "stdio" if isinstance(server, StdioServer) else server.effective_transport
