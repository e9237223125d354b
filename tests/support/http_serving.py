"""The router's HTTP front for the tests, and the remote upstreams it is tested against.

`http_front` runs the FastAPI app on uvicorn inside the test's event loop, on a socket bound
before uvicorn starts (no port race, and connections queue until it serves). The test gets
the front's `RouterState`, so it waits on the router's own events instead of polling.
`start_everything` runs npm server-everything in its `streamableHttp` or `sse` mode.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
import jsonschema
import uvicorn
from anyio.streams.text import TextReceiveStream
from fastapi import FastAPI
from mcp import Client
from mcp.client.sse import sse_client
from mcp.client.streamable_http import streamable_http_client

from router.config import RouterConfig, parse_config
from router.embedding.base import Embedder
from router.server.http.app import create_app
from router.server.http.auth.security import SecurityPolicy
from router.server.http.front import FrontState, ReadyLatch
from router.server.lifecycle.state import RouterState
from router.upstream import UpstreamState
from router.upstream.connection.transport import HTTP_TIMEOUT
from tests.support.ports import free_port
from tests.support.serving import initialize_request
from tests.upstream.test_upstream_pool import Installed

SCRIPTS = Path(__file__).resolve().parents[1] / "upstreams"
MODE_PATHS = {"streamableHttp": "/mcp", "sse": "/sse"}
MCP_ACCEPT = {"Accept": "application/json, text/event-stream"}


@dataclass(frozen=True)
class Front:
    """A running HTTP front: its base URL and the state its handlers read."""

    url: str
    state: RouterState

    @property
    def mcp(self) -> str:
        return f"{self.url}/mcp"

    @property
    def sse(self) -> str:
        return f"{self.url}/sse"


def config(servers: dict[str, dict[str, Any]], **router: Any) -> RouterConfig:
    return parse_config({"mcpServers": servers, "router": router})


def counting_upstream(log: Path) -> dict[str, Any]:
    """A stdio upstream that logs every request it receives to `log` (tests/upstreams)."""
    return {"command": sys.executable, "args": [str(SCRIPTS / "counting.py"), str(log)]}


def _observed(app: FastAPI, seen: list[FrontState], started: anyio.Event) -> None:
    """Make the app's lifespan hand its state to the test once it has started."""
    original = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[Mapping[str, Any]]:
        async with original(app) as state:
            assert state is not None
            seen.append(state)  # type: ignore[arg-type]
            started.set()
            yield state

    app.router.lifespan_context = lifespan


@asynccontextmanager
async def http_front(
    cfg: RouterConfig,
    policy: SecurityPolicy | None = None,
    embedder: Embedder | None = None,
    *,
    read_config: Callable[[], RouterConfig] | None = None,
) -> AsyncIterator[Front]:
    """The front on 127.0.0.1 (BM25 only unless given an `embedder`: ranking is not what
    most of these tests are about); `read_config` applies the config file while serving.
    A config without `cache_dir` gets a fresh one: what another front cached (a lazy
    upstream's listing, pins) must not change what this one serves."""
    with tempfile.TemporaryDirectory(prefix="front-cache-") as own:
        if cfg.router.cache_dir is None:
            router = cfg.router.model_copy(update={"cache_dir": Path(own)})
            cfg = cfg.model_copy(update={"router": router})
        async with _front(cfg, policy, embedder, read_config) as front:
            yield front


@asynccontextmanager
async def _front(
    cfg: RouterConfig,
    policy: SecurityPolicy | None,
    embedder: Embedder | None,
    read_config: Callable[[], RouterConfig] | None,
) -> AsyncIterator[Front]:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    port = sock.getsockname()[1]
    app = create_app(cfg, embedder, policy or SecurityPolicy(), read_config=read_config)
    seen: list[FrontState] = []
    started = anyio.Event()
    _observed(app, seen, started)
    server = uvicorn.Server(
        uvicorn.Config(
            app, log_config=None, access_log=False, ws="none", timeout_graceful_shutdown=2
        )
    )
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(server.serve, [sock])
            with anyio.fail_after(20):
                await started.wait()
            try:
                yield Front(f"http://127.0.0.1:{port}", seen[0]["router"])
            finally:
                server.should_exit = True
    finally:
        sock.close()


async def until_ready(state: RouterState) -> None:
    """Until `/healthz` would say ready: the model loaded, every upstream tried, the healthy
    ones indexed. Bound it with `anyio.fail_after`."""
    readiness = ReadyLatch()
    while not readiness.check(state):
        await state.changes.wait()  # upstream status, index swap or model load


async def until_indexed(state: RouterState) -> None:
    """Until every upstream is healthy and its tools are searchable (bound it)."""
    for upstream in state.pool.upstreams.values():
        await upstream.wait_for(UpstreamState.HEALTHY)
    while state.pending_upstreams():
        await state.changes.wait()


@asynccontextmanager
async def http_child(
    command: list[str], log: Path, env: Mapping[str, str] | None = None
) -> AsyncIterator[anyio.abc.Process]:
    """`command` (`mcp-router serve --http ...`) as a child process, its stderr to `log`;
    killed at the end if it is still running (`terminated` stops it as a test asserts)."""
    with log.open("wb") as stderr:
        process = await anyio.open_process(
            command, env=env, stdout=subprocess.DEVNULL, stderr=stderr
        )
    try:
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.aclose()


async def terminated(process: anyio.abc.Process) -> int:
    """SIGTERM, as a service manager stops it; its exit status, within 15 s."""
    process.send_signal(signal.SIGTERM)
    with anyio.fail_after(15):
        return await process.wait()


async def until_healthy(http: httpx2.AsyncClient, headers: dict[str, str]) -> None:
    """Until a child's `/healthz` (at `http`'s base URL) says 200. Bound it."""
    while True:  # a child process offers no event to wait on: poll readiness
        try:
            health = await http.get("/healthz", headers=headers)
        except httpx2.ConnectError:
            health = None
        if health is not None and health.status_code == 200:
            return
        await anyio.sleep(0.1)


async def start_everything(installed: Installed, mode: str, port: int) -> anyio.abc.Process:
    """npm server-everything over HTTP (`streamableHttp` at /mcp, `sse` at /sse) on `port`.
    The router's retries cover the moments before it listens."""
    command = installed.npm("server-everything", mode)
    return await anyio.open_process(
        [command["command"], *command["args"]],
        env={**os.environ, "PORT": str(port)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


@asynccontextmanager
async def listening_upstream(
    name: str, transport: str, port: int, *more: str
) -> AsyncIterator[None]:
    """tests/upstreams/`name`.py serving `transport` on `port` (with `more` arguments), from
    the moment it listens; terminated after."""
    process = await anyio.open_process(
        [sys.executable, str(SCRIPTS / f"{name}.py"), transport, str(port), *more],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        async with anyio.create_task_group() as group:
            listening = anyio.Event()
            group.start_soon(_drain_until_listening, process, listening)
            with anyio.fail_after(20):
                await listening.wait()
            yield
            group.cancel_scope.cancel()
    finally:
        process.terminate()
        with anyio.fail_after(10), anyio.CancelScope(shield=True):
            await process.aclose()


async def _drain_until_listening(process: anyio.abc.Process, listening: anyio.Event) -> None:
    """Read the upstream's log: uvicorn says when it listens; the rest is drained so that
    the pipe never fills."""
    assert process.stderr is not None
    async for line in TextReceiveStream(process.stderr):
        if "Uvicorn running on" in line:
            listening.set()


async def stop(process: anyio.abc.Process) -> None:
    process.terminate()
    with anyio.fail_after(10), anyio.CancelScope(shield=True):
        await process.aclose()


@asynccontextmanager
async def remote_everything(installed: Installed, mode: str) -> AsyncIterator[str]:
    """server-everything in `mode` on a free port; yields its MCP URL."""
    port = free_port()
    process = await start_everything(installed, mode, port)
    try:
        yield f"http://127.0.0.1:{port}{MODE_PATHS[mode]}"
    finally:
        await stop(process)


@asynccontextmanager
async def streamable_client(
    url: str, headers: dict[str, str] | None = None, **options: Any
) -> AsyncIterator[Client]:
    """The SDK client over streamable HTTP, with extra headers (a bearer token)."""
    async with httpx2.AsyncClient(headers=headers, timeout=HTTP_TIMEOUT) as http:
        client = Client(streamable_http_client(url, http_client=http), **options)
        async with client:
            yield client


def sse_sdk_client(url: str, headers: dict[str, str] | None = None) -> Client:
    """The SDK client over legacy HTTP+SSE (which has no `server/discover`)."""
    return Client(sse_client(url, headers=headers), mode="legacy")


def sse_data(body: str) -> list[dict[str, Any]]:
    """The JSON messages of an SSE body (`data:` lines; a priming event's empty data is none)."""
    return [
        json.loads(line[5:])
        for line in body.splitlines()
        if line.startswith("data:") and line[5:].strip()
    ]


def sse_events(text: str) -> list[dict[str, str]]:
    """The SSE events of a response body, each as its fields (`id`, `data`, ...)."""
    found = []
    for block in text.replace("\r\n", "\n").strip().split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.split("\n"):
            name, _, value = line.partition(":")
            fields[name] = value.strip()
        found.append(fields)
    return found


def validate(openapi: dict[str, Any], schema: str, instance: Any) -> None:
    """`instance` conforms to the OpenAPI document's component `schema`."""
    document = {"$ref": f"#/components/schemas/{schema}", "components": openapi["components"]}
    jsonschema.Draft202012Validator(document).validate(instance)


async def open_session(
    http: httpx2.AsyncClient,
    url: str,
    headers: dict[str, str] | None = None,
    *,
    protocol: str = "2025-06-18",
    client: str = "raw-http-test",
    version_header: bool = False,
) -> dict[str, str]:
    """A raw streamable-HTTP session (handshake done); the headers that address it, with
    `mcp-protocol-version` among them (from the `initialized` notification on) when
    `version_header`."""
    base = {**MCP_ACCEPT, **(headers or {})}
    answer = await http.post(url, json=initialize_request(client, protocol), headers=base)
    assert answer.status_code == 200, answer.text
    session = {**base, "mcp-session-id": answer.headers["mcp-session-id"]}
    if version_header:
        session["mcp-protocol-version"] = protocol
    done = await http.post(
        url, json={"jsonrpc": "2.0", "method": "notifications/initialized"}, headers=session
    )
    assert done.status_code == 202, done.text
    return session
